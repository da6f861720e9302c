"""The guard in each configuration that changes its protocol, synthesized as a user's app would be, and
its definition read back from the template: what the explorer runs is what the library deploys.

Each ``Configuration`` holds a rendered definition (``testing.state_machine_definitions``, placeholders and
all), the names the explorer needs to tell what a state is for (the body's states, the guard's prefix),
and what the options decide outside the definition (Standard or Express, the owner check, the lease).
The body is always the same side effect: a ``LambdaInvoke`` of a function the explorer plays
(``services.EFFECT``), after an ``ExtendLease`` where the configuration extends its lease.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aws_cdk import App, Duration, Size, Stack
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from aws_cdk.assertions import Template

from idempotent_constructs import (
    CompletedPolicy,
    ExtendLease,
    FailurePolicy,
    IdempotencyGuard,
    IdempotencyKey,
    IdempotencyTable,
    IdempotentStateMachine,
    InFlightPolicy,
    ResultStorage,
)
from idempotent_constructs.guard.protocol import STATE_NAMES
from idempotent_constructs.testing import state_machine_definitions

# The state machine every configuration deploys, and so the name in its executions' ARNs.
MACHINE = "Explored"
# The effect function's construct id: its logical id (and so its ARN in the definition) starts with it.
EFFECT_ID = "Effect"
# Short leases, so that a few ticks of the explorer's clock (1 s) lapse them; a short wait (one poll).
LEASE = Duration.seconds(2)
WAITING: dict[str, Any] = {"poll_interval": Duration.seconds(1), "max_wait": Duration.seconds(3)}
KEY = IdempotencyKey.from_paths("$.id")


def _options(table: IdempotencyTable) -> dict[str, Any]:
    """What every configuration's guard is given: the key, its namespace, the short lease and wait."""
    return {"table": table, "key": KEY, "namespace": "Orders", "lease": LEASE, **WAITING}


@dataclass(frozen=True)
class Configuration:
    """One synthesized guard: ``definition`` as the template holds it; ``body`` the names of the states of
    the run's own scope that are its body (entering one starts it); ``prefix`` the guard's state names'."""

    name: str
    summary: str
    definition: dict[str, Any]
    prefix: str
    body: frozenset[str]
    standard: bool
    owner_check: bool
    lease_ms: int
    functions: dict[str, str]  # a function's logical id -> what it is: "effect", "result" or "key"
    # Where each run starts: the definition's own states, or an inline Map's item processor (its name),
    # whose iterations are runs of one execution.
    item_processor: str | None = None
    runs_per_execution: int = 1
    # The side effect's result is padded to this many bytes of JSON: past the native limit, it is kept by
    # the result function (compressed), and replayed through Restore.
    padding: int = 0
    # FailurePolicy.RELEASE_WHEN_EXECUTION_FAILS: a failed run leaves its key to the release function.
    released_by_events: bool = False
    # FailurePolicy.KEEP_FOR_REDRIVE: a failed run keeps its key for a redrive; no release function watches.
    kept_for_redrive: bool = False


def _effect(stack: Stack) -> tasks.LambdaInvoke:
    function = lambda_.Function(
        stack,
        EFFECT_ID,
        runtime=lambda_.Runtime.PYTHON_3_13,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(event, context):\n    return event\n"),
    )
    return tasks.LambdaInvoke.jsonata(stack, "Charge", state_name="Charge", lambda_function=function)


def _chain(stack: Stack, extend: bool) -> sfn.IChainable:
    """The body: the side effect, alone, or after an ``ExtendLease`` where ``extend`` (a holder past its lease
    extends it, or is told it lost the key, before it acts)."""
    effect = _effect(stack)
    return ExtendLease(stack, "Extend").next(effect) if extend else effect


def _machine(stack: Stack, body: sfn.IChainable, *, express: bool = False) -> None:
    sfn.StateMachine(
        stack,
        "Machine",
        state_machine_name=MACHINE,
        state_machine_type=sfn.StateMachineType.EXPRESS if express else sfn.StateMachineType.STANDARD,
        query_language=sfn.QueryLanguage.JSONATA,
        definition_body=sfn.DefinitionBody.from_chainable(body),
    )


