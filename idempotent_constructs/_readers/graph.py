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
    "replay": ((None, "Inspect", "Replay"),),
    "wait": (("Route", "Backoff", "Await", "Replay"), ("Route", "Backoff", "Await", "Route")),
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
    prefix: str = ""  # the guard's state-name prefix, e.g. "Idempotency."
    bare_body: str | None = None  # the name of the body's own state, where it runs bare as Body


def read_guard(definition: dict[str, Any], guard: str | None = None) -> GuardGraph:
    """The outermost guard of ``definition``, or the guard whose state-name prefix is ``guard`` (its
    construct id, e.g. ``ChargeOnce`` for ``ChargeOnce.Acquire``), found at any depth."""
    if guard is None:
        container = definition
        prefix = next((p for p in _prefixes(definition["States"])), None)
        if prefix is None:
            raise NoGuard("this state machine has no guard states (…Acquire and …Complete) at its top level")
    else:
        found = next(
            ((f"{guard}.", c) for c in _containers(definition) if f"{guard}." in _prefixes(c["States"])),
            None,
        )
        if found is None:
            raise NoGuard(f"this state machine has no guard {guard!r} (no {guard}.Acquire and {guard}.Complete states)")
        prefix, container = found

    def ours(states: dict[str, Any]) -> dict[str, dict[str, Any]]:
        return {name[len(prefix) :]: state for name, state in states.items() if name.startswith(prefix)}

    named, bare = _bare_body_named(container["States"], prefix)
    container = {**container, "States": named}
    states = ours(container["States"])
    polled = ours(
        {name: state for branch in states.get("Await", {}).get("Branches", []) for name, state in branch["States"].items()}
    )
    graph = GuardGraph(states, polled, _entry(container, prefix)[len(prefix) :], prefix=prefix, bare_body=bare)
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


def guard_names(definition: dict[str, Any]) -> list[str]:
    """The state-name prefix (the construct id) of every guard in ``definition``, at any depth."""
    return [p.removesuffix(".") for c in _containers(definition) for p in _prefixes(c["States"]) if p]


def _prefixes(states: dict[str, Any]) -> list[str]:
    """The prefixes of the guards whose states are among ``states`` (``X.`` for ``X.Acquire`` and ``X.Complete``)."""
    return [
        name[: -len("Acquire")] for name in states if name.endswith("Acquire") and name[: -len("Acquire")] + "Complete" in states
    ]


def _bare_body_named(states: dict[str, Any], prefix: str) -> tuple[dict[str, Any], str | None]:
    """``(states, the body's own name)`` with a body that runs bare (the first state of the chain, which the
    guard's Acquire goes to) named as the guard's ``Body``, and every transition to it too."""
    bare = _bare_body(states, prefix)
    if bare is None:
        return states, None
    body = prefix + "Body"

    def to_body(state: dict[str, Any]) -> dict[str, Any]:
        state = {**state, **({"Next": body} if state.get("Next") == bare else {})}
        for rules in ("Catch", "Choices"):
            if rules in state:
                state[rules] = [{**each, "Next": body} if each.get("Next") == bare else each for each in state[rules]]
        return {**state, "Default": body} if state.get("Default") == bare else state

    return {body if name == bare else name: to_body(state) for name, state in states.items()}, bare


def _bare_body(states: dict[str, Any], prefix: str) -> str | None:
    """The name of the body of the guard ``prefix`` among ``states`` where it runs bare: the state, not one
    of the guard's own, that its Acquire goes to."""
    bare = (states.get(prefix + "Acquire") or {}).get("Next")
    return bare if isinstance(bare, str) and not bare.startswith(prefix) and bare in states else None


def _children(state: dict[str, Any]) -> list[dict[str, Any]]:
    """The state lists nested in a state: a Parallel's branches, a Map's item processor."""
    nested = list(state.get("Branches", []))
    nested += [state[key] for key in ("ItemProcessor", "Iterator") if isinstance(state.get(key), dict)]
    return [n for n in nested if isinstance(n.get("States"), dict)]


def _containers(definition: dict[str, Any]) -> list[dict[str, Any]]:
    """``definition`` and every branch and item processor in it, at any depth (each has StartAt, States)."""
    found = [definition]
    for container in found:
        found += [child for state in container["States"].values() for child in _children(state)]
    return found


