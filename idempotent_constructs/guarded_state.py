"""``GuardedState`` and what ``guard_states=`` takes: the option's kind, the names of a guard's
records and states for one state (``state_namespace``, ``state_prefix``), and every problem of guarding
the states a mapping names in a document (``problems``), found before anything is made.

It may import the guard's options model and ``GuardConfig`` (a ``GuardedState``'s values are checked as its
guard would check them) and the document reader; not the guard construct, nor the splice (``guard_states``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from aws_cdk import Duration

from ._readers import asl
from ._synth import option_kinds
from .guard.config import GuardConfig
from .guard.guard_options import GUARD_MODEL, GUARDED_STATE
from .guard.protocol import STATE_NAMES
from .key import IdempotencyKey, namespace_problems
from .lambda_src import schema
from .payload import IdempotencyPayload
from .policies import CompletedPolicy, FailurePolicy, InFlightPolicy, ResultStorage

if TYPE_CHECKING:
    from aws_cdk import aws_dynamodb as dynamodb

    from .table import IdempotencyTable


@GUARD_MODEL.documented(GUARDED_STATE)
@dataclass(frozen=True, kw_only=True)
class GuardedState:
    """How one state of a document is guarded (``guard_states={"ChargePayment": GuardedState(...)}``):
    the options ``IdempotencyGuard`` takes, each with the guard's default. An ``IdempotencyKey`` alone
    stands for ``GuardedState(key=...)``.

    :options: each field's documentation is written here from guard.guard_options.GUARD_MODEL
    """

    key: IdempotencyKey | None = None
    payload: IdempotencyPayload | None = None
    namespace: str | None = None
    expires_after: Duration | None = None
    lease: Duration | None = None
    poll_interval: Duration | None = None
    max_wait: Duration | None = None
    on_in_flight: InFlightPolicy | None = None
    on_failure: FailurePolicy | None = None
    on_completed: CompletedPolicy | None = None
    replay_marker: str | None = None
    cache_errors: Sequence[str] | None = None
    result_storage: ResultStorage | None = None
    state_name_prefix: str | None = None
    in_inline_map: bool | None = None


def _accepts(value: Any) -> bool:
    return isinstance(value, Mapping) and all(
        isinstance(name, str) and isinstance(guarded, (IdempotencyKey, GuardedState)) for name, guarded in value.items()
    )


# What the option takes, as construct options are checked (options.Validation).
GUARD_STATES = option_kinds.Kind(
    "mapping of state names to an IdempotencyKey or a GuardedState",
    _accepts,
    lambda value: '{"ChargePayment": IdempotencyKey.from_paths("$.order_id")}, or GuardedState(key=..., ...) as a value',
)
# The kinds of state that do work a guard can protect: the others call no service.
GUARDABLE = ("Task", "Parallel", "Map")
_NOT_IN_NAMESPACES = re.compile(r"[^A-Za-z0-9_.:/=+@-]")


def guarded_states(guard_states: Mapping[str, IdempotencyKey | GuardedState]) -> dict[str, GuardedState]:
    """Each state's ``GuardedState``: an ``IdempotencyKey`` alone stands for ``GuardedState(key=...)``."""
    return {name: value if isinstance(value, GuardedState) else GuardedState(key=value) for name, value in guard_states.items()}


