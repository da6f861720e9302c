"""A picture of the states a guard generates, as a Mermaid flowchart drawn from a synthesized
definition, with the path of each outcome marked: the states a first run, a replay, a wait, a takeover
and a failure enter.

Reads definitions only (``assembly.state_machine_definitions`` renders them from a template):
no CDK, no AWS. Each path is found in the definition itself, as the fewest transitions through the
states its outcome must pass, so the picture follows the options the guard was built with; a path
whose states the guard lacks (the wait, under ``InFlightPolicy.FAIL``) is left out.
"""

from __future__ import annotations

import itertools
from collections import deque
from dataclasses import dataclass, field
from typing import Any

# Each outcome, as the protocol states it passes in order (None: the guard's first state); where a
# guard lacks a state of the first form (Express workflows have no OwnerCheck), the next form is used.
OUTCOMES: dict[str, tuple[tuple[str | None, ...], ...]] = {
    "first run": ((None, "Body", "Complete"),),
    "replay": ((None, "Inspect", "Route", "Replay"),),
    "wait": (("Route", "Backoff", "Await", "Route"),),
    "takeover": (("Route", "OwnerCheck", "OwnerRunning", "Takeover", "Body"), ("Route", "Takeover", "Body")),
    "failure": (("Body", "Failed"),),
}
_COLORS = {"first run": "#2e7d32", "replay": "#1565c0", "wait": "#ef6c00", "takeover": "#6a1b9a", "failure": "#c62828"}
_SHAPES = {"Choice": "{{{}}}", "Fail": "[/{}/]", "Succeed": "([{}])", "Parallel": "[[{}]]", "Wait": "({})"}


class NoGuard(LookupError):
    """The definition has no guard at its top level."""


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    label: str = ""


@dataclass
class GuardGraph:
    """The states of the outermost guard of a definition (names without the guard's prefix)."""

    states: dict[str, dict[str, Any]]  # the guard's top-level states
    polled: dict[str, dict[str, Any]]  # the states inside Await, which poll the record
    start: str
    edges: list[Edge] = field(default_factory=list)
    polled_edges: list[Edge] = field(default_factory=list)
    paths: dict[str, list[str]] = field(default_factory=dict)


def read_guard(definition: dict[str, Any]) -> GuardGraph:
    prefix = next(
        (
            name[: -len("Acquire")]
            for name in definition["States"]
            if name.endswith("Acquire") and name[: -len("Acquire")] + "Body" in definition["States"]
        ),
        None,
    )
    if prefix is None:
        raise NoGuard("this state machine has no guard states (…Acquire and …Body) at its top level")

    def ours(states: dict[str, Any]) -> dict[str, dict[str, Any]]:
        return {name[len(prefix) :]: state for name, state in states.items() if name.startswith(prefix)}

    states = ours(definition["States"])
    polled = ours(
        {name: state for branch in states.get("Await", {}).get("Branches", []) for name, state in branch["States"].items()}
    )
    graph = GuardGraph(states, polled, definition["StartAt"][len(prefix) :])
    graph.edges = _edges(states, prefix)
    graph.polled_edges = _edges(polled, prefix)
    for outcome, forms in OUTCOMES.items():
        for waypoints in forms:
            route = [graph.start if point is None else point for point in waypoints]
            path = _through(graph.edges, route) if all(point in states for point in route) else None
            if path:
                graph.paths[outcome] = path
                break
    return graph


def _edges(states: dict[str, dict[str, Any]], prefix: str) -> list[Edge]:
    """The transitions between ``states``: Next, Choice rules, Default ("otherwise") and Catch."""
    found = []
    for name, state in states.items():
        targets = [(state.get("Next"), ""), (state.get("Default"), "otherwise")]
        targets += [(rule["Next"], "") for rule in state.get("Choices", [])]
        targets += [
            (catch["Next"], "catch " + ", ".join(e.split(".")[-1] for e in catch["ErrorEquals"]))
            for catch in state.get("Catch", [])
        ]
        for target, label in targets:
            if target and target[len(prefix) :] in states and target.startswith(prefix):
                found.append(Edge(name, target[len(prefix) :], label))
    return found


def _through(edges: list[Edge], waypoints: list[str]) -> list[str] | None:
    """The states entered going through ``waypoints`` in order by the fewest transitions."""
    following: dict[str, list[str]] = {}
    for edge in edges:
        following.setdefault(edge.source, []).append(edge.target)
    route = [waypoints[0]]
    for start, goal in itertools.pairwise(waypoints):
        came_from: dict[str, str] = {}
        queue = deque([start])
        while queue and goal not in came_from:
            state = queue.popleft()
            for target in following.get(state, []):
                if target not in came_from:
                    came_from[target] = state
                    queue.append(target)
        if goal not in came_from:
            return None
        leg = [goal]
        while came_from[leg[-1]] != start:
            leg.append(came_from[leg[-1]])
        route += reversed(leg)
    return route


def mermaid(definition: dict[str, Any], title: str = "") -> str:
    """The outermost guard's states as a Mermaid flowchart: the protected chain collapsed into Body,
    the poll drawn inside Await, each outcome's transitions labelled and coloured, and each path
    listed in a comment at the end."""
    graph = read_guard(definition)
    names = sorted(graph.states) + sorted(set(graph.polled) - set(graph.states))
    ids = {name: f"s{index}" for index, name in enumerate(names)}

    def node(name: str, state: dict[str, Any]) -> str:
        label = "Body: the protected chain" if name == "Body" else name
        return ids[name] + _SHAPES.get(state["Type"], "[{}]").format(f'"{label}"')

    def arrow(edge: Edge, label: str) -> str:
        return f"{ids[edge.source]} -->{f'|{label}|' if label else ''} {ids[edge.target]}"

    lines = [f"%% {title or 'idempotent-constructs graph'}", "flowchart TD"]
    lines += [f"    {node(name, graph.states[name])}" for name in sorted(graph.states) if name != "Await" or not graph.polled]
    styles = []
    if graph.polled:
        lines.append(f'    subgraph {ids["Await"]}["Await: poll the record"]')
        lines += [f"        {node(name, graph.polled[name])}" for name in sorted(graph.polled)]
        lines += [f"        {arrow(edge, edge.label)}" for edge in graph.polled_edges]
        lines.append("    end")
    for edge in graph.edges:
        outcomes = [o for o, path in graph.paths.items() if (edge.source, edge.target) in itertools.pairwise(path)]
        lines.append("    " + arrow(edge, " / ".join(filter(None, [edge.label, *outcomes]))))
        if outcomes:
            index = len(graph.polled_edges) + graph.edges.index(edge)
            styles.append(f"    linkStyle {index} stroke:{_COLORS[outcomes[0]]},stroke-width:3px")
    lines += styles
    lines += [f"%% {outcome}: {' -> '.join(path)}" for outcome, path in graph.paths.items()]
    return "\n".join(lines) + "\n"