def _entry(container: dict[str, Any], prefix: str) -> str:
    """The guard's first state: where its container starts, or where a state outside the guard goes into it."""
    if container["StartAt"].startswith(prefix):
        return str(container["StartAt"])
    into = (
        target
        for name, state in container["States"].items()
        if not name.startswith(prefix)
        for target, _ in _transitions(state)
        if target.startswith(prefix)
    )
    return next(into, prefix + "Acquire")


def _transitions(state: dict[str, Any]) -> list[tuple[str, str]]:
    """A state's targets and their labels: Next, Choice rules, Default ("otherwise") and Catch."""
    targets = [(state.get("Next"), ""), (state.get("Default"), "otherwise")]
    targets += [(rule.get("Next"), "") for rule in state.get("Choices", [])]
    targets += [
        (catch["Next"], "catch " + ", ".join(e.split(".")[-1] for e in catch["ErrorEquals"])) for catch in state.get("Catch", [])
    ]
    return [(target, label) for target, label in targets if isinstance(target, str)]


def _edges(states: dict[str, dict[str, Any]], prefix: str) -> list[Edge]:
    """The transitions between ``states`` (named without ``prefix``)."""
    return [
        Edge(name, target[len(prefix) :], label)
        for name, state in states.items()
        for target, label in _transitions(state)
        if target.startswith(prefix) and target[len(prefix) :] in states
    ]


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


def mermaid(definition: dict[str, Any], title: str = "", guard: str | None = None, collapse_guards: bool = False) -> str:
    """The outermost guard's states (or those of the guard ``guard`` names) as a Mermaid flowchart:
    the protected chain's own states drawn inside Body (each Parallel branch and Map item processor a
    subgraph, each guard in it a subgraph titled by its prefix, or one node with ``collapse_guards``),
    the poll drawn inside Await, each outcome's transitions labelled and coloured, and each path listed
    in a comment at the end."""
    graph = read_guard(definition, guard)
    names = sorted(graph.states) + sorted(set(graph.polled) - set(graph.states))
    ids = {name: f"s{index}" for index, name in enumerate(names)}
    drawing = _Drawing(len(names), collapse_guards)

    def node(name: str, state: dict[str, Any]) -> str:
        label = f"Body: {graph.bare_body}" if name == "Body" and graph.bare_body else name
        return ids[name] + _SHAPES.get(state["Type"], "[{}]").format(_quote(label))

    lines = [f"%% {title or 'idempotent-constructs graph'}", "flowchart TD"]
    drawing.lines = lines
    # The states drawn as subgraphs of what they hold: the user's chain, and Replay's Restore (the guard's own).
    holders = {"Body": ("Body: the protected chain", ""), "Replay": ("Replay: its one item restores a kept result", graph.prefix)}
    for name in sorted(graph.states):
        state, children = graph.states[name], _children(graph.states[name])
        if name in holders and children:
            title, strip = holders[name]
            lines.append(f"    subgraph {ids[name]}[{_quote(title)}]")
            for branch in children:
                drawing.branch(branch, "        ", several=len(children) > 1, strip=strip)
            lines.append("    end")
        elif name != "Await" or not graph.polled:
            lines.append(f"    {node(name, state)}")
    styles = []
    if graph.polled:
        lines.append(f'    subgraph {ids["Await"]}["Await: poll the record"]')
        lines += [f"        {node(name, graph.polled[name])}" for name in sorted(graph.polled)]
        for edge in graph.polled_edges:
            drawing.arrow("        ", ids[edge.source], ids[edge.target], edge.label)
        lines.append("    end")
    for edge in graph.edges:
        outcomes = [o for o, path in graph.paths.items() if (edge.source, edge.target) in itertools.pairwise(path)]
        index = drawing.arrow("    ", ids[edge.source], ids[edge.target], " / ".join(filter(None, [edge.label, *outcomes])))
        if outcomes:
            styles.append(f"    linkStyle {index} stroke:{_COLORS[outcomes[0]]},stroke-width:3px")
    lines += styles
    lines += [f"%% {outcome}: {' -> '.join(path)}" for outcome, path in graph.paths.items()]
    return "\n".join(lines) + "\n"