def _synthesized(
    name: str,
    summary: str,
    build: Callable[[Stack, IdempotencyTable], tuple[IdempotencyGuard, bool, bool]],
    **extra: Any,
) -> Configuration:
    """``build(stack, table)`` makes the workflow and returns ``(its guard, Standard?, owner check?)``."""
    stack = Stack(App(), "Explore")
    table = IdempotencyTable(stack, "Idempotency")
    guard, standard, owner_check = build(stack, table)
    template = dict(Template.from_stack(stack).to_json())
    (definition,) = state_machine_definitions(template).values()
    functions = {}
    for logical_id, resource in template["Resources"].items():
        if resource["Type"] != "AWS::Lambda::Function":
            continue
        path = resource.get("Metadata", {}).get("aws:cdk:path", logical_id)
        kind = (
            "effect" if logical_id.startswith(EFFECT_ID) else "result" if "Result" in path else "key" if "Key" in path else None
        )
        if kind is not None:
            functions[logical_id] = kind
    for logical_id, resource in template["Resources"].items():
        if resource["Type"] == "AWS::Lambda::Version":
            target = resource["Properties"]["FunctionName"]["Ref"]
            if target in functions:
                functions[logical_id] = functions[target]
    return Configuration(
        name=name,
        summary=summary,
        definition=definition,
        prefix=guard.config.prefix,
        body=_body(definition, guard, extra.get("item_processor")),
        standard=standard,
        owner_check=owner_check,
        lease_ms=int(guard.lease.to_milliseconds()),
        functions=functions,
        **extra,
    )


def _body(definition: dict[str, Any], guard: IdempotencyGuard, item_processor: str | None) -> frozenset[str]:
    """The states of the run's own scope that run the body: its first state and every state it leads to
    that is not one of the guard's own (an ``ExtendLease`` of the body and its Fail state are the body's)."""
    states = definition["States"]
    if item_processor is not None:
        states = states[item_processor]["ItemProcessor"]["States"]
    own = {guard.config.name(state) for state in STATE_NAMES} - {guard.config.name("Body")}
    found, todo = set(), [guard.state_name("Body")]
    while todo:
        name = todo.pop()
        if name in found or name in own:
            continue
        found.add(name)
        state = states[name]
        todo.extend(filter(None, [state.get("Next"), state.get("Default")]))
        todo.extend(catcher["Next"] for catcher in state.get("Catch", []))
        todo.extend(choice["Next"] for choice in state.get("Choices", []))
    return frozenset(found)


def whole_workflow(name: str, summary: str, *, express: bool = False, extend: bool = False, **options: Any) -> Configuration:
    def build(stack: Stack, table: IdempotencyTable) -> tuple[IdempotencyGuard, bool, bool]:
        workflow = IdempotentStateMachine(
            stack,
            "Orders",
            definition=_chain(stack, extend),
            state_machine_name=MACHINE,
            state_machine_type=sfn.StateMachineType.EXPRESS if express else None,
            query_language=sfn.QueryLanguage.JSONATA,
            **_options(table),
            **options,
        )
        return workflow.guard, not express, not express

    policy = options.get("on_failure")
    return _synthesized(
        name,
        summary,
        build,
        released_by_events=policy is FailurePolicy.RELEASE_WHEN_EXECUTION_FAILS,
        kept_for_redrive=policy is FailurePolicy.KEEP_FOR_REDRIVE,
    )


def own_guard(
    name: str,
    summary: str,
    *,
    extend: bool = True,
    express: bool = False,
    owner_check: bool = False,
    padding: int = 0,
    **options: Any,
) -> Configuration:
    def build(stack: Stack, table: IdempotencyTable) -> tuple[IdempotencyGuard, bool, bool]:
        guard = IdempotencyGuard(
            stack,
            "Once",
            body=_chain(stack, extend),
            owner_state_machine_name=MACHINE if owner_check else None,
            **_options(table),
            **options,
        )
        _machine(stack, guard, express=express)
        return guard, not express, owner_check

    kept_for_redrive = options.get("on_failure") is FailurePolicy.KEEP_FOR_REDRIVE
    return _synthesized(name, summary, build, padding=padding, kept_for_redrive=kept_for_redrive)


def in_inline_map(name: str, summary: str, *, owner_check: bool = False) -> Configuration:
    """A guard in an inline Map's item processor: its iterations are runs of one execution. A guard of your own
    there is seen in it at synth; ``guard_states`` tells its guards (``in_inline_map=True``), as here with the
    owner check."""

    def build(stack: Stack, table: IdempotencyTable) -> tuple[IdempotencyGuard, bool, bool]:
        guard = IdempotencyGuard(
            stack,
            "Line",
            body=_effect(stack),
            in_inline_map=True if owner_check else None,
            owner_state_machine_name=MACHINE if owner_check else None,
            **_options(table),
        )
        lines = sfn.Map.jsonata(stack, "Lines", state_name="Lines", items=sfn.ProvideItems.jsonata("{% $states.input.lines %}"))
        lines.item_processor(guard)
        _machine(stack, lines)
        return guard, True, owner_check

    return _synthesized(name, summary, build, item_processor="Lines", runs_per_execution=2)


