"""Every interleaving within the bounds: a breadth-first search of the explored world's states, each
explored once, which stops at the first broken promise with the shortest trace that breaks it.

After the search, ``no_key_stuck`` is checked on the whole graph: from every state reached, a state where
every execution has ended is reachable, and in every such state the key is free or completed.
"""

from __future__ import annotations

import itertools
import time
from array import array
from collections import deque
from dataclasses import dataclass, field

from .configurations import Configuration
from .invariants import FREE, Exemption, Promise, Violation
from .machine import Machine, Refused
from .services import Services, Unexpected
from .transitions import Bounds, Transitions
from .world import World

ACCEPTED_NAME = "requests_accepted"


@dataclass
class Counterexample:
    """A broken promise, and the shortest trace to it: what happened, one transition a line."""

    promise: Promise | None
    what: str
    trace: list[str]

    def __str__(self) -> str:
        lines = [f"{'promise broken' if self.promise else 'refused'}: {self.what}", "trace:"]
        lines.extend(f"  {number:>2}. {line}" for number, line in enumerate(self.trace, 1))
        return "\n".join(lines)


@dataclass
class Report:
    """What one search found: the figures, the exemptions it saw (each with its first trace), and the
    counterexample where a promise broke."""

    configuration: str
    bounds: Bounds
    states: int = 0
    transitions: int = 0
    depth: int = 0
    seconds: float = 0.0
    ended: int = 0  # states where every execution has ended
    counterexample: Counterexample | None = None
    exemptions: dict[str, list[str]] = field(default_factory=dict)
    unentered: list[str] = field(default_factory=list)  # the definition's states no run entered

    @property
    def holds(self) -> bool:
        return self.counterexample is None

    def summary(self) -> str:
        verdict = "every promise holds" if self.holds else "a promise broke"
        return (
            f"{self.configuration}: {verdict}: {self.states:,} states, {self.transitions:,} transitions, depth {self.depth}, "
            f"{self.seconds:.1f} s ({self.bounds})"
        )


def explore(configuration: Configuration, bounds: Bounds, *, limit: int | None = None) -> Report:
    """Explore ``configuration`` within ``bounds`` (``limit``: stop after so many states, a guard for a
    mistaken bound, which the report then says)."""
    started = time.monotonic()
    report = Report(configuration.name, bounds)
    with Services():
        transitions = Transitions(configuration, bounds, Machine(configuration))
        graph = _Graph(transitions)
        frontier: deque[tuple[int, World]] = deque((graph.add(world, -1, 0), world) for world in transitions.initial())
        while frontier:
            number, world = frontier.popleft()
            graph.expanding(number)
            try:
                for choice, found in enumerate(transitions.successors(world)):
                    report.transitions += 1
                    known = graph.known(found.world)
                    if known is None:
                        known = graph.add(found.world, number, choice)
                        frontier.append((known, found.world))
                        if found.exemption is not None and found.exemption.name not in report.exemptions:
                            report.exemptions[found.exemption.name] = graph.trace(known)
                    graph.edge(known)
                if world.ended:
                    report.ended += 1
                    graph.ended[number] = 1
                    transitions.checks.free(world)
            except Violation as violation:
                report.counterexample = Counterexample(
                    violation.promise, violation.what, graph.trace(number) + violation.happened
                )
                break
            except (Refused, Unexpected) as refused:
                report.counterexample = Counterexample(None, str(refused), graph.trace(number))
                break
            if limit is not None and len(graph) > limit:
                deepest = max(range(len(graph)), key=graph.depths.__getitem__)
                report.counterexample = Counterexample(
                    None,
                    f"the search passed {limit:,} states: narrow the bounds (the trace: the deepest state)",
                    graph.trace(deepest),
                )
                break
        report.states, report.depth = len(graph), max(graph.depths, default=0)
        report.unentered = sorted(transitions.machine.names - transitions.machine.entered)
        if report.holds:
            stuck = graph.cannot_end()
            if stuck is not None:
                report.counterexample = Counterexample(
                    FREE, "from this state, no path lets every execution end", graph.trace(stuck)
                )
    report.seconds = time.monotonic() - started
    return report


class _Graph:
    """The states found, numbered in the order found (and so expanded: breadth first), each held once: its
    parent and which of the parent's successors it is (a trace is replayed from them, its words made only
    then), its depth, whether every execution has ended there, and its successors (in arrays: a state
    costs the world itself and a few bytes)."""

    def __init__(self, transitions: Transitions) -> None:
        self.transitions = transitions
        self.index: dict[World, int] = {}
        self.roots: dict[int, World] = {}
        self.parents, self.choices, self.depths = array("l"), array("l"), array("l")
        self.ended = bytearray()
        self.offsets, self.targets = array("l"), array("l")  # state n's successors: targets[offsets[n]:offsets[n + 1]]

    def __len__(self) -> int:
        return len(self.parents)

    def known(self, world: World) -> int | None:
        return self.index.get(world)

    def add(self, world: World, parent: int, choice: int) -> int:
        number = self.index[world] = len(self.parents)
        if parent < 0:
            self.roots[number] = world
        self.parents.append(parent)
        self.choices.append(choice)
        self.depths.append(0 if parent < 0 else self.depths[parent] + 1)
        self.ended.append(0)
        return number

    def expanding(self, number: int) -> None:
        assert number == len(self.offsets), "states are expanded in the order they were found"
        self.offsets.append(len(self.targets))

    def edge(self, target: int) -> None:
        self.targets.append(target)

    def trace(self, number: int) -> list[str]:
        """What happened from the start to state ``number``, one transition a line, replayed."""
        path = [number]
        while self.parents[path[-1]] >= 0:
            path.append(self.parents[path[-1]])
        path.reverse()
        world = self.roots[path[0]]
        lines = [_start(world)]
        for step in path[1:]:
            found = next(itertools.islice(self.transitions.successors(world), self.choices[step], None))
            lines.append(found.said())
            world = found.world
        return lines

    def cannot_end(self) -> int | None:
        """A state from which no state where every execution has ended is reachable, if there is one."""
        count = len(self.offsets)
        ends = [*self.offsets[1:], len(self.targets)]
        reverse: list[list[int]] = [[] for _ in range(count)]
        for source in range(count):
            for target in self.targets[self.offsets[source] : ends[source]]:
                reverse[target].append(source)
        can = bytearray(self.ended[:count])
        todo = [number for number in range(count) if can[number]]
        while todo:
            for source in reverse[todo.pop()]:
                if not can[source]:
                    can[source] = 1
                    todo.append(source)
        return next((number for number in range(count) if not can[number]), None)


def _start(world: World) -> str:
    skews = ", ".join(f"{execution.name} {execution.skew / 1000:+g} s" for execution in world.executions)
    runs = ", ".join(f"{run.name} at {run.top.state}" for run in world.runs)
    return f"start: {runs} (clocks: {skews})"


__all__ = ["ACCEPTED_NAME", "Counterexample", "Exemption", "Report", "explore"]