def _quote(label: str) -> str:
    return '"' + label.replace('"', "#quot;") + '"'


class _Drawing:
    """The states of a body, drawn level by level: a Parallel's branches and a Map's item processor as
    subgraphs, each guard among them as a subgraph titled by its prefix (or one node, collapsed)."""

    def __init__(self, first_id: int, collapse_guards: bool) -> None:
        self.lines: list[str] = []
        self.next_id = first_id
        self.edges = 0  # the arrows drawn so far: the index linkStyle gives the next one
        self.collapse_guards = collapse_guards

    def new_id(self) -> str:
        self.next_id += 1
        return f"s{self.next_id - 1}"

    def arrow(self, indent: str, source: str, target: str, label: str = "") -> int:
        self.lines.append(f"{indent}{source} -->{f'|{label}|' if label else ''} {target}")
        self.edges += 1
        return self.edges - 1

    def branch(self, branch: dict[str, Any], indent: str, several: bool, strip: str = "") -> None:
        """A branch (or item processor): in a subgraph of its own if its state has several."""
        states = branch["States"]
        strip = strip if all(name.startswith(strip) for name in states) else ""
        if several:
            self.lines.append(f"{indent}subgraph {self.new_id()}[{_quote('branch ' + str(branch['StartAt']))}]")
            self.level(states, indent + "    ", strip)
            self.lines.append(f"{indent}end")
        else:
            self.level(states, indent, strip)

    def level(self, states: dict[str, Any], indent: str, strip: str = "") -> None:
        """The states of one level and the transitions between them."""
        prefixes = sorted((p for p in _prefixes(states) if p and p != strip), key=len, reverse=True)
        bodies = {bare: p for p in prefixes if (bare := _bare_body(states, p)) is not None}  # drawn in their guards
        group = {name: bodies.get(name) or next((p for p in prefixes if name.startswith(p)), None) for name in states}
        titled = {p: self.new_id() for p in prefixes}  # each guard's subgraph, or its node when collapsed
        collapsed = titled if self.collapse_guards else {}
        ids = {name: collapsed.get(group[name] or "") or self.new_id() for name in states}
        inside: dict[str, list[tuple[str, str, str]]] = {p: [] for p in prefixes}
        between: list[tuple[str, str, str]] = []
        for name, state in states.items():
            for target, label in _transitions(state):
                if target not in states or ids[name] == ids[target]:
                    continue
                arrow = (ids[name], ids[target], label)
                same = group[name] if group[name] == group[target] and group[name] not in collapsed else None
                edges = inside[same] if same else between
                if arrow not in edges:
                    edges.append(arrow)
        drawn: set[str] = set()
        for name, state in states.items():
            prefix = group[name]
            if prefix is None:
                self.state(ids[name], name.removeprefix(strip), state, indent, strip)
            elif prefix not in drawn:
                drawn.add(prefix)
                title = prefix.removesuffix(".")
                if prefix in collapsed:
                    self.lines.append(f"{indent}{collapsed[prefix]}[[{_quote(title)}]]")
                    continue
                self.lines.append(f"{indent}subgraph {titled[prefix]}[{_quote(title)}]")
                for member, member_state in states.items():
                    if group[member] == prefix:
                        label = f"Body: {member}" if member in bodies else member.removeprefix(prefix)
                        self.state(ids[member], label, member_state, indent + "    ", prefix)
                for source, target, label in inside[prefix]:
                    self.arrow(indent + "    ", source, target, label)
                self.lines.append(f"{indent}end")
        for source, target, label in between:
            self.arrow(indent, source, target, label)

    def state(self, id_: str, label: str, state: dict[str, Any], indent: str, strip: str) -> None:
        """A state: a node, or a subgraph holding the states of its branches or item processor."""
        children = _children(state)
        if not children:
            self.lines.append(f"{indent}{id_}" + _SHAPES.get(state["Type"], "[{}]").format(_quote(label)))
            return
        title = f"{label}: each item" if state["Type"] == "Map" else label
        self.lines.append(f"{indent}subgraph {id_}[{_quote(title)}]")
        for child in children:
            self.branch(child, indent + "    ", several=len(children) > 1, strip=strip)
        self.lines.append(f"{indent}end")
