"""``IdempotentStateMachine``: a state machine whose whole execution is idempotent."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aws_cdk import Acknowledgment, Annotations, Duration, Validations
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs_module
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from ._readers import asl
from ._synth import options, source_advice, state_names
from ._synth.definition import DefinitionLocation, asset_body, inline_body, render, shared_body
from ._synth.documents import DocumentState
from ._synth.functions import KeyFunction, ReleaseFunction, acknowledge_own_executions, release_function
from ._synth.inline_role import InlineRole, state_machines_of_this_account
from ._synth.names import generated_name, name_prefix, vended_log_group_name
from ._synth.outcome_metrics import states_entered
from ._synth.quotas import WAIT_SHARE
from .errors import IdempotencyConfigurationError, Problems
from .guard import DEFAULT_LEASE, STATE_NAMES, IdempotencyGuard, acquire
from .guard.config import DEFAULT_MAX_WAIT, OPTIONS
from .guard_states import GUARD_STATES, GuardedState, guard_document
from .key import IdempotencyKey, namespace_problems
from .payload import IdempotencyPayload
from .policies import CompletedPolicy, FailurePolicy, InFlightPolicy, ResultStorage
from .table import IdempotencyTable

EXPRESS_MAX_DURATION = Duration.minutes(5)
# The guard's construct id, and so the prefix of its state names ("Idempotency.Acquire").
GUARD_ID = "Idempotency"
# What each option takes: the guard's shared options and the state machine's own.
STATE_MACHINE_OPTIONS: dict[str, options.Kind] = {
    **OPTIONS,
    "definition": options.CHAINABLE,
    "definition_body": options.DEFINITION_BODY,
    "definition_substitutions": options.SUBSTITUTIONS,
    "guard_states": GUARD_STATES,
    "state_machine_type": options.STATE_MACHINE_TYPE,
    "state_machine_name": options.TEXT,
    "timeout": options.DURATION,
    "logs": options.LOG_OPTIONS,
    "tracing_enabled": options.BOOL,
    "role": options.ROLE,
    "query_language": options.QUERY_LANGUAGE,
    "definition_location": options.DEFINITION_LOCATION,
}
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


def _definition(
    problems: Problems,
    definition: sfn.IChainable | None,
    definition_body: sfn.DefinitionBody | Mapping[str, Any] | None,
    substitutions: Mapping[str, str] | None,
    query_language: sfn.QueryLanguage | None,
) -> tuple[sfn.IChainable | None, asl.Document | None]:
    """``(the chain, None)`` or ``(None, the document)`` the workflow runs, adding to ``problems``
    what is wrong with them: exactly one of ``definition`` and ``definition_body``, a document that
    Step Functions would refuse or whose state names clash with the guard's."""
    if (definition is None) == (definition_body is None):
        problems.add(
            "definition, definition_body: give exactly one: definition=first.next(second) for a chain of states, or "
            'definition_body=sfn.DefinitionBody.from_file("statemachine.asl.json") for an Amazon States Language document'
            + (", not both" if definition is not None else "")
        )
        return None, None
    if definition_body is None or isinstance(definition_body, sfn.ChainDefinitionBody):
        if substitutions is not None:
            problems.add(
                "definition_substitutions: only a document (DefinitionBody.from_file or from_string) has ${...} "
                "placeholders; drop definition_substitutions"
            )
        return (definition if definition_body is None else definition_body.chainable), None
    document, unreadable = asl.read(definition_body, substitutions)
    problems.extend(unreadable)
    if document is None:
        return None, None
    problems.extend(
        asl.problems(
            document,
            reserved={f"{GUARD_ID}.{state}" for state in STATE_NAMES},
            clash=f"has the name of a state the guard generates (those starting with {GUARD_ID + '.'!r}); rename it in the document",
        )
    )
    if query_language == sfn.QueryLanguage.JSONATA and document.language != asl.JSONATA:
        problems.add(
            f"query_language: QueryLanguage.JSONATA, but {document.source} is written in JSONPath (its top level "
            "declares no QueryLanguage JSONata), whose states a JSONata state machine refuses; leave query_language out"
        )
    return None, document


