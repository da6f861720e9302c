"""Where a guard's owner token tells its runs apart, checked at synth from the definitions the CDK writes
(``state_names.check_app`` runs ``problems`` over each; an ``IdempotentStateMachine``'s as it is created).

A write that makes a run the holder writes the token of its state entry (``record_tasks.ENTRY_OWNER``:
the execution, the state, the time it was entered), the same in each of its retries. Runs of one guard
in one execution enter its states one after another (a loop), or in states of their own (a Parallel's
branches hold states of different names), but for the iterations of an inline Map, which may enter the
same state in the same millisecond: there a guard draws a token of its own first (``in_inline_map``). A
guard in an inline Map's item processor whose writes use the entry's token is refused, with the fix. A
Distributed Map's iterations are child executions, each with an execution of its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from . import record_tasks


def problems(definition: dict[str, Any]) -> list[str]:
    """A sentence for each inline Map whose item processor holds writes of a guard that write their entry's
    token, naming them."""
    writes: dict[str, list[str]] = {}
    for name, state, in_map in _states(definition, None):
        if in_map is not None and record_tasks.ENTRY_OWNER in str(state.get("Arguments", "")):
            writes.setdefault(in_map, []).append(name)
    return [
        f"the guard states {', '.join(map(repr, names))} run in the item processor of the inline Map {in_map!r}, "
        "whose iterations may enter a state in the same millisecond and so write the same owner token: pass "
        "in_inline_map=True to their IdempotencyGuard (or, for a guard of guard_states, to its GuardedState), which "
        "then draws a token of its own in a Begin state"
        for in_map, names in writes.items()
    ]


def inline_map_of(definition: dict[str, Any], name: str) -> str | None:
    """The inline Map whose item processor holds the state ``name`` of ``definition``, if one does."""
    return next((in_map for found, _, in_map in _states(definition, None) if found == name), None)


def _states(scope: dict[str, Any], in_map: str | None) -> Iterator[tuple[str, dict[str, Any], str | None]]:
    """``(name, state, the inline Map whose item processor holds it)`` of every state of ``scope``, at any
    depth; a Distributed Map's item processor is a child execution's, so in no inline Map of this one."""
    for name, state in (scope.get("States") or {}).items():
        if not isinstance(state, dict):
            continue
        yield name, state, in_map
        for branch in state.get("Branches") or []:
            yield from _states(branch, in_map)
        processor = state.get("ItemProcessor") or state.get("Iterator")
        if isinstance(processor, dict):
            distributed = (processor.get("ProcessorConfig") or {}).get("Mode") == "DISTRIBUTED"
            yield from _states(processor, None if distributed else name)
