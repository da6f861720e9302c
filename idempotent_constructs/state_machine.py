"""``IdempotentStateMachine``: a state machine whose whole execution is idempotent.

What it builds, from what ``workflow_settings`` decided of its options (``WorkflowSettings``): the guards of
``guard_states``, the guard of the whole around the definition, its log group, the state machine with its
definition placed (``_synth.definition``) and its role, the release function of a Standard one, and its
outcome metrics. Its options model is ``workflow_options``. It reads no option but through the settings.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from aws_cdk import Annotations, Duration
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs_module
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from ._readers import asl
from ._synth import nag, read_once, source_advice, state_names
from ._synth.definition import DefinitionLocation, Verbatim, asset_body, inline_body, render, shared_body
from ._synth.documents import DocumentState
from ._synth.functions import KeyFunction, ReleaseFunction, own_executions_rule, release_function
from ._synth.inline_role import InlineRole, state_machines_of_this_account
from ._synth.names import name_prefix, vended_log_group_name
from ._synth.outcome_metrics import CountedGuard, Outcomes
from .errors import IdempotencyConfigurationError
from .guard import IdempotencyGuard, acquire, history, json_graph, placement
from .guard.config import WHOLE_WORKFLOWS
from .guard.guard_options import WORKFLOW
from .guard_states import guard_document
from .guarded_state import GuardedState
from .key import IdempotencyKey
from .payload import IdempotencyPayload
from .policies import CompletedPolicy, FailurePolicy, InFlightPolicy, ResultStorage
from .table import IdempotencyTable
from .workflow_options import STATE_MACHINE_OPTIONS, WORKFLOW_MODEL
from .workflow_settings import GUARD_ID, WorkflowSettings, resolve

# The construct, and its options model (workflow_options), which the site's reference and the tests read from here.
__all__ = ["STATE_MACHINE_OPTIONS", "WORKFLOW_MODEL", "IdempotentStateMachine"]
# Fields only a JSONPath state has: a JSONata state machine refuses them.
JSONPATH_FIELDS = ("Parameters", "InputPath", "OutputPath", "ResultPath", "ResultSelector", "ItemsPath", "ItemSelector")


def _jsonpath_states(definition: dict[str, Any]) -> list[str]:
    return [
        name
        for name, _, state in asl.all_states(definition, "")
        if state.get("QueryLanguage", asl.JSONATA) == asl.JSONATA and any(field in state for field in JSONPATH_FIELDS)
    ]


def _check_jsonata_definition(construct: Construct, definition: dict[str, Any]) -> None:
    """CDK renders a state created without ``.jsonata()`` with its JSONPath fields even when the state
    machine is JSONata, and Step Functions then refuses the definition at deploy time: say so at synth."""
    offending = _jsonpath_states(definition)
    if offending:
        raise IdempotencyConfigurationError(
            construct.node.path,
            [
                f"definition: states {', '.join(sorted(offending))} use JSONPath fields (Parameters, InputPath, "
                "ResultPath, ...) in a JSONata state machine; create them with the .jsonata() factories "
                "(sfn.Pass.jsonata(...)), or leave query_language at QueryLanguage.JSONPATH"
            ],
        )


class IdempotentStateMachine(Outcomes, Construct):
    """A Step Functions state machine that runs its definition once per idempotency key.

    The first execution with a key runs the definition and stores its output; every duplicate gets
    that output back without running it, waits for it while it is running (or fails fast), and runs
    it again after a failure (or gets the failure back). Logging (all events, without payloads) and
    X-Ray tracing are on by default.
    """

    RECORD_ID_PATH = IdempotencyGuard.record_id_path(f"{GUARD_ID}.")
    """The path that reads, in the definition, the id of the record the run holds: the idempotency key to
    pass downstream (``IdempotencyGuard.record_id_path``)."""

    @WORKFLOW_MODEL.documented(WORKFLOW)
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        table: IdempotencyTable | dynamodb.ITable,
        definition: sfn.IChainable | None = None,
        definition_body: sfn.DefinitionBody | Mapping[str, Any] | None = None,
        definition_substitutions: Mapping[str, str] | None = None,
        guard_states: Mapping[str, IdempotencyKey | GuardedState] | None = None,
        key: IdempotencyKey | None = None,
        payload: IdempotencyPayload | None = None,
        namespace: str | None = None,
        expires_after: Duration | None = None,
        lease: Duration | None = None,
        poll_interval: Duration | None = None,
        max_wait: Duration | None = None,
        on_in_flight: InFlightPolicy | None = None,
        on_failure: FailurePolicy | None = None,
        on_completed: CompletedPolicy | None = None,
        replay_marker: str | None = None,
        cache_errors: Sequence[str] | None = None,
        result_storage: ResultStorage | None = None,
        state_machine_type: sfn.StateMachineType | None = None,
        state_machine_name: str | None = None,
        timeout: Duration | None = None,
        logs: sfn.LogOptions | None = None,
        tracing_enabled: bool | None = None,
        role: iam.IRole | None = None,
        query_language: sfn.QueryLanguage | None = None,
        definition_location: DefinitionLocation | None = None,
    ) -> None:
        """
        :options: each option's documentation is written here from workflow_options.WORKFLOW_MODEL
        """
        super().__init__(scope, construct_id)
        # What it decides, once: every option checked (all problems at once) and resolved (workflow_settings).
        settings = resolve(self, locals())
        # The guards of guard_states, by state name, then the guard of the whole around the definition.
        body, self.guards = self._body(settings)
        WHOLE_WORKFLOWS.add(self)
        try:
            self.guard = IdempotencyGuard(self, GUARD_ID, body=body, once_per_execution=True, **settings.guard)
        finally:
            WHOLE_WORKFLOWS.discard(self)  # its guard only: one made in it later is a guard of its own
        self.log_group, logs = self._logs(settings)
        self.state_machine = self._state_machine(settings, logs)
        self.release_function = self._release_function(settings)
        # At synth: what starts this workflow (a pipe, a rule) is usually made after it.
        source_advice.advise(self, self.state_machine, self.guard.config, settings.timeout)

    def _body(self, settings: WorkflowSettings) -> tuple[sfn.IChainable, dict[str, IdempotencyGuard]]:
        """What the guard of the whole runs: the chain, or the document (its guard_states guarded, their
        guards by state name) as one state."""
        if settings.document is None:
            assert settings.chain is not None  # exactly one of them (workflow_settings)
            return settings.chain, {}
        document = settings.document
        statements: list[iam.PolicyStatement] = []
        guards: dict[str, IdempotencyGuard] = {}
        if settings.guard_states:
            guarded = guard_document(
                self,
                document,
                settings.guard_states,
                table=settings.guard["table"],
                namespace=settings.guard["namespace"],
                defaults=settings.guard_state_defaults,
            )
            document, statements, guards = guarded.document, guarded.statements, guarded.guards
        # Read and checked already; the guard's Body holds the document itself (finish.body), so this
        # state's own Parallel never enters the graph.
        return DocumentState(self, "Definition", document=document, statements=statements), guards

    def _logs(self, settings: WorkflowSettings) -> tuple[logs_module.ILogGroup | None, sfn.LogOptions]:
        """The log group this workflow creates (``None`` for ``logs`` given), and the logging options."""
        if settings.logs is not None:
            return None, settings.logs
        log_group = logs_module.LogGroup(
            self, "Logs", log_group_name=vended_log_group_name(self), retention=logs_module.RetentionDays.ONE_YEAR
        )
        nag.acknowledge(log_group, nag.PAYLOAD_FREE_LOGS)
        return log_group, sfn.LogOptions(destination=log_group, level=sfn.LogLevel.ALL, include_execution_data=False)

    def _state_machine(self, settings: WorkflowSettings, logs: sfn.LogOptions) -> sfn.StateMachine:
        """The state machine, its definition rendered from the guard's graph and placed as
        ``definition_location`` says."""
        query_language = settings.query_language
        # The graph is made here, as sfn.StateMachine makes it for a chain, so that its definition can be
        # placed (definition.py); its states' permissions are granted below, as the CDK grants them.
        graph: Any
        if self.guard.states_in_python:  # its states made in Python, the body's Parallel in the CDK
            graph = json_graph.Graph(self.guard.start_state, "State Machine definition")
            graph.timeout = None if settings.timeout is None else read_once.seconds(settings.timeout)
        else:
            graph = sfn.StateGraph(self.guard.start_state, "State Machine definition")
            graph.timeout = settings.timeout
        rendered = render(graph, query_language)
        if refused := [*state_names.checked_at_creation(self, rendered), *placement.problems(rendered)]:
            raise IdempotencyConfigurationError(self.node.path, [f"definition: {problem}" for problem in refused])
        for note in history.notes(rendered, express=settings.state_machine_type == sfn.StateMachineType.EXPRESS):
            Annotations.of(self).add_info(note)
        substitutions: dict[str, str] | None = None
        if settings.definition_location is DefinitionLocation.ASSET:
            body, substitutions = asset_body(rendered)
        elif settings.definition_location is DefinitionLocation.INLINE:
            body = inline_body(self, rendered)
        else:
            body, substitutions = shared_body(self, rendered, self._own_parts(rendered))
        role = settings.role or (
            InlineRole(self, "Role", assumed_by=state_machines_of_this_account(settings.state_machine_name))
            if InlineRole.fits(rendered)
            else None
        )
        state_machine = sfn.StateMachine(
            self,
            "StateMachine",
            definition_body=body,
            definition_substitutions=substitutions or None,
            state_machine_type=settings.state_machine_type,
            state_machine_name=settings.state_machine_name,
            timeout=settings.timeout,
            logs=logs,
            tracing_enabled=settings.tracing_enabled,
            role=role,
            query_language=query_language,
        )
        # As sfn.StateMachine does for a chain: a Distributed Map's permissions on this state machine.
        graph.bind(state_machine)
        if settings.role is None:  # a role of yours is yours to acknowledge
            self._acknowledge(role or state_machine.role)
        if isinstance(role, InlineRole):
            role.document.add_statements(*graph.policy_statements)  # at once: what add_to_role_policy does one by one
        else:
            for statement in graph.policy_statements:
                state_machine.add_to_role_policy(statement)
        self.guard.rendered_by = read_once.path(self)
        if query_language == sfn.QueryLanguage.JSONATA:
            _check_jsonata_definition(self, rendered)
        return state_machine

    def _acknowledge(self, role: iam.IRole) -> None:
        """Acknowledge, on the role this workflow made for its state machine (its own, or the CDK's for a Distributed
        Map), cdk-nag's findings there that it draws by design, by rule, with the reason, in one call (each is one into
        jsii): its one wildcard (AwsSolutionsChecks), inherent to the logging and tracing on by default, the owner check's
        DescribeExecution on its own executions (a Standard one's), whose names cannot be known in advance, and its
        permissions inline (NIST 800-53 rev. 5). On the role, not on the workflow: a resource of yours made in the
        workflow's scope (an EventBridge target's role for this state machine) keeps its findings."""
        found = {
            f"{nag.SOLUTIONS}IAM5[Resource::*]": (
                "X-Ray (xray:PutTraceSegments, xray:PutTelemetryRecords, xray:GetSamplingRules, xray:GetSamplingTargets) "
                "and CloudWatch Logs delivery (logs:CreateLogDelivery and friends), used by tracing and execution "
                "logging, support only Resource '*'."
            ),
            **(nag.INLINE_ROLE if isinstance(role, InlineRole) else {}),
        }
        if (owner := self.guard.config.owner_state_machine_name) is not None:
            found[own_executions_rule(owner)] = (
                "states:DescribeExecution on this state machine's own executions (any execution name): "
                "the owner check before a takeover reads whether the holder still runs."
            )
        nag.acknowledge(role, found)

    def _release_function(self, settings: WorkflowSettings) -> ReleaseFunction | None:
        """A Standard workflow's release function, watching its executions (an Express one has none, nor one
        whose failed executions keep their keys for a redrive: ``FailurePolicy.KEEP_FOR_REDRIVE``)."""
        if settings.express:
            return None
        name = settings.state_machine_name
        assert name is not None  # given, or generated (workflow_settings)
        kept = self.guard.kept_for_redrive_in_its_graph()
        function = None
        if not self.guard.config.keeps_for_redrive:
            if kept:
                raise IdempotencyConfigurationError(
                    self.node.path,
                    [
                        f"on_failure: the guards of {', '.join(kept)} keep a failed execution's key for its redrive, which "
                        f"this workflow's FailurePolicy.{self.guard.config.on_failure.name} defeats (its guard releases "
                        "the key and ends in a Fail state that a redrive re-enters, or its release function frees every "
                        "key the execution holds): pass on_failure=FailurePolicy.KEEP_FOR_REDRIVE to the workflow as well"
                    ],
                )
            function = release_function(self)
            prefix = name_prefix(self)
            function.watch(
                name,
                self.guard.records_in_its_graph(),  # nested guards' included
                name_prefix=prefix if settings.name_generated and prefix and name.startswith(prefix) else None,
            )
        return function

    def _own_parts(self, rendered: dict[str, Any]) -> dict[str, Any]:
        """The parts of the definition that are this workflow's own (its body, its key's and namespace's
        texts); the rest is the same for every workflow of the same options (definition.shared_body)."""
        own: dict[str, Any] = {f"Idempotency{name}": text for name, text in acquire.key_texts(self.guard).items()}
        body = rendered["States"].get(self.guard.state_name("Body"), {})
        if self.guard.state_name("Body") != self.guard.config.name("Body"):
            # A body that runs bare: its states, and their names, in the definition's top level.
            chain = {name: state for name, state in rendered["States"].items() if not name.startswith(self.guard.prefix)}
            for index, (name, state) in enumerate(chain.items()):
                own[f"IdempotencyBody{index}"] = state
                own[f"IdempotencyBodyName{index}"] = Verbatim(json.dumps(name, ensure_ascii=False))
        elif "Branches" in body:
            own["IdempotencyBody"] = body["Branches"]
        return own

    # --- metrics: outcomes counted from the execution log (outcome_metrics.Outcomes) -----------------
    def _outcomes(self) -> tuple[Construct, CountedGuard, logs_module.ILogGroup]:
        if self.log_group is None:
            raise IdempotencyConfigurationError(
                self.node.path,
                [
                    "metrics count states in the execution log, which this workflow sends elsewhere (logs=...); leave logs at its default to use them"
                ],
            )
        return self, self.guard, self.log_group

    @property
    def key_function(self) -> KeyFunction:
        """The stack's shared key function: a JMESPath key calls it on every run, any other key for an
        input beyond the bounds of the native key."""
        return self.guard.key_function

    def grant_start_execution(self, grantee: iam.IGrantable) -> iam.Grant:
        """Allow ``grantee`` to start executions."""
        return self.state_machine.grant_start_execution(grantee)
