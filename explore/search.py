"""Every interleaving within the bounds: a breadth-first search of the explored world's states, each
explored once, which stops at the first broken promise with the shortest trace that breaks it.

After the search, ``no_key_stuck`` is checked on the whole graph: from every state reached, a state where
every execution has ended is reachable, and in every such state the key is free or completed.
"""

from __future__ import annotations

import time
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
        machine = Machine(configuration)
        transitions = Transitions(configuration, bounds, machine)
        index: dict[World, int] = {}
        parents: list[tuple[int, str]] = []
        depths: list[int] = []
        edges: list[list[int]] = []
        frontier: deque[tuple[int, World]] = deque()

        def trace(number: int) -> list[str]:
            lines: list[str] = []
            while number >= 0:
                parent, label = parents[number]
                if parent < 0:
                    lines.append(label)
                    break
                lines.append(label)
                number = parent
            return lines[::-1]

        for world in transitions.initial():
            if world not in index:
                index[world] = len(parents)
                parents.append((-1, _start(world)))
                depths.append(0)
                frontier.append((index[world], world))
        while frontier:
            number, world = frontier.popleft()
            following: list[int] = []
            try:
                for found in transitions.successors(world):
                    report.transitions += 1
                    known = index.get(found.world)
                    if known is None:
                        known = index[found.world] = len(parents)
                        parents.append((number, found.said()))
                        depths.append(depths[number] + 1)
                        frontier.append((known, found.world))
                        if found.exemption is not None and found.exemption.name not in report.exemptions:
                            report.exemptions[found.exemption.name] = [*trace(known)]
                    following.append(known)
                if world.ended:
                    report.ended += 1
                    transitions.checks.free(world)
            except Violation as violation:
                report.counterexample = Counterexample(violation.promise, violation.what, trace(number) + violation.happened)
                break
            except (Refused, Unexpected) as refused:
                report.counterexample = Counterexample(None, str(refused), trace(number))
                break
            edges.append(following)
            if limit is not None and len(parents) > limit:
                deepest = max(range(len(depths)), key=depths.__getitem__)
                report.counterexample = Counterexample(
                    None, f"the search passed {limit:,} states: narrow the bounds (the trace: the deepest state)", trace(deepest)
                )
                break
        report.states, report.depth = len(parents), max(depths, default=0)
        report.unentered = sorted(machine.names - machine.entered)
        if report.holds:
            stuck = _cannot_end(edges, [world.ended for world in index])
            if stuck is not None:
                report.counterexample = Counterexample(FREE, "from this state, no path lets every execution end", trace(stuck))
    report.seconds = time.monotonic() - started
    return report


def _start(world: World) -> str:
    skews = ", ".join(f"{execution.name} {execution.skew / 1000:+g} s" for execution in world.executions)
    runs = ", ".join(f"{run.name} at {run.top.state}" for run in world.runs)
    return f"start: {runs} (clocks: {skews})"


def _cannot_end(edges: list[list[int]], ended: list[bool]) -> int | None:
    """A state from which no state where every execution has ended is reachable, if there is one."""
    reverse: list[list[int]] = [[] for _ in edges]
    for source, targets in enumerate(edges):
        for target in targets:
            reverse[target].append(source)
    can = [flag for flag in ended]
    todo = [number for number, flag in enumerate(ended) if flag]
    while todo:
        for source in reverse[todo.pop()]:
            if not can[source]:
                can[source] = True
                todo.append(source)
    return next((number for number, flag in enumerate(can) if not flag), None)


__all__ = ["ACCEPTED_NAME", "Counterexample", "Exemption", "Report", "explore"]
