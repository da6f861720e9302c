"""A guard's states made and rendered in Python, for the guard of a whole workflow (``IdempotentStateMachine``) whose
body is a Parallel's branch: what the CDK's states would render, field for field and in the CDK's order, without a
call into jsii for each state, edge and rendering (issue 56). The CDK makes the body's Parallel (``Body``) and
renders it and its branch; everything around it is here, bound and rendered as ``json_graph`` does.

Each class follows one of the CDK's, made with ``.jsonata()``: ``sfn.Pass``, ``Choice``, ``Succeed``, ``Fail``,
``Wait``, ``Parallel``, ``Map``, ``tasks.LambdaInvoke`` with ``payload_response_only`` and ``CallAwsService``; and
``sfn.CustomState``, for the guard's DynamoDB tasks (``tasks.JsonItemTask``).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

from aws_cdk import aws_iam as iam

from .._readers.asl import JSONPATH
from .._synth import read_once
from .json_graph import UNDEFINED, Graph, State, maybe, seconds, spread


class _Factory:
    """The CDK's ``X.jsonata(scope, id, **props)`` for a state class here."""

    def __init__(self, kind: type[State]) -> None:
        self.kind = kind

    def jsonata(self, scope: Any, construct_id: str, **props: Any) -> Any:
        return self.kind(scope, construct_id, **props)


class Pass(State):
    def render(self, top: str | None) -> dict[str, Any]:
        return spread(
            {"Type": "Pass"},
            self._query_language(top),
            {"Comment": maybe(self.comment), "Result": UNDEFINED, "ResultPath": UNDEFINED},
            self._input_output(),
            self._next_end(),
            self._assign(),
        )


class Succeed(State):
    @property
    def end_states(self) -> list[State]:
        return []

    def render(self, top: str | None) -> dict[str, Any]:
        return spread({"Type": "Succeed"}, self._query_language(top), {"Comment": maybe(self.comment)}, self._input_output())


class Fail(State):
    def __init__(
        self, scope: Any, construct_id: str, *, error: str | None = None, cause: str | None = None, **props: Any
    ) -> None:
        super().__init__(scope, construct_id, **props)
        self.error, self.cause = error, cause

    @property
    def end_states(self) -> list[State]:
        return []

    def render(self, top: str | None) -> dict[str, Any]:
        return spread(
            {"Type": "Fail"},
            self._query_language(top),
            {
                "Comment": maybe(self.comment),
                "Error": maybe(self.error),
                "ErrorPath": UNDEFINED,
                "Cause": maybe(self.cause),
                "CausePath": UNDEFINED,
            },
        )


class Choice(State):
    @property
    def end_states(self) -> list[State]:
        return []  # as the CDK's: a Choice goes on through its rules

    def when(self, condition: Any, following: Any) -> Choice:
        target = following.start_state
        self.choices.append((_condition(condition), target))
        target.incoming.append(self)
        self._bind_new(target)
        return self

    def otherwise(self, following: Any) -> Choice:
        assert self.default is None, f"{self.state_id} has a default already"
        self.default = following.start_state  # as the CDK: not an incoming state of its target
        return self

    def render(self, top: str | None) -> dict[str, Any]:
        choices = [
            spread(
                {"Condition": text}, {"Output": UNDEFINED, "Assign": UNDEFINED}, {"Next": target.state_id, "Comment": UNDEFINED}
            )
            for text, target in self.choices
        ]
        return spread(
            {"Type": "Choice"},
            self._query_language(top),
            {"Comment": maybe(self.comment)},
            self._input_output(),
            {"Choices": choices or UNDEFINED, "Default": UNDEFINED if self.default is None else self.default.state_id},
            self._assign(),
        )


_CONDITIONS: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


def _condition(condition: Any) -> str:
    """The text of a JSONata condition (``route.condition``'s, made once a process), read once a condition."""
    if condition not in _CONDITIONS:
        _CONDITIONS[condition] = condition.render_condition()["Condition"]
    return _CONDITIONS[condition]


class WaitTime:
    """``sfn.WaitTime.duration``."""

    def __init__(self, json: dict[str, Any]) -> None:
        self.json = json

    @staticmethod
    def duration(duration: Any) -> WaitTime:
        return WaitTime({"Seconds": seconds(duration)})


class Wait(State):
    def __init__(self, scope: Any, construct_id: str, *, time: WaitTime, **props: Any) -> None:
        super().__init__(scope, construct_id, **props)
        self.time = time

    def render(self, top: str | None) -> dict[str, Any]:
        return spread(
            {"Type": "Wait"},
            self._query_language(top),
            {"Comment": maybe(self.comment)},
            self.time.json,
            self._input_output(),
            self._next_end(),
            self._assign(),
        )


class Parallel(State):
    def __init__(self, scope: Any, construct_id: str, **props: Any) -> None:
        super().__init__(scope, construct_id, **props)
        self._pending: list[Any] = []

    def branch(self, *branches: Any) -> Parallel:
        self._pending.extend(branches)
        return self

    def bind(self, graph: Graph) -> None:
        # As the CDK's (2.275): its branches' graphs are made as it joins one, before its own traversal.
        for branch in self._pending:
            self.branches.append(Graph(branch.start_state, f"Parallel '{self.state_id}' branch {len(self.branches) + 1}"))
        self._pending.clear()
        super().bind(graph)

    def render(self, top: str | None) -> dict[str, Any]:
        return spread(
            {"Type": "Parallel"},
            self._query_language(top),
            {"Comment": maybe(self.comment), "ResultPath": UNDEFINED},
            self._next_end(),
            self._input_output(),
            self._retry_catch(),
            {"Branches": [branch.to_graph_json() for branch in self.branches]},
            {"ResultSelector": UNDEFINED},
            self._assign(),
        )


