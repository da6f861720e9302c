"""How the CDK binds and renders its states, in Python (``json_states`` holds the kinds): a state's transitions
(``State``), the graph it joins (``Graph``), and its JSON, built as JavaScript spreads an object (a key first given as
``undefined`` keeps its place), then its ``undefined`` keys dropped, as ``JSON.stringify`` drops them.

A state joins a graph as ``State.bindToGraph`` binds it: itself, then the states that lead to it, then those it
leads to, then its branches' graphs, whose statements come up then; so the definition's states and the role's
statements come in the CDK's order (aws-cdk-lib 2.275). The golden files, the snapshots and the templates of the
test stacks check each field and each order against the CDK's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_cdk import aws_iam as iam
from aws_cdk import aws_stepfunctions as sfn

from .._readers.asl import JSONATA, JSONPATH
from .._synth import read_once

ALL = "States.ALL"


class _Undefined:
    def __repr__(self) -> str:
        return "undefined"


UNDEFINED: Any = _Undefined()


def spread(*parts: dict[str, Any] | None) -> dict[str, Any]:
    """``{...a, ...b}``: a key keeps the place it was first given."""
    found: dict[str, Any] = {}
    for part in parts:
        if part:
            found.update(part)
    return found


def defined(value: Any) -> Any:
    """A state's ``value`` as ``JSON.stringify`` writes it: without its ``undefined`` keys. ``None`` is one too, here:
    a state made here holds no JSON null (the CDK's would not, as jsii gives a Python ``None`` to JavaScript as
    ``undefined``); the body's JSON, which may (a document's ``"ResultPath": null``), is the CDK's as it is."""
    if isinstance(value, dict):
        return {key: defined(item) for key, item in value.items() if item is not UNDEFINED and item is not None}
    if isinstance(value, list):
        return [defined(item) for item in value]
    return value


def maybe(value: Any) -> Any:
    return UNDEFINED if value is None else value


def language_of(language: sfn.QueryLanguage | None) -> str:
    return JSONATA if language == sfn.QueryLanguage.JSONATA else JSONPATH


def _errors_last(items: list[Any], errors: Callable[[Any], list[str]]) -> list[Any]:
    """``renderList``'s order: stable, a list that names States.ALL after the others."""
    return sorted(items, key=lambda item: 1 if ALL in errors(item) else 0)


class Graph:
    """``sfn.StateGraph``: the states bound into it, in order, and the statements they registered."""

    def __init__(self, start: Any, description: str) -> None:
        self.start_state: State = start
        self.states: dict[int, State] = {id(start): start}
        self.policy_statements: list[iam.PolicyStatement] = []
        self.super_graph: Graph | None = None
        self.timeout: float | None = None
        start.bind(self)

    def register_state(self, state: State) -> None:
        self.states.setdefault(id(state), state)

    def register_policy_statement(self, statement: iam.PolicyStatement) -> None:
        if self.super_graph is not None:
            self.super_graph.register_policy_statement(statement)
        else:
            self.policy_statements.append(statement)

    def register_super_graph(self, graph: Graph) -> None:
        if self.super_graph is graph:
            return
        assert self.super_graph is None, "a graph joins one other graph"
        self.super_graph = graph
        for statement in self.policy_statements:
            graph.register_policy_statement(statement)

    def bind(self, state_machine: sfn.StateMachine) -> None:
        """``sfn.StateGraph.bind``: the permissions on ``state_machine`` of the Distributed Maps of the CDK's graphs
        here (the body's; none of this graph's own states is one)."""
        for state in self.states.values():
            if (cdk_graph := getattr(state, "cdk_graph", None)) is not None:
                cdk_graph.bind(state_machine)

    def to_graph_json(self, query_language: sfn.QueryLanguage | str | None = None) -> dict[str, Any]:
        if isinstance(query_language, sfn.QueryLanguage):
            query_language = language_of(query_language)
        states = {state.state_id: state.to_state_json(query_language) for state in self.states.values()}
        # Each state's JSON made final as it is rendered: the body's nulls (the CDK's own) are kept.
        graph: dict[str, Any] = {"StartAt": self.start_state.state_id, "States": states}
        if self.timeout is not None:
            graph["TimeoutSeconds"] = self.timeout
        return graph


