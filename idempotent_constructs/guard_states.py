"""``guard_states``: states of an Amazon States Language document guarded by name, the file unchanged (B21).

    IdempotentStateMachine(self, "Booking", table=table, key=IdempotencyKey.from_paths("$.trip_id"),
        definition_body=sfn.DefinitionBody.from_file("statemachine/booking.asl.json"),
        guard_states={"ProcessPayment": IdempotencyKey.from_paths("$.trip_id")})

Each named state ``X`` (a Task, Parallel or Map, at the top level, in a Parallel branch or in a Map item
processor) runs inside an ``IdempotencyGuard`` of its own: the guard is rendered alone (its own graph) and
its states take ``X``'s place in ``X``'s own scope of the document. Every transition to ``X`` there goes
to the guard's first state; the guard's last states go where ``X`` went (its ``Next``, or ``End``); the
guard's ``Body`` branch is ``X`` itself, with its name, its fields and its ``Retry`` (a retry runs while
the key is held). A Catch inside the branch cannot reach the states outside it, so ``X`` with a Catch
runs in a Parallel ``X.Guarded`` that carries it: its input is ``X``'s input, its output ``X``'s output.
The guard's own errors (``Idempotency.InFlight``, ``PayloadMismatch``, ...: the request, not the step)
pass that Catch by (``X.Raise`` raises them again), so that a duplicate that waited too long does not
run the compensation of a step another execution is running.

Refused at synth, with the fix: a name that is no state of the document, a state with nothing to
protect (Choice, Pass, Wait, Succeed, Fail), a state with ``Assign`` (it would assign inside the
Body branch, where no later state sees the variable), and a Catch naming one of Step Functions' own
errors other than ``States.ALL`` (a guarded step's ``States.*`` error arrives as
``Idempotency.BodyFailed``, which such a Catch would not match).

Here lives the splice (``guard_document``): it makes the guards (``IdempotencyGuard``) under the workflow or
fragment that owns the document and rewrites the document's states. What the option takes and what is
refused are ``guarded_state``'s, which imports nothing of this module.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from ._readers import asl
from .errors import Problems
from .guarded_state import GuardedState, guarded_states, objects, problems, state_namespace, state_prefix
from .key import IdempotencyKey
from .lambda_src import schema

if TYPE_CHECKING:
    from .guard import IdempotencyGuard
    from .table import IdempotencyTable

# The guard's own errors, about the request (its key, its payload, another execution holding it), not
# the step: they pass a guarded state's Catch by, as if it had none.
PROTOCOL_ERRORS = [
    schema.KEY_MISSING,
    schema.PAYLOAD_MISSING,
    schema.PAYLOAD_MISMATCH,
    schema.IN_FLIGHT,
    schema.ALREADY_COMPLETED,
    schema.REPLAY_MARKER_UNSUPPORTED,
    schema.LEASE_LOST,
    schema.RESULT_MISSING,
    schema.INPUT_TOO_LARGE,
    schema.RESULT_TOO_LARGE,
]
# A Parallel's output unwrapped, per query language: its result is the one-item list of its branch's output.
_UNWRAP = {asl.JSONPATH: {"OutputPath": "$[0]"}, asl.JSONATA: {"Output": "{% $states.result[0] %}"}}
_TRANSITIONS = ("Next", "Default")


@dataclass(frozen=True)
class GuardedDocument:
    """A document with its guarded states spliced in: what runs, the guards by state name, and the
    policy statements of the guards' states (to register into the graph the document is bound to)."""

    document: asl.Document
    guards: dict[str, IdempotencyGuard]
    statements: list[iam.PolicyStatement]

    def seen_from(self, state: sfn.State) -> None:
        """Where a guard is that is not told so is seen from where ``state``, which runs the document, is."""
        for guard in self.guards.values():
            if guard.config.placement.known is None:
                guard.config.placement.task = state