class ProvideItems:
    """``sfn.ProvideItems.jsonata``."""

    def __init__(self, items: Any) -> None:
        self.items = items

    @staticmethod
    def jsonata(items: Any) -> ProvideItems:
        return ProvideItems(items)


class Map(State):
    def __init__(self, scope: Any, construct_id: str, *, items: ProvideItems | None = None, **props: Any) -> None:
        super().__init__(scope, construct_id, **props)
        self.items = items

    def item_processor(self, processor: Any) -> Map:
        # As the CDK's: its graph is made at once.
        self.processor = Graph(processor.start_state, f"Map {self.state_id} Item Processor")
        if self.graph is not None:
            self.processor.register_super_graph(self.graph)
        return self

    def render(self, top: str | None) -> dict[str, Any]:
        processor = None
        if self.processor is not None:
            processor = spread({"ProcessorConfig": {"Mode": "INLINE"}}, self.processor.to_graph_json())
        return spread(
            {"Type": "Map"},
            self._query_language(top),
            {"Comment": maybe(self.comment), "ResultPath": UNDEFINED},
            self._next_end(),
            self._input_output(),
            {"ResultSelector": UNDEFINED},
            self._retry_catch(),
            {"Items": UNDEFINED if self.items is None else self.items.items},
            {"ItemProcessor": maybe(processor)},
            self._assign(),
        )


class Task(State):
    """``sfn.TaskStateBase``: its permissions registered as it joins a graph (``task_policies``)."""

    task_policies: Sequence[iam.PolicyStatement] = ()

    def when_bound(self, graph: Graph) -> None:
        super().when_bound(graph)
        for statement in self.task_policies:
            graph.register_policy_statement(statement)

    def _task(self, top: str | None) -> dict[str, Any]:
        raise NotImplementedError

    def render(self, top: str | None) -> dict[str, Any]:
        base = {
            "Type": "Task",
            "Comment": maybe(self.comment),
            "TimeoutSeconds": UNDEFINED,
            "TimeoutSecondsPath": UNDEFINED,
            "HeartbeatSeconds": UNDEFINED,
            "HeartbeatSecondsPath": UNDEFINED,
            "InputPath": UNDEFINED,
            "OutputPath": UNDEFINED,
            "ResultPath": UNDEFINED,
            "Arguments": UNDEFINED,
            "Output": maybe(self.outputs),
            "ResultSelector": UNDEFINED,
        }
        return spread(self._query_language(top), self._next_end(), self._retry_catch(), base, self._assign(), self._task(top))

    def _arguments(self, value: Any, top: str | None) -> dict[str, Any]:
        json_path = self._actual(top) == JSONPATH
        return {"Parameters": value if json_path else UNDEFINED, "Arguments": UNDEFINED if json_path else value}


class LambdaInvoke(Task):
    """``tasks.LambdaInvoke`` with ``payload_response_only``: its resource is the function (a version)."""

    def __init__(self, scope: Any, construct_id: str, *, function_arn: str, payload: Any, **props: Any) -> None:
        super().__init__(scope, construct_id, **props)
        self.function_arn, self.payload = function_arn, payload
        self.rendering: Callable[[Any], Any] = lambda state: state  # its rendered state made final (as FunctionTask's)

    def to_state_json(self, query_language: str | None = None) -> Any:
        return self.rendering(super().to_state_json(query_language))

    def _task(self, top: str | None) -> dict[str, Any]:
        return spread({"Resource": self.function_arn}, self._arguments(self.payload, top))


class CallAwsService(Task):
    """``tasks.CallAwsService``."""

    def __init__(
        self,
        scope: Any,
        construct_id: str,
        *,
        service: str,
        action: str,
        parameters: dict[str, Any],
        statement: iam.PolicyStatement,
        **props: Any,
    ) -> None:
        super().__init__(scope, construct_id, **props)
        self.resource = f"arn:{read_once.pseudo().partition}:states:::aws-sdk:{service.lower()}:{action}"
        self.parameters = parameters
        self.task_policies = [statement]

    def _task(self, top: str | None) -> dict[str, Any]:
        return spread({"Resource": self.resource}, self._arguments(self.parameters, top))


class Custom(State):
    """``sfn.CustomState``: its JSON as given, between its transitions and its catchers; as the CDK's, its catchers
    render as JSONPath ones (no query language of its own), and a ``Retry`` of its JSON keeps its place."""

    def __init__(self, scope: Any, construct_id: str, *, state_json: dict[str, Any]) -> None:
        super().__init__(scope, construct_id, query_language=None)
        self.state_json = state_json

    def render(self, top: str | None) -> dict[str, Any]:
        state = spread(self._query_language(top), self._next_end(), self.state_json, self._retry_catch())
        if isinstance(self.state_json.get("Retry"), list):  # add_retry's first, then its JSON's
            added = state["Retry"] if isinstance(state.get("Retry"), list) else []
            state["Retry"] = [*added, *self.state_json["Retry"]]
        return state


class Kit:
    """What the guard's phases make their states with: the CDK's (``sfn``) or these."""

    Pass = _Factory(Pass)
    Choice = _Factory(Choice)
    Succeed = _Factory(Succeed)
    Fail = _Factory(Fail)
    Parallel = _Factory(Parallel)
    Wait = _Factory(Wait)
    Map = _Factory(Map)
    WaitTime = WaitTime
    ProvideItems = ProvideItems


KIT = Kit()