def problems(
    document: asl.Document,
    guard_states: Mapping[str, IdempotencyKey | GuardedState],
    *,
    table: IdempotencyTable | dynamodb.ITable,
    namespace: str,
    defaults: Mapping[str, Any] | None = None,
) -> list[str]:
    """What is wrong with guarding the states ``guard_states`` names in ``document`` (the arguments of
    ``guard_states.guard_document``): each ``GuardedState``'s types and values, as its guard would find them, and
    the states named: every problem at once, so that a workflow reports them with its own."""
    found: list[str] = []
    states = {name: (where, state) for name, where, state in asl.all_states(document.definition, "")}
    generated: dict[str, str] = {}  # a state name a guard generates -> the guarded state
    namespaces: dict[str, str] = {}
    kinds = GUARD_MODEL.kinds(GUARDED_STATE)
    for name, guarded in guarded_states(guard_states).items():
        values = {field.name: getattr(guarded, field.name) for field in fields(guarded)}
        wrong = option_kinds.wrong_types(kinds, values)
        config = GuardConfig(
            namespace,
            name,
            {
                "table": table,
                **(defaults or {}),
                **{option: value for option, value in values.items() if value is not None and option not in wrong},
                "namespace": None if "namespace" in wrong else state_namespace(guarded, namespace, name),
                "state_name_prefix": None if "state_name_prefix" in wrong else state_prefix(guarded, name),
            },
        )
        own = [*wrong.values(), *config.problems(wrong)]
        found += [f"guard_states[{name!r}].{problem}" for problem in own]
        if name not in states:
            listed = ", ".join(repr(state) for state in list(states)[:20]) + (", ..." if len(states) > 20 else "")
            found.append(f"guard_states: {name!r} names no state of {document.source}; its states: {listed}")
            continue
        where, state = states[name]
        kind = state.get("Type")
        if kind not in GUARDABLE:
            found.append(
                f"guard_states: {name!r} ({where}) is a {kind} state, which calls no service: a guard has nothing to "
                "protect there; guard the Task, Parallel or Map state that does the work"
            )
            continue
        if "Assign" in state:
            found.append(
                f"guard_states: {name!r} ({where}) has Assign, which would assign its variables inside the guard's "
                "Body branch, where no state after it sees them; move the Assign to a Pass state after it in the "
                f"document (the Pass reads {name}'s output), or leave {name!r} out of guard_states"
            )
        for index, catch in enumerate(objects(state.get("Catch"))):
            own = [error for error in catch.get("ErrorEquals", []) if str(error).startswith("States.") and error != "States.ALL"]
            if own:
                found.append(
                    f"guard_states: {name!r} ({where}/Catch[{index}]) catches {', '.join(own)}: inside its guard, a "
                    f"failure with one of Step Functions' own errors (States.*) ends as {schema.BODY_FAILED} (its "
                    "Cause holds the original error), which this Catch would not match; catch States.ALL, or "
                    f"{schema.BODY_FAILED} and the state's own error names"
                )
        if isinstance(guarded.namespace, str) or guarded.namespace is None:
            chosen = state_namespace(guarded, namespace, name)  # a namespace's own problems are its guard's, above
            if not namespace_problems(chosen) and chosen in namespaces:
                found.append(
                    f"guard_states: {name!r} and {namespaces[chosen]!r} would keep their records under one namespace, "
                    f"{chosen!r}; pass GuardedState(namespace=...) to one"
                )
            namespaces.setdefault(chosen, name)
        prefix = state_prefix(guarded, name)
        names = [f"{prefix}{generated_name}" for generated_name in (*STATE_NAMES, "Guarded", "Raise")]
        for generated_name in names:
            if generated_name in states:
                found.append(
                    f"guard_states: the state {generated_name!r} of {document.source} has the name of a state the guard "
                    f"of {name!r} generates; pass GuardedState(state_name_prefix=...) (now {prefix!r})"
                )
            elif generated_name in generated:
                found.append(
                    f"guard_states: the guards of {generated[generated_name]!r} and {name!r} would both generate a "
                    f"state {generated_name!r}; pass GuardedState(state_name_prefix=...) to one"
                )
            generated.setdefault(generated_name, name)
    return found


def state_namespace(guarded: GuardedState, namespace: str, name: str) -> str:
    """The namespace of the records of the guard of the state ``name``: its own, or ``{namespace}/{name}``."""
    return guarded.namespace if guarded.namespace is not None else f"{namespace}/{_NOT_IN_NAMESPACES.sub('_', name)}"


def state_prefix(guarded: GuardedState, name: str) -> str:
    """How the names of the states of the guard of the state ``name`` start: its own prefix, or ``{name}.``."""
    return guarded.state_name_prefix if guarded.state_name_prefix is not None else f"{name}."


def objects(value: Any) -> list[dict[str, Any]]:
    """The objects of a list of the document (a state's ``Catch``, ``Choices``, ``Branches``); none of anything else."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []
