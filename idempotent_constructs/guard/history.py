"""Where a guarded inline Map meets Step Functions' history limit, estimated at synth from the definition.

"The maximum number of events in an execution history is 25,000. If the execution history reaches this quota, the
execution fails" (Step Functions developer guide, "Step Functions service quotas", Standard workflows); Express
workflows keep no such history. An inline Map's iterations write their events into the execution's one history;
a Distributed Map's are child executions, each with a history of its own ("Using Map state in Distributed mode").

An item's first run through a guard enters its iteration (``MapIterationStarted``, ``MapIterationSucceeded``),
the guard's ``Begin`` (a Pass: entered and exited), ``Acquire`` and ``Complete`` (each a Task: entered,
scheduled, started, succeeded and exited), its ``Body`` where the chain runs in a Parallel (entered, started,
succeeded, exited), and the body's states, each once. So a guard around one Task writes 19 events an item, as a
user measured on AWS (500 rows); a replay writes about as many. ``notes`` says, for each guarded inline Map of a
Standard workflow, about how many events an item writes and past how many items an execution fails, and the way
past it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .protocol import VARIABLE_PREFIX

HISTORY_LIMIT = 25_000
# The events a state writes entered once, by type: "...StateEntered" and "...StateExited", and a Task's
# "TaskScheduled", "TaskStarted" and "TaskSucceeded", a Parallel's or a Map's "...StateStarted" and
# "...StateSucceeded" (the HistoryEvent types of the Step Functions API reference); a Fail state is entered only.
_EVENTS = {"Task": 5, "Parallel": 4, "Map": 4, "Fail": 1}
_ENTERED_AND_EXITED = 2
ITERATION = 2  # MapIterationStarted, MapIterationSucceeded
EXECUTION = 2  # ExecutionStarted, ExecutionSucceeded
# The states of a guard an item's first run enters, by the name after its prefix.
_FIRST_RUN = ("Begin", "Acquire", "Body", "Complete")


def notes(definition: dict[str, Any], express: bool) -> list[str]:
    """What is said of each inline Map of ``definition`` whose item processor holds a guard (none for Express)."""
    if express:
        return []
    found = []
    for name, state in _maps(definition):
        processor = state.get("ItemProcessor") or state.get("Iterator") or {}
        guards = _guards(processor)
        if not guards:
            continue
        per_item = ITERATION + _events(processor, guards)
        outside = EXECUTION + _events(definition, _guards(definition), leave_out=name)  # the Map's own among them
        most = max(0, (HISTORY_LIMIT - outside) // per_item)
        items = state.get("Items")
        if isinstance(items, list) and len(items) <= most:
            continue  # its items are written out, and fit
        found.append(
            f"the inline Map {name!r} runs the guard{'s' if len(guards) > 1 else ''} {', '.join(map(repr, sorted(guards)))} "
            f"for each item: about {per_item} history events an item, so an execution of more than about {most:,} "
            f"items reaches Step Functions' {HISTORY_LIMIT:,}-event history limit and fails. Where its items come from "
            "the input, make it a Distributed Map (sfn.DistributedMap): each child execution has a history of its own "
            "(docs/guides/per-step.md)"
        )
    return found


def _maps(scope: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every inline Map of ``scope`` at any depth, but in a Distributed Map's child executions."""
    for name, state in (scope.get("States") or {}).items():
        if not isinstance(state, dict):
            continue
        for branch in state.get("Branches") or []:
            yield from _maps(branch)
        processor = state.get("ItemProcessor") or state.get("Iterator")
        if isinstance(processor, dict) and (processor.get("ProcessorConfig") or {}).get("Mode") != "DISTRIBUTED":
            yield name, state
            yield from _maps(processor)


def _guards(scope: dict[str, Any]) -> set[str]:
    """The state-name prefixes of the guards of ``scope`` (its ``Acquire`` assigns a guard's variable)."""
    return {
        name.removesuffix("Acquire")
        for name, state in _all(scope)
        if name.endswith("Acquire") and any(key.startswith(VARIABLE_PREFIX) for key in (state.get("Assign") or {}))
    }


def _all(scope: dict[str, Any], leave_out: str | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every state of ``scope`` at any depth (but the Map ``leave_out``'s item processor)."""
    for name, state in (scope.get("States") or {}).items():
        if not isinstance(state, dict):
            continue
        yield name, state
        for branch in state.get("Branches") or []:
            yield from _all(branch, leave_out)
        processor = state.get("ItemProcessor") or state.get("Iterator")
        if isinstance(processor, dict) and name != leave_out:
            yield from _all(processor, leave_out)


def _events(scope: dict[str, Any], guards: set[str], leave_out: str | None = None) -> int:
    """The events of entering once each state of ``scope`` a first run enters: every state but a guard's,
    and of a guard's, those of ``_FIRST_RUN``."""
    total = 0
    for name, state in _all(scope, leave_out):
        prefix = next((prefix for prefix in guards if name.startswith(prefix)), None)
        if prefix is not None and name.removeprefix(prefix) not in _FIRST_RUN:
            continue
        total += _EVENTS.get(str(state.get("Type")), _ENTERED_AND_EXITED)
    return total
