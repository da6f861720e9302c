"""What an ``IdempotentStateMachine`` decides, once, before it makes anything: its constructor's options
checked, every problem at once, and resolved (``WorkflowSettings``: the definition read, the defaults the
workflow sets for a run of its type, the options of its guards as it hands them down). ``state_machine``
builds from the settings and reads no option itself.

It may import the options models, the guard's config and checks, the document reader and the checks of
``guard_states=`` (``guarded_state``); it makes no construct: of the workflow it reads its path and stack,
and warns on it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aws_cdk import Annotations, Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from ._readers import asl
from ._synth import options, read_once
from ._synth.definition import DefinitionLocation
from ._synth.names import generated_name
from .errors import Problems
from .guard import DEFAULT_LEASE, STATE_NAMES, body_problems
from .guard.config import EXECUTION_POLICIES, EXPRESS_MAX_DURATION, GuardConfig, bounded_max_wait
from .guard.guard_options import OPTIONS, WORKFLOW
from .guarded_state import GuardedState
from .guarded_state import problems as guard_states_problems
from .key import IdempotencyKey
from .policies import FailurePolicy
from .workflow_options import WORKFLOW_MODEL

# The guard's construct id, and so the prefix of its state names ("Idempotency.Acquire").
GUARD_ID = "Idempotency"


@dataclass(frozen=True, kw_only=True)
class WorkflowSettings:
    """The options of one ``IdempotentStateMachine``, checked and resolved: all its construct builds from."""

    chain: sfn.IChainable | None
    """The workflow as a chain of states (``definition``), or ``None`` for a document."""
    document: asl.Document | None
    """The workflow as a document (``definition_body``), read and checked, or ``None`` for a chain."""
    guard_states: Mapping[str, IdempotencyKey | GuardedState]
    """The document's states guarded by name, checked against it; empty for none."""
    guard: Mapping[str, Any]
    """The options of the guard of the whole, as ``IdempotencyGuard`` takes them (but ``body``): the user's,
    with the namespace, lease, wait and owner state machine as the workflow sets them."""
    guard_state_defaults: Mapping[str, Any]
    """The options of the guards of ``guard_states`` that their ``GuardedState`` leaves out, as the workflow
    sets them: an Express workflow's lease, the bounded wait, the owner state machine of a Standard one."""
    express: bool
    state_machine_type: sfn.StateMachineType
    state_machine_name: str | None
    """Given, or generated for a Standard workflow (``name_generated``); ``None`` where CloudFormation names it."""
    name_generated: bool
    timeout: Duration | None
    """Given, or the document's ``TimeoutSeconds``."""
    query_language: sfn.QueryLanguage | None
    """Given, or the document's own top-level ``QueryLanguage``."""
    logs: sfn.LogOptions | None
    """Given; ``None`` for the workflow's own log group."""
    tracing_enabled: bool
    role: iam.IRole | None
    """Given; ``None`` for the role the workflow creates."""
    definition_location: DefinitionLocation


def resolve(workflow: Construct, given: Mapping[str, Any]) -> WorkflowSettings:
    """The options of ``workflow``, its constructor's keyword arguments by name (``given``), checked and
    resolved; raises ``IdempotencyConfigurationError`` with every problem of them and of its guards'."""
    # One pass: the type of every parameter (by name), then the values of those of the right type, the
    # workflow's and its guards' (the guard of the whole and those of guard_states) together.
    found = options.Validation(workflow, WORKFLOW_MODEL, WORKFLOW, given)
    # From here an option of the wrong type reads as left out: no check reads it, and the pass raises.
    state_machine_type, timeout, lease, max_wait, query_language, guard_states, namespace = (
        found.values[name]
        for name in ("state_machine_type", "timeout", "lease", "max_wait", "query_language", "guard_states", "namespace")
    )
    express = state_machine_type == sfn.StateMachineType.EXPRESS
    chain, document = None, None
    if found.typed("definition", "definition_body", "definition_substitutions"):
        chain, document = _definition(
            found, given.get("definition"), given.get("definition_body"), given.get("definition_substitutions"), query_language
        )
    if document is not None:
        if query_language is None and document.language == asl.JSONATA:
            query_language = sfn.QueryLanguage.JSONATA
        if timeout is None and document.timeout_seconds is not None:
            timeout = Duration.seconds(document.timeout_seconds)
    longest_run = timeout if timeout is not None else (EXPRESS_MAX_DURATION if express else None)
    if express:
        for name, value in (("timeout", timeout), ("lease", lease), ("max_wait", max_wait)):
            if value is not None and value.to_milliseconds() > EXPRESS_MAX_DURATION.to_milliseconds():
                found.add(
                    f"{name}: {value.to_human_string()} is longer than the 5 minutes an Express "
                    f"execution may run; shorten it or use StateMachineType.STANDARD"
                )
    if max_wait is not None and longest_run is not None and max_wait.to_milliseconds() >= longest_run.to_milliseconds():
        found.add(
            f"max_wait: {max_wait.to_human_string()} leaves a waiting duplicate no time before its own "
            f"execution ends ({longest_run.to_human_string()}); make it shorter than that"
        )
    if max_wait is None and longest_run is not None:
        max_wait = bounded_max_wait(longest_run)
    policy = found.values.get("on_failure")
    if policy in EXECUTION_POLICIES and (express or document is not None):
        what = {
            FailurePolicy.RELEASE_WHEN_EXECUTION_FAILS: "frees the key from a failed execution's status event, which "
            "only a Standard workflow's executions send",
            FailurePolicy.KEEP_FOR_REDRIVE: "keeps the key for a redrive, which only a Standard execution can have",
        }[policy]
        found.add(
            f"on_failure: FailurePolicy.{policy.name} {what}, and runs the chain bare, which a document is not; "
            + ("use StateMachineType.STANDARD or FailurePolicy.RELEASE" if express else "use FailurePolicy.RELEASE")
        )
    if guard_states and document is None and chain is not None:
        found.add(
            "guard_states: only the states of a document (definition_body=DefinitionBody.from_file(...)) are "
            "guarded by name; in a chain, wrap the step in IdempotencyGuard(..., body=step)"
        )
    # The guards' options as the workflow sets them: an Express workflow's lease, the bounded max_wait.
    express_lease = EXPRESS_MAX_DURATION if express else None
    lease = lease or express_lease
    # The guards' default namespace is this construct's path.
    namespace = namespace if namespace is not None else read_once.path(workflow)
    # What a guard of guard_states leaves out takes the workflow's (its owner state machine, once named, below).
    state_defaults = {"lease": express_lease, "max_wait": max_wait}
    if document is not None and guard_states:
        found.extend(
            guard_states_problems(
                document,
                guard_states,
                table=found.values["table"],
                namespace=namespace,
                defaults=state_defaults,
            )
        )
    # The guard of the whole, as it will be made (state_machine).
    shared = {name: found.values[name] for name in OPTIONS}
    config = GuardConfig(
        read_once.path(workflow),
        GUARD_ID,
        {**shared, "lease": lease, "max_wait": max_wait, "once_per_execution": True, "whole_workflow": True},
    )
    found.extend(config.problems(found.wrong))
    if chain is not None:
        found.extend(body_problems(config, chain))
    found.raise_if_any()
    state_machine_name = given.get("state_machine_name")
    generated = state_machine_name is None and not express
    if generated:
        # A name known at synth time lets the role be limited to this state machine's own
        # executions for the owner check (a generated name would make the role depend on the
        # state machine, which depends on the role).
        state_machine_name = generated_name(workflow)
    _warn_of_a_short_lease(workflow, express, lease or DEFAULT_LEASE, longest_run)
    owner = {"owner_state_machine_name": None if express else state_machine_name}
    return WorkflowSettings(
        chain=chain,
        document=document,
        guard_states=guard_states or {},
        guard={**shared, "namespace": namespace, "lease": lease, "max_wait": max_wait, **owner},
        guard_state_defaults={**state_defaults, **owner},
        express=express,
        state_machine_type=state_machine_type or sfn.StateMachineType.STANDARD,
        state_machine_name=state_machine_name,
        name_generated=generated,
        timeout=timeout,
        query_language=query_language,
        logs=given.get("logs"),
        tracing_enabled=given.get("tracing_enabled") is not False,
        role=given.get("role"),
        definition_location=given.get("definition_location") or DefinitionLocation.TEMPLATE,
    )


def _warn_of_a_short_lease(workflow: Construct, express: bool, lease: Duration, longest_run: Duration | None) -> None:
    # Standard workflows check a lapsed holder's execution before taking over; Express cannot.
    if express and longest_run is not None and lease.to_milliseconds() < longest_run.to_milliseconds():
        Annotations.of(workflow).add_warning_v2(
            "idempotent-constructs:lease-shorter-than-run",
            f"lease ({lease.to_human_string()}) is shorter than the longest run "
            f"({longest_run.to_human_string()}): a duplicate may take over an Express holder "
            "that is still running",
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