class Chain:
    """``sfn.Chain``: a start state and the states that end it."""

    def __init__(self, start: State, ends: list[State]) -> None:
        self.start_state, self.end_states = start, ends

    def next(self, following: Any) -> Chain:
        for end in self.end_states:
            end.next(following)
        return Chain(self.start_state, following.end_states)


class State:
    """``sfn.State``: a state's transitions, and its place in a graph."""

    def __init__(
        self,
        scope: Any,
        construct_id: str,
        *,
        state_name: str | None = None,
        query_language: sfn.QueryLanguage | None = sfn.QueryLanguage.JSONATA,
        comment: str | None = None,
        outputs: Any = None,
        assign: dict[str, Any] | None = None,
    ) -> None:
        self.id, self.state_name = construct_id, state_name
        self.prefixes: list[str] = []
        self.query_language = None if query_language is None else language_of(query_language)
        self.comment, self.outputs, self.assign = comment, outputs, assign
        self.incoming: list[State] = []
        self._next: State | None = None
        self.default: State | None = None
        self.choices: list[tuple[str, State]] = []
        self.catches: list[dict[str, Any]] = []
        self.retries: list[dict[str, Any]] = []
        self.branches: list[Graph] = []
        self.processor: Graph | None = None
        self.graph: Graph | None = None

    # --- as the CDK wires states ---------------------------------------------------------------------
    @property
    def start_state(self) -> State:
        return self

    @property
    def end_states(self) -> list[State]:
        return [self]

    @property
    def state_id(self) -> str:
        return "".join(self.prefixes) + (self.state_name or self.id)

    def add_prefix(self, prefix: str) -> None:
        if prefix:
            self.prefixes.insert(0, prefix)

    def next(self, following: Any) -> Chain:
        target = following.start_state
        assert self._next is None, f"{self.state_id} has a next state already"
        self._next = target
        target.incoming.append(self)
        self._bind_new(target)
        return Chain(self, following.end_states)

    def add_catch(
        self, handler: Any, *, errors: list[str] | None = None, outputs: Any = None, assign: dict[str, Any] | None = None
    ) -> State:
        target = handler.start_state
        self.catches.append({"next": target, "errors": errors or [ALL], "outputs": outputs, "assign": assign})
        target.incoming.append(self)
        self._bind_new(target)
        return self

    def add_retry(
        self,
        *,
        errors: list[str] | None = None,
        interval: Any = None,
        max_attempts: Any = None,
        backoff_rate: Any = None,
        max_delay: Any = None,
        jitter_strategy: sfn.JitterType | None = None,
    ) -> State:
        self.retries.append(
            {
                "ErrorEquals": errors or [ALL],
                "IntervalSeconds": UNDEFINED if interval is None else seconds(interval),
                "MaxAttempts": maybe(max_attempts),
                "BackoffRate": maybe(backoff_rate),
                "MaxDelaySeconds": UNDEFINED if max_delay is None else seconds(max_delay),
                "JitterStrategy": UNDEFINED if jitter_strategy is None else jitter_strategy.value,
            }
        )
        return self

    def _bind_new(self, target: State) -> None:
        if self.graph is not None:
            target.bind(self.graph)

    def outgoing(self) -> list[State]:
        found = [state for state in (self._next, self.default) if state is not None]
        found.extend(target for _, target in self.choices)
        found.extend(catch["next"] for catch in self.catches)
        return found

    # --- as the CDK binds them ---------------------------------------------------------------------------
    def bind(self, graph: Graph) -> None:
        if self.graph is graph:
            return
        assert self.graph is None, f"{self.state_id} is in a graph already"
        self.graph = graph
        self.when_bound(graph)
        for state in self.incoming:  # as JavaScript's for-of: those added meanwhile too
            state.bind(graph)
        for state in self.outgoing():
            state.bind(graph)
        for branch in self.branches:
            branch.register_super_graph(graph)
        if self.processor is not None:
            self.processor.register_super_graph(graph)

    def when_bound(self, graph: Graph) -> None:
        graph.register_state(self)

    # --- as the CDK renders them -------------------------------------------------------------------------
    def _actual(self, top: str | None) -> str:
        return self.query_language or top or JSONPATH

    def _query_language(self, top: str | None) -> dict[str, Any]:
        top = top or JSONPATH
        return {"QueryLanguage": JSONATA if top == JSONPATH and self.query_language == JSONATA else UNDEFINED}

    def _next_end(self) -> dict[str, Any]:
        return {"Next": self._next.state_id} if self._next is not None else {"End": True}

    def _input_output(self) -> dict[str, Any]:
        return {
            "InputPath": UNDEFINED,
            "Parameters": UNDEFINED,
            "OutputPath": UNDEFINED,
            "Arguments": UNDEFINED,
            "Output": maybe(self.outputs),
        }

    def _assign(self) -> dict[str, Any]:
        """A JSONata state's ``Assign`` (each here is one), as it is."""
        return {"Assign": maybe(self.assign)}

    def _retry_catch(self, top: str | None = None) -> dict[str, Any]:
        language = self._actual(top)

        def catch(item: dict[str, Any]) -> dict[str, Any]:
            shaped = (
                {"Output": maybe(item["outputs"]), "Assign": maybe(item["assign"])}
                if language == JSONATA
                else {"Assign": maybe(item["assign"])}
            )
            return spread(shaped, {"ErrorEquals": item["errors"], "ResultPath": UNDEFINED, "Next": item["next"].state_id})

        return {
            "Retry": [dict(retry) for retry in _errors_last(self.retries, lambda retry: retry["ErrorEquals"])] or UNDEFINED,
            "Catch": [catch(item) for item in _errors_last(self.catches, lambda item: item["errors"])] or UNDEFINED,
        }

    def render(self, top: str | None) -> dict[str, Any]:
        raise NotImplementedError

    def to_state_json(self, query_language: str | None = None) -> Any:
        return defined(self.render(query_language))