def guard_document(
    owner: Construct,
    document: asl.Document,
    guard_states: Mapping[str, IdempotencyKey | GuardedState],
    *,
    table: IdempotencyTable | dynamodb.ITable,
    namespace: str,
    defaults: Mapping[str, Any] | None = None,
    placed: bool = False,
) -> GuardedDocument:
    """``document`` with each state named in ``guard_states`` inside a guard of its own (made under
    ``owner``), its records in ``table`` under ``{namespace}/{state name}`` unless it names its own
    namespace; ``defaults`` are the guards' options its ``GuardedState`` leaves out (the lease of an
    Express workflow, the owner state machine of a Standard one). Every problem at once, under ``owner``.
    A state in an inline Map of the document has its guard told so; ``placed``: the document is placed by its
    user (an ``AslFragment``), maybe in an inline Map of theirs, which the others' guards then see at synth
    from the document's state (``GuardedDocument.seen_from``)."""
    wanted = guarded_states(guard_states)
    found = Problems(owner)
    found.extend(problems(document, guard_states, table=table, namespace=namespace, defaults=defaults))
    found.raise_if_any()
    from .guard import IdempotencyGuard, placement

    definition = copy.deepcopy(document.definition)
    guards: dict[str, IdempotencyGuard] = {}
    statements: list[iam.PolicyStatement] = []
    holder = Construct(owner, "GuardStates")
    # The innermost first: a guarded Parallel or Map then holds its guarded states already spliced.
    for name in [name for name in reversed(document.state_names()) if name in wanted]:
        located = _scope_of(definition, name, document.language)
        assert located is not None  # checked above
        scope, scope_language = located
        guarded = wanted[name]
        state = scope["States"][name]
        language = str(state.get("QueryLanguage", scope_language))
        own_scope = Construct(holder, name.replace("/", "|"))
        step = {field: value for field, value in state.items() if field not in ("Next", "End", "Catch")}
        values = {field.name: getattr(guarded, field.name) for field in fields(guarded)}
        guard = IdempotencyGuard(
            own_scope,
            "Guard",
            table=table,
            # What the guard checks of its body (a replay marker's object output, ...) is the state's
            # own JSON; its branch is replaced by the state as the file has it, nulls kept, below.
            body=sfn.CustomState(own_scope, "Step", state_json=asl.with_json_nulls(step)),
            **{
                **(defaults or {}),
                **{field: value for field, value in values.items() if value is not None},
                "namespace": state_namespace(guarded, namespace, name),
                "state_name_prefix": state_prefix(guarded, name),
                "in_inline_map": _told(guarded.in_inline_map, placement.inline_map_of(definition, name) is not None, placed),
            },
        )
        guards[name] = guard
        graph = sfn.StateGraph(guard.start_state, f"the guard of {name}")
        rendered = dict(graph.to_graph_json())
        statements.extend(graph.policy_statements)
        states: dict[str, Any] = dict(rendered["States"])
        body = states[guard.state_name("Body")]
        body["Branches"] = [{"StartAt": name, "States": {name: {**step, "End": True}}}]
        declared = {"QueryLanguage": language} if language != scope_language else {}
        body.update(declared)
        entry = rendered["StartAt"]
        if "Catch" in state:
            entry = guard.state_name("Guarded")
        # Where the state went, where the guard now goes (a state that went to itself goes to its guard).
        following = {"Next": entry if state["Next"] == name else state["Next"]} if "Next" in state else {"End": True}
        if "Catch" in state:
            raised = guard.state_name("Raise")
            catches = [{**catch, "Next": entry} if catch.get("Next") == name else catch for catch in state["Catch"]]
            spliced = {
                entry: {
                    "Type": "Parallel",
                    **declared,
                    "Comment": f"{name} once per idempotency key, its Catch as the document has it",
                    "Branches": [{"StartAt": rendered["StartAt"], "States": states}],
                    **_UNWRAP[language],
                    "Catch": [{"ErrorEquals": PROTOCOL_ERRORS, "Next": raised}, *catches],
                    **following,
                },
                raised: {
                    "Type": "Fail",
                    "QueryLanguage": asl.JSONATA,
                    "Comment": f"The guard of {name} failed (not {name}): its error passes {name}'s Catch by",
                    "Error": "{% $states.input.Error %}",
                    "Cause": "{% $exists($states.input.Cause) ? $states.input.Cause : '' %}",
                },
            }
        else:
            spliced = states
            for guard_state in states.values():
                if guard_state.get("End") is True and "Next" in following:
                    del guard_state["End"]
                    guard_state["Next"] = following["Next"]
        _replace(scope, name, spliced, entry)
    return GuardedDocument(asl.Document(definition, document.source), guards, statements)


def _told(told: bool | None, in_its_map: bool, placed: bool) -> bool | None:
    """What a state's guard is told of its place: in an inline Map, where it is in one of the document's (or its
    ``GuardedState`` says so); else not, or, where the document's user places it (maybe in an inline Map of
    theirs) and its ``GuardedState`` says nothing, nothing: that is seen at synth."""
    if told or in_its_map:
        return True
    return None if placed and told is None else False


def _replace(scope: dict[str, Any], name: str, spliced: dict[str, Any], entry: str) -> None:
    """In ``scope``, the state ``name`` replaced by the states ``spliced`` (at its place), and every
    transition to it sent to ``entry``."""
    old = scope["States"]
    scope["States"] = {}
    for other, state in old.items():
        if other == name:
            scope["States"].update(spliced)
            continue
        scope["States"][other] = state
        for field in _TRANSITIONS:
            if state.get(field) == name:
                state[field] = entry
        for rule in objects(state.get("Choices")) + objects(state.get("Catch")):
            if rule.get("Next") == name:
                rule["Next"] = entry
    if scope.get("StartAt") == name:
        scope["StartAt"] = entry


def _scope_of(scope: dict[str, Any], name: str, language: str) -> tuple[dict[str, Any], str] | None:
    """The scope (the document, a branch, an item processor) whose own states hold ``name``, and its
    query language."""
    states = scope.get("States")
    if not isinstance(states, dict):
        return None
    if name in states:
        return scope, language
    for state in states.values():
        own = str(state.get("QueryLanguage", language))
        inner = [branch for branch in objects(state.get("Branches"))]
        inner += [state[field] for field in ("ItemProcessor", "Iterator") if isinstance(state.get(field), dict)]
        for nested in inner:
            if (found := _scope_of(nested, name, own)) is not None:
                return found
    return None