def configurations() -> dict[str, Callable[[], Configuration]]:
    """Every configuration by name, each synthesized when called (synth takes a second or so)."""
    large = ResultStorage.large(inline_threshold=Size.kibibytes(1))
    found: dict[str, Callable[[], Configuration]] = {
        "workflow-standard": lambda: whole_workflow(
            "workflow-standard", "a whole Standard workflow: once per execution, the owner check, a bare body"
        ),
        "workflow-express": lambda: whole_workflow(
            "workflow-express", "a whole Express workflow: once per execution, no owner check, no status events", express=True
        ),
        "workflow-extended": lambda: whole_workflow(
            "workflow-extended", "a whole Standard workflow whose body extends its lease (the Body Parallel)", extend=True
        ),
        "workflow-released-when-failed": lambda: whole_workflow(
            "workflow-released-when-failed",
            "FailurePolicy.RELEASE_WHEN_EXECUTION_FAILS: the chain bare, released by the release function",
            extend=True,
            on_failure=FailurePolicy.RELEASE_WHEN_EXECUTION_FAILS,
        ),
        "workflow-kept-for-redrive": lambda: whole_workflow(
            "workflow-kept-for-redrive",
            "FailurePolicy.KEEP_FOR_REDRIVE: the chain bare, a failed execution keeping its key for its redrive",
            extend=True,
            on_failure=FailurePolicy.KEEP_FOR_REDRIVE,
        ),
        "guard": lambda: own_guard("guard", "a guard of your own without the owner check, extending its lease"),
        "guard-owner-check": lambda: own_guard(
            "guard-owner-check", "a guard of your own with the owner check, extending its lease", owner_check=True
        ),
        "guard-kept-for-redrive": lambda: own_guard(
            "guard-kept-for-redrive",
            "a guard of your own with the owner check, FailurePolicy.KEEP_FOR_REDRIVE: a failed run keeps its key",
            owner_check=True,
            on_failure=FailurePolicy.KEEP_FOR_REDRIVE,
        ),
        "guard-express": lambda: own_guard("guard-express", "a guard of your own in an Express workflow", express=True),
        "guard-bare": lambda: own_guard("guard-bare", "a guard of your own around one Task, run bare", extend=False),
        "guard-once-per-execution": lambda: own_guard(
            "guard-once-per-execution", "a guard of your own that runs once per execution", once_per_execution=True
        ),
        "guard-in-inline-map": lambda: in_inline_map(
            "guard-in-inline-map", "a guard in an inline Map: two iterations of one execution, and another execution"
        ),
        "guard-in-inline-map-owner-check": lambda: in_inline_map(
            "guard-in-inline-map-owner-check",
            "a guard in an inline Map with the owner check (guard_states in a Standard workflow's Map)",
            owner_check=True,
        ),
        "guard-cached": lambda: own_guard(
            "guard-cached", "FailurePolicy.CACHE: a failure is kept and replayed", on_failure=FailurePolicy.CACHE
        ),
        "guard-rejecting": lambda: own_guard(
            "guard-rejecting", "CompletedPolicy.REJECT: a duplicate after success fails", on_completed=CompletedPolicy.REJECT
        ),
        "guard-failing-fast": lambda: own_guard(
            "guard-failing-fast", "InFlightPolicy.FAIL: a duplicate during a run fails at once", on_in_flight=InFlightPolicy.FAIL
        ),
        "guard-large-result": lambda: own_guard(
            "guard-large-result",
            "a result kept by the result function (compressed in the record) and replayed through Restore",
            result_storage=large,
            padding=2048,
        ),
        "guard-expiring": lambda: own_guard(
            "guard-expiring",
            "records that expire a second after they finish, and TTL deletion",
            expires_after=Duration.seconds(1),
        ),
    }
    return found


def synthesize(name: str) -> Configuration:
    """The configuration ``name``, synthesized now (jsii needs the Node.js ``./dev`` puts first on PATH)."""
    os.environ.setdefault("JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION", "1")
    return configurations()[name]()