def seconds(duration: Any) -> Any:
    return duration if isinstance(duration, (int, float)) else read_once.seconds(duration)


class Body(State):
    """The CDK's Parallel of the user's chain (``finish.body``), as a state of this graph. As it joins one, the CDK
    binds it, and its branch, into a graph of its own (``cdk_graph``), as the CDK's Parallel binds its branch
    before its own traversal; the statements its branch registered there come up to this graph after its
    traversal, as a branch's do. The CDK renders it, ended (``End``) and without a catcher; its transitions here
    take their places in its JSON, where the CDK would write them (``Next`` for ``End``, ``Retry`` and ``Catch``
    before ``Branches``)."""

    def __init__(self, parallel: sfn.Parallel, name: str) -> None:
        super().__init__(None, name, query_language=None)
        self.parallel = parallel
        self.cdk_graph: sfn.StateGraph | None = None

    def bind(self, graph: Graph) -> None:
        if self.graph is graph:
            return
        cdk_graph = self.cdk_graph = sfn.StateGraph(self.parallel, "State Machine definition")
        super().bind(graph)
        for statement in cdk_graph.policy_statements:
            graph.register_policy_statement(statement)

    def to_state_json(self, query_language: str | None = None) -> Any:
        assert self.cdk_graph is not None, "rendered after it joined a graph"
        language = {JSONATA: sfn.QueryLanguage.JSONATA, JSONPATH: sfn.QueryLanguage.JSON_PATH}.get(query_language or "")
        rendered = self.cdk_graph.to_graph_json(language)["States"][self.state_id]
        state: dict[str, Any] = {}
        for key, value in rendered.items():
            if key == "End":
                state.update(self._next_end())
                continue
            if key == "Branches":
                state.update(defined(self._retry_catch()))
            state[key] = value
        return state
