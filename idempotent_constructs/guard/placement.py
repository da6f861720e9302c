"""Where a guard's owner token tells its runs apart: seen as the template is synthesized (``Placement``), and
checked then from the definitions the CDK writes (``state_names.check_app`` runs ``problems`` over each; an
``IdempotentStateMachine``'s as it is created).

A write that makes a run the holder writes the token of its state entry (``record_tasks.ENTRY_OWNER``:
the execution, the state, the time it was entered), the same in each of its retries. Runs of one guard
in one execution enter its states one after another (a loop), or in states of their own (a Parallel's
branches hold states of different names), but for the iterations of an inline Map, which may enter the
same state in the same millisecond: there a guard draws a token of its own first. A guard is made before
it is placed, so where it is, in the item processor of one of the CDK's inline Maps (``sfn.Map``) or of a
Parallel branch in one, is seen when its definition is synthesized (``Placement``); ``in_inline_map=True``
says so at once. A guard in an inline Map's item processor whose writes use the entry's token all the same
(one that no ``sfn.Map`` holds: a Map of a ``CustomState``) is refused, with the fix. A Distributed Map's
iterations are child executions, each with an execution of its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from aws_cdk import aws_stepfunctions as sfn
from constructs import IConstruct

from .._synth import renders
from . import record_tasks
from .config import AtSynth
from .tasks import reference

if TYPE_CHECKING:
    from .config import GuardConfig


class Placement:
    """Whether the runs of the guard of ``config`` are the iterations of an inline Map: told (``in_inline_map``
    True or False), never (a guard that runs once per execution), or seen at synth (``known`` is None), from the
    graph ``task`` is bound into (``graph``), final once its state machine's definition is rendered
    (``rendered_at``: every state joins its graph before that): a write of the guard's, or the Parallel of the
    document that holds it (``guard_states`` of an ``AslFragment``)."""

    def __init__(self, config: GuardConfig) -> None:
        self.config = config
        self.known: bool | None = False if config.once_per_execution else config.in_inline_map
        self.task: Any = None
        self._seen: bool | None = None
        self._chosen: dict[tuple[str, str], str] = {}

    def __call__(self) -> bool:
        if self.known is not None:
            return self.known
        if self._seen is not None:
            return self._seen
        task = self.task
        if task is None or task.graph is None:
            return False
        seen = reference(task.graph) in _inline_graphs(task.node.root, task.rendered_at)
        if task.rendered_at is not None:
            self._seen = seen
        return seen

    def choose(self, in_map: str, otherwise: str) -> str:
        """``in_map`` where the guard's runs are an inline Map's iterations, else ``otherwise`` (JSONata texts): a
        token of the definition's, read at synth, where that is seen then."""
        if self.known is not None:
            return in_map if self.known else otherwise
        if (in_map, otherwise) not in self._chosen:

            def settle() -> str:
                return in_map if self() else otherwise

            chosen = self._chosen[in_map, otherwise] = AtSynth.text(self.config, settle)
            renders.SETTLED[chosen] = settle
        return self._chosen[in_map, otherwise]


# The graphs in inline Maps of the app last looked at: (when, by the clock of renders; the graphs' references).
_LOOKED: dict[str | None, tuple[int, frozenset[str | None]]] = {}


def _inline_graphs(root: IConstruct, rendered_at: int | None) -> frozenset[str | None]:
    """The references of the item processors of ``root``'s inline Maps and of the Parallel branches in them, at
    any depth; looked at again unless last looked at after the state that asks was rendered."""
    looked = _LOOKED.get(reference(root))
    if looked is not None and rendered_at is not None and looked[0] >= rendered_at:
        return looked[1]
    found: set[str | None] = set()
    for construct in root.node.find_all():
        if isinstance(construct, sfn.Map) and not _distributed(construct):
            for graph in (construct._processor, construct._iteration):
                if graph is not None:
                    _within(graph, found)
    _LOOKED.clear()
    _LOOKED[reference(root)] = (renders.now(), frozenset(found))
    return frozenset(found)


def _within(graph: sfn.StateGraph, found: set[str | None]) -> None:
    found.add(reference(graph))
    for state in sfn.State.find_reachable_states(graph.start_state, include_error_handlers=True):
        if isinstance(state, sfn.Parallel):
            for branch in state._branches:
                _within(branch, found)


def _distributed(map_state: sfn.Map) -> bool:
    config = map_state._processor_config
    return ((config.mode if config is not None else None) or map_state._processor_mode) == sfn.ProcessorMode.DISTRIBUTED


def problems(definition: dict[str, Any]) -> list[str]:
    """A sentence for each inline Map whose item processor holds writes of a guard that write their entry's
    token, naming them."""
    writes: dict[str, list[str]] = {}
    for name, state, in_map in _states(definition, None):
        if in_map is not None and record_tasks.ENTRY_OWNER in str(state.get("Arguments", "")):
            writes.setdefault(in_map, []).append(name)
    return [
        f"the guard states {', '.join(map(repr, names))} run in the item processor of the inline Map {in_map!r}, "
        "whose iterations may enter a state in the same millisecond and so write the same owner token (a guard in an "
        "sfn.Map draws its own, seen at synth, unless told in_inline_map=False; these do not): "
        "pass in_inline_map=True to their IdempotencyGuard (or, for a guard of guard_states, to its GuardedState), "
        "which then draws a token of its own in a Begin state"
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