def bounded_max_wait(longest_run: Duration) -> Duration:
    """The default ``max_wait`` of an execution that may run at most ``longest_run`` (an Express one, or
    one with a timeout): 5 minutes, or less, so that the waiting schedule fits the run with margin."""
    share = int(longest_run.to_seconds() * WAIT_SHARE)
    return Duration.seconds(max(1, min(share, int(DEFAULT_MAX_WAIT.to_seconds()))))


class IdempotentStateMachine(Construct):
    """A Step Functions state machine that runs its definition once per idempotency key.

    The first execution with a key runs the definition and stores its output; every duplicate gets
    that output back without running it, waits for it while it is running (or fails fast), and runs
    it again after a failure (or gets the failure back). Logging (all events, without payloads) and
    X-Ray tracing are on by default.
    """

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
        :param table: where the records live.
        :param definition: the workflow to make idempotent, any chain of states; its ``ExtendLease``
            states (at its top level, in loops, catch handlers, Parallel branches and inline Maps) push
            the lease forward. Give it or ``definition_body``.
        :param definition_body: the workflow as ``sfn.StateMachine`` takes it:
            ``sfn.DefinitionBody.from_file(path)`` (an Amazon States Language file, JSON or YAML),
            ``.from_string(text)``, ``.from_chainable(chain)`` (the same as ``definition=chain``), or
            the document as a dict. A document is read at synth time and made idempotent as it is
            (see ``AslFragment``); its top-level ``QueryLanguage`` and ``TimeoutSeconds`` are the
            defaults of ``query_language`` and ``timeout``. The role gets no permission for what the
            document calls, as with ``sfn.StateMachine``: grant them with ``add_to_role_policy`` or
            ``role``. Give it or ``definition``.
        :param definition_substitutions: values of the document's ``${Name}`` placeholders (tokens,
            such as a function's ARN, too), as ``sfn.StateMachine`` takes them. Default: none; a
            placeholder without a value fails synth with its name.
        :param guard_states: states of the document (``definition_body``) that also run each inside an
            ``IdempotencyGuard`` of its own, by name: ``{"ChargePayment": IdempotencyKey.from_paths("$.order_id")}``,
            or a ``GuardedState`` for the guard's other options. A Task, Parallel or Map state, at the top
            level, in a Parallel branch or a Map item processor; its Retry, Catch, Next and End work as the
            file says, and a run after a later step failed replays it. Each guard's records are under
            ``{namespace}/{state name}``, unless it names its namespace. Default: none.
        :param key: how the key is derived. Default: ``IdempotencyKey.whole_input()``.
        :param payload: the part of the input a duplicate must repeat, or else fail with
            ``Idempotency.PayloadMismatch``: select the message, not an envelope AWS changes on
            redelivery (``IdempotencyPayload.from_paths("$[0].body")`` for SQS through a pipe), or
            ``IdempotencyPayload.none()``. Default: ``IdempotencyPayload.whole_input()``.
        :param namespace: prefix of this workflow's record ids. Default: the construct path
            (stable across deploys; differs between workflows and stacks).
        :param expires_after: how long a result is remembered. Default: 24 hours.
        :param lease: how long a holder is trusted before a duplicate may take over. Default: 15
            minutes (5 minutes, the longest an Express execution runs, for Express).
        :param poll_interval: first delay between polls of a waiting duplicate. Default: 1 second.
        :param max_wait: how long a duplicate waits, at most, before failing with ``Idempotency.InFlight``
            (its doubling delays stop short of it by less than one delay). Default: 5 minutes, or 80% of the longest run if that is shorter (4 minutes for Express),
            so that a waiting duplicate ends in ``Idempotency.InFlight``, not ``States.Timeout``.
        :param on_in_flight: ``WAIT`` or ``FAIL``. Default: ``InFlightPolicy.WAIT``.
        :param on_failure: ``RELEASE`` or ``CACHE``. Default: ``FailurePolicy.RELEASE``.
        :param on_completed: ``REPLAY`` or ``REJECT`` (``Idempotency.AlreadyCompleted``) a duplicate
            after success. Default: ``CompletedPolicy.REPLAY``.
        :param replay_marker: a top-level field, such as ``"$.idempotency"``, that marks a replayed
            output ``{"replayed": true, "record_id", "completed_at"}``. Default: none.
        :param cache_errors: with ``CACHE``, the error names to remember; other errors release the
            key. Default: every error is remembered.
        :param result_storage: how results are kept for replays. Default: ``ResultStorage.inline()``
            (JSON in the record, no Lambda call; results up to about 100 KiB); ``ResultStorage.large()``
            for results up to the 256 KiB payload limit.
        :param state_machine_type: Standard or Express. Default: ``StateMachineType.STANDARD``.
        :param state_machine_name: physical name. Default: ``{stack name}_{construct id}-{hash}``
            (Standard; known at synth time, so the role can be limited to this state machine's
            executions), generated by CloudFormation (Express).
        :param timeout: execution timeout. Default: the document's ``TimeoutSeconds`` if it has one,
            else none (Standard), 5 minutes (Express).
        :param logs: logging options. Default: a new log group (1 year retention), level ALL,
            without execution data, so no payload reaches the logs.
        :param tracing_enabled: X-Ray tracing. Default: ``True``.
        :param role: the execution role. Default: a new role with exactly the permissions used, in its
            inline policy (``InlineRole``; the CDK's role, with a policy of its own, for a definition with a
            Distributed Map).
        :param query_language: the state machine's query language, as ``sfn.StateMachine`` takes it
            (``QueryLanguage.JSONATA`` makes it the default of ``definition``'s states). The generated
            states are JSONata either way. Default: a document's own top-level ``QueryLanguage``, else
            ``QueryLanguage.JSONPATH``.
        :param definition_location: where the definition lives: ``DefinitionLocation.TEMPLATE`` (the
            protocol's text once per stack in its Mappings, this workflow's own parts as
            ``DefinitionSubstitutions``), ``INLINE`` (whole in ``DefinitionString``, as the CDK writes
            it), or ``ASSET`` (an S3 asset, its tokens as ``DefinitionSubstitutions``). Default: ``TEMPLATE``.
        """
        super().__init__(scope, construct_id)
        # The parameters, by name: each is checked against the kind it takes.
        options.check(self, STATE_MACHINE_OPTIONS, locals(), required=("table",))
        express = state_machine_type == sfn.StateMachineType.EXPRESS
        problems = Problems(self)
        chain, document = _definition(problems, definition, definition_body, definition_substitutions, query_language)
        if document is not None:
            if query_language is None and document.language == asl.JSONATA:
                query_language = sfn.QueryLanguage.JSONATA
            if timeout is None and document.timeout_seconds is not None:
                timeout = Duration.seconds(document.timeout_seconds)
        longest_run = timeout if timeout is not None else (EXPRESS_MAX_DURATION if express else None)
        if express:
            for name, value in (("timeout", timeout), ("lease", lease), ("max_wait", max_wait)):
                if value is not None and value.to_milliseconds() > EXPRESS_MAX_DURATION.to_milliseconds():
                    problems.add(
                        f"{name}: {value.to_human_string()} is longer than the 5 minutes an Express "
                        f"execution may run; shorten it or use StateMachineType.STANDARD"
                    )
        if max_wait is not None and longest_run is not None and max_wait.to_milliseconds() >= longest_run.to_milliseconds():
            problems.add(
                f"max_wait: {max_wait.to_human_string()} leaves a waiting duplicate no time before its own "
                f"execution ends ({longest_run.to_human_string()}); make it shorter than that"
            )
        if namespace is None:
            problems.extend(
                f"{problem} (this is the default, the construct path: pass namespace=...)"
                for problem in namespace_problems(self.node.path)
            )
        if guard_states and document is None and (definition is not None or definition_body is not None):
            problems.add(
                "guard_states: only the states of a document (definition_body=DefinitionBody.from_file(...)) are "
                "guarded by name; in a chain, wrap the step in IdempotencyGuard(..., body=step)"
            )
        problems.raise_if_any()
        if max_wait is None and longest_run is not None:
            max_wait = bounded_max_wait(longest_run)
        generated = state_machine_name is None and not express
        if generated:
            # A name known at synth time lets the role be limited to this state machine's own
            # executions for the owner check (a generated name would make the role depend on the
            # state machine, which depends on the role).
            state_machine_name = generated_name(self)
        # The guards of guard_states, by state name.
        self.guards: dict[str, IdempotencyGuard] = {}
        if document is not None:
            statements: list[iam.PolicyStatement] = []
            if guard_states:
                guarded = guard_document(
                    self,
                    document,
                    guard_states,
                    table=table,
                    namespace=namespace if namespace is not None else self.node.path,
                    defaults={
                        "lease": EXPRESS_MAX_DURATION if express else None,
                        "max_wait": max_wait,
                        "owner_state_machine_name": None if express else state_machine_name,
                    },
                )
                document, statements, self.guards = guarded.document, guarded.statements, guarded.guards
            # Read and checked above; the guard's Body holds the document itself (finish.body), so this
            # state's own Parallel never enters the graph.
            chain = DocumentState(self, "Definition", document=document, statements=statements)
        assert chain is not None
        effective_lease = lease or (EXPRESS_MAX_DURATION if express else DEFAULT_LEASE)
        # Standard workflows check a lapsed holder's execution before taking over; Express cannot.
        if express and longest_run is not None and effective_lease.to_milliseconds() < longest_run.to_milliseconds():
            Annotations.of(self).add_warning_v2(
                "idempotent-constructs:lease-shorter-than-run",
                f"lease ({effective_lease.to_human_string()}) is shorter than the longest run "
                f"({longest_run.to_human_string()}): a duplicate may take over an Express holder "
                "that is still running",
            )

        self.guard = IdempotencyGuard(
            self,
            GUARD_ID,
            table=table,
            body=chain,
            key=key,
            payload=payload,
            namespace=namespace if namespace is not None else self.node.path,
            expires_after=expires_after,
            lease=lease or (EXPRESS_MAX_DURATION if express else None),
            poll_interval=poll_interval,
            max_wait=max_wait,
            on_in_flight=on_in_flight,
            on_failure=on_failure,
            on_completed=on_completed,
            replay_marker=replay_marker,
            cache_errors=cache_errors,
            result_storage=result_storage,
            owner_state_machine_name=None if express else state_machine_name,
            once_per_execution=True,
        )
        if logs is None:
            self.log_group: logs_module.ILogGroup | None = logs_module.LogGroup(
                self, "Logs", log_group_name=vended_log_group_name(self), retention=logs_module.RetentionDays.ONE_YEAR
            )
            logs = sfn.LogOptions(destination=self.log_group, level=sfn.LogLevel.ALL, include_execution_data=False)
        else:
            self.log_group = None
        # The graph is made here, as sfn.StateMachine makes it for a chain, so that its definition can be
        # placed (definition.py); its states' permissions are granted below, as the CDK grants them.
        graph = sfn.StateGraph(self.guard.start_state, "State Machine definition")
        graph.timeout = timeout
        rendered = render(graph, query_language)
        if named_twice := state_names.checked_at_creation(self, rendered):
            raise IdempotencyConfigurationError(self.node.path, [f"definition: {problem}" for problem in named_twice])
        substitutions: dict[str, str] | None = None
        if definition_location is DefinitionLocation.ASSET:
            body, substitutions = asset_body(rendered)
        elif definition_location is DefinitionLocation.INLINE:
            body = inline_body(self, rendered)
        else:
            body, substitutions = shared_body(self, rendered, self._own_parts(rendered))
        self.state_machine = sfn.StateMachine(
            self,
            "StateMachine",
            definition_body=body,
            definition_substitutions=substitutions or None,
            state_machine_type=state_machine_type or sfn.StateMachineType.STANDARD,
            state_machine_name=state_machine_name,
            timeout=timeout,
            logs=logs,
            tracing_enabled=tracing_enabled is not False,
            role=role
            or (InlineRole(self, "Role", assumed_by=state_machines_of_this_account()) if InlineRole.fits(rendered) else None),
            query_language=query_language,
        )
        # As sfn.StateMachine does for a chain: a Distributed Map's permissions on this state machine.
        graph.bind(self.state_machine)
        for statement in graph.policy_statements:
            self.state_machine.add_to_role_policy(statement)
        self.guard.rendered_by = self.node.path
        if query_language == sfn.QueryLanguage.JSONATA:
            _check_jsonata_definition(self, rendered)

        if role is None:
            # cdk-nag (AwsSolutionsChecks): the one wildcard of the role we create is inherent to the
            # logging and tracing that are on by default.
            Validations.of(self).acknowledge(
                Acknowledgment(
                    id="AwsSolutions::AwsSolutions-IAM5[Resource::*]",
                    reason="X-Ray (xray:PutTraceSegments, xray:PutTelemetryRecords, xray:GetSamplingRules, "
                    "xray:GetSamplingTargets) and CloudWatch Logs delivery (logs:CreateLogDelivery and friends), "
                    "used by tracing and execution logging, support only Resource '*'.",
                )
            )
        if not express:
            assert state_machine_name is not None  # given, or generated above
            self.release_function: ReleaseFunction | None = release_function(self)
            prefix = name_prefix(self)
            self.release_function.watch(
                state_machine_name,
                self.guard.records_in_its_graph(),  # nested guards' included
                name_prefix=prefix if generated and prefix and state_machine_name.startswith(prefix) else None,
            )
            acknowledge_own_executions(
                self,
                state_machine_name,
                "states:DescribeExecution on this state machine's own executions (any execution name): "
                "the owner check before a takeover reads whether the holder still runs.",
            )
        else:
            self.release_function = None
        # At synth: what starts this workflow (a pipe, a rule) is usually made after it.
        source_advice.advise(self)

    def _own_parts(self, rendered: dict[str, Any]) -> dict[str, Any]:
        """The parts of the definition that are this workflow's own (its body, its key's and namespace's
        texts); the rest is the same for every workflow of the same options (definition.shared_body)."""
        own: dict[str, Any] = {f"Idempotency{name}": text for name, text in acquire.key_texts(self.guard).items()}
        body = rendered["States"].get(self.guard.state_name("Body"), {})
        if "Branches" in body:
            own["IdempotencyBody"] = body["Branches"]
        return own

    # --- metrics: outcomes counted from the execution log (outcome_metrics) -------------------------
    def metric_executed(self, **props: Any) -> cloudwatch.IMetric:
        """Runs of the definition (first runs, runs after a release, takeovers)."""
        return self._states_entered("Executed", ["Body"], props)

    def metric_replayed(self, **props: Any) -> cloudwatch.IMetric:
        """Duplicates answered with the stored result."""
        return self._states_entered("Replayed", ["Replay", "Restore"], props)

    def metric_waited(self, **props: Any) -> cloudwatch.IMetric:
        """Duplicates that arrived while another execution held the key and waited for it."""
        return self._states_entered("Waited", ["Backoff"], props)

    def metric_taken_over(self, **props: Any) -> cloudwatch.IMetric:
        """Keys taken over from a holder whose lease lapsed (and whose execution ended, for Standard)."""
        return self._states_entered("TakenOver", ["Takeover"], props)

    def metric_mismatched(self, **props: Any) -> cloudwatch.IMetric:
        """Requests that reused a key with another payload (``Idempotency.PayloadMismatch``)."""
        return self._states_entered("Mismatched", ["PayloadMismatch"], props)

    def metric_key_missing(self, **props: Any) -> cloudwatch.IMetric:
        """Inputs without their key (``Idempotency.KeyMissing``)."""
        return self._states_entered("KeyMissing", ["KeyMissing"], props)

    def metric_rejected(self, **props: Any) -> cloudwatch.IMetric:
        """Duplicates after success failed with ``Idempotency.AlreadyCompleted`` (``on_completed=REJECT``)."""
        return self._states_entered("Rejected", ["Rejected"], props)

    def metric_lease_extended(self, **props: Any) -> cloudwatch.IMetric:
        """Leases pushed forward by the definition's ``ExtendLease`` states."""
        if not self.guard.extend_states:
            raise IdempotencyConfigurationError(
                self.node.path, ["metric_lease_extended: this workflow's definition has no ExtendLease state"]
            )
        return self._states_entered("LeaseExtended", self.guard.extend_states, props)

    def _states_entered(self, label: str, states: list[str], props: dict[str, Any]) -> cloudwatch.IMetric:
        if self.log_group is None:
            raise IdempotencyConfigurationError(
                self.node.path,
                [
                    f"metric_{label}: metrics count states in the execution log, which this workflow "
                    "sends elsewhere (logs=...); leave logs at its default to use them"
                ],
            )
        return states_entered(self, self.guard, self.log_group, label, states, props)

    @property
    def key_function(self) -> KeyFunction:
        """The stack's shared key function: a JMESPath key calls it on every run, any other key for an
        input beyond the bounds of the native key."""
        return self.guard.key_function

    def grant_start_execution(self, grantee: iam.IGrantable) -> iam.Grant:
        """Allow ``grantee`` to start executions."""
        return self.state_machine.grant_start_execution(grantee)
