"""The kinds of Task state a guard is made of, each declaring the permissions it needs.

* ``ItemTask``: one call of Step Functions' optimized DynamoDB integration on an item of the guard's
  namespace, its whole request built by one JSONata expression (so that values computed once, such as
  the key, serve every field).
* ``invoke``: a call of one of the stack's shared functions.

And ``fail``: the guard's Fail states, which end a run with one of its errors. Each is the CDK's, or, for a guard
whose states Python renders (``in_python``), ``json_states``' twin of it (``JsonItemTask``, ``json_states.LambdaInvoke``).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

from .._jsonata.key_expressions import literal
from .._synth import read_once, renders
from .._synth.functions import WORKFLOW_ITEM_ACTIONS, item_statement, key_statement
from . import json_graph, json_states
from .config import GuardConfig
from .protocol import ID, TRANSIENT_DYNAMODB_ERRORS, TRANSIENT_LAMBDA_ERRORS, Facts, expression

SAME_INPUT = expression("$states.input")
# A state of a guard's: the CDK's, or its json_states twin (``kit``), which share no base class to name.
GuardState = Any


def in_python(scope: object) -> bool:
    """Whether ``scope`` is a guard whose states Python makes and renders (``json_states``)."""
    return bool(getattr(scope, "states_in_python", False))


def kit(scope: object) -> Any:
    """What the guard ``scope`` makes its states with: the CDK's ``sfn``, or ``json_states``' (``in_python``)."""
    return json_states.KIT if in_python(scope) else sfn


def as_rendered(state: Any) -> Any:
    """A rendered state as it is: what a task's ``rendering`` is unless the guard sets another."""
    return state


def transient_retrier(errors: list[str], *, after_body: bool = False) -> dict[str, Any]:
    """Ten retries, jittered, at most 10 s apart: a call fails for good only if eleven attempts in
    about a minute all fail (at a 30% fault rate, about 2 in a million). A write after the body ran
    gets about ten minutes: giving up there would leave the key to a second run. As the CDK renders a
    retrier: written into a state's own JSON (an ``ItemTask``'s), it costs no call into jsii."""
    return {
        "ErrorEquals": list(errors),
        "IntervalSeconds": 1,
        "MaxAttempts": 25 if after_body else 10,
        "BackoffRate": 2,
        "MaxDelaySeconds": 30 if after_body else 10,
        "JitterStrategy": "FULL",
    }


# Made once: each Duration made is a call into the CDK's Node.js process.
_SECONDS = {seconds: Duration.seconds(seconds) for seconds in (1, 10, 30)}


def retry_transient(task: Any, errors: list[str], *, after_body: bool = False) -> None:
    """``transient_retrier`` added to a state the CDK renders (``add_retry``)."""
    retrier = transient_retrier(errors, after_body=after_body)
    task.add_retry(
        errors=errors,
        interval=_SECONDS[retrier["IntervalSeconds"]],
        backoff_rate=retrier["BackoffRate"],
        max_attempts=retrier["MaxAttempts"],
        max_delay=_SECONDS[retrier["MaxDelaySeconds"]],
        jitter_strategy=sfn.JitterType(retrier["JitterStrategy"]),
    )


def item_fields(
    action: str, arguments: str, *, output: str | None = SAME_INPUT, assign: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The fields of a JSONata Task calling DynamoDB's ``action`` with the request ``arguments`` builds."""
    state: dict[str, Any] = {
        "Type": "Task",
        "QueryLanguage": "JSONata",
        "Resource": f"arn:{read_once.pseudo().partition}:states:::dynamodb:{action}",
        "Arguments": expression(arguments),
    }
    if output is not None:
        state["Output"] = output
    if assign:
        state["Assign"] = assign
    return state


def _item_json(
    action: str,
    *,
    arguments: str,
    output: str | None = SAME_INPUT,
    assign: dict[str, Any] | None = None,
    comment: str | None = None,
    after_body: bool = False,
) -> dict[str, Any]:
    """A task's JSON on the guard's items: retried on DynamoDB's transient errors (retry_transient), the retrier in its
    JSON: the CDK renders it after the state's own fields, and the catchers after it, as it would render add_retry's."""
    fields = item_fields(action, arguments, output=output, assign=assign)
    fields["Retry"] = [transient_retrier(TRANSIENT_DYNAMODB_ERRORS, after_body=after_body)]
    return {"Comment": comment, **fields} if comment else fields


def item_statements(config: GuardConfig, action: str) -> list[iam.PolicyStatement]:
    """What a state machine needs to call ``action`` on the guard's items: the action on its namespace
    only, and the use of the table's customer managed KMS key if it has one. Made once a guard and action:
    the guard's tasks of one action register the same statements (each made is a call into jsii)."""
    made = _STATEMENTS.setdefault(config, {})
    if action not in made:
        made[action] = _item_statements(config, action)
    return made[action]


_STATEMENTS: weakref.WeakKeyDictionary[GuardConfig, dict[str, list[iam.PolicyStatement]]] = weakref.WeakKeyDictionary()
# (graph, action) where a task of a guard registered its item statements (ItemTask.bind_to_graph).
_REGISTERED: weakref.WeakKeyDictionary[GuardConfig, set[tuple[object, str]]] = weakref.WeakKeyDictionary()


def _item_statements(config: GuardConfig, action: str) -> list[iam.PolicyStatement]:
    iam_action = f"dynamodb:{action[0].upper()}{action[1:]}"
    # IdempotencyTable.grant_workflow_access grants WORKFLOW_ITEM_ACTIONS: a state calling another would
    # be denied under a role granted that way.
    assert iam_action in WORKFLOW_ITEM_ACTIONS, f"{iam_action} is not one of WORKFLOW_ITEM_ACTIONS"
    statements = [item_statement(config.table, config.namespace, iam_action)]
    if config.keeps_for_redrive:  # read by kept_for_redrive
        statements[0].idempotency_kept_for_redrive = config.namespace  # type: ignore[attr-defined]
    key = read_once.table(config.table).encryption_key
    if key is not None:
        statements.append(key_statement(key))
    return statements


class _OnItems:
    """What a task on the guard's items is, whether the CDK renders it (``ItemTask``) or Python does
    (``JsonItemTask``): its JSON (``_item_json``), its statements, its catchers' ``Output``, when it was rendered."""

    add_prefix: Callable[[str], None]
    add_catch: Callable[..., Any]

    def _on_items(self, config: GuardConfig, action: str) -> None:
        self.add_prefix(config.prefix)
        self.rendered_at: int | None = None
        self.statements = item_statements(config, action)
        self._config, self._action = config, action
        self._joined: object = None  # the graph it is joining or joined
        self._catch_outputs: dict[tuple[str, ...], str] = {}
        # While it joins a graph (finish.Wiring.joining, for a write that goes to the body); its rendered
        # state made final (finish.Wiring.reads, for one that reads the body's output).
        self.joining: Callable[[], AbstractContextManager[None]] = nullcontext
        self.rendering: Callable[[Any], Any] = as_rendered

    def catch(
        self, handler: Any, errors: list[str], *, output: str | None = SAME_INPUT, assign: dict[str, Any] | None = None
    ) -> Any:
        self.add_catch(handler, errors=errors, assign=assign)
        if output is not None:
            self._catch_outputs[tuple(errors)] = output
        return self

    def _rendered(self, state: dict[str, Any]) -> Any:
        self.rendered_at = renders.tick()
        for catcher in state.get("Catch", []):
            output = self._catch_outputs.get(tuple(catcher["ErrorEquals"]))
            if output is not None:
                catcher["Output"] = output
        return self.rendering(state)

    def _join(self, graph: Any, joined: object, bind: Callable[[Any], None]) -> None:
        """Join ``graph`` (known by ``joined``) with ``bind``, the first time only (the CDK binds a state again from each
        of its neighbours, also while its first binding still traverses them, where its own call would return at once);
        and register its statements then, at the first call back or at the end of its own traversal, where no task of
        its guard and action has registered them in that graph yet: again, they would be a duplicate, which the policy
        drops, its first kept in place."""
        if joined is None or joined != self._joined:
            self._joined = joined
            with self.joining():
                bind(graph)
        registered = _REGISTERED.setdefault(self._config, set())
        if joined is None or (joined, self._action) not in registered:
            for statement in self.statements:
                graph.register_policy_statement(statement)
            registered.add((joined, self._action))


class ItemTask(_OnItems, sfn.CustomState):
    """A JSONata Task of the optimized DynamoDB integration on one item of a guard's namespace.

    The CDK's Dynamo* tasks grant their action on the whole table. This task grants, to whichever
    state machine it joins, its one action on the table only for items whose id starts with
    ``{namespace}#`` (a ``dynamodb:LeadingKeys`` condition), plus the use of the table's customer
    managed KMS key if it has one. So a workflow can never read or write another namespace's records.
    (A CustomState because the CDK's tasks build ``Arguments`` field by field; and ``catch`` because
    CustomState's own ``add_catch`` drops a JSONata catcher's ``Output``.) ``rendered_at`` tells when it was
    rendered, for what is seen of its place at synth (``placement.Placement``).
    """

    def __init__(self, scope: Construct, construct_id: str, *, config: GuardConfig, action: str, **request: Any) -> None:
        super().__init__(scope, construct_id, state_json=_item_json(action, **request))
        self._on_items(config, action)
        self.graph: sfn.StateGraph | None = None  # the graph it joined: its state machine's, or a branch's

    def to_state_json(self, query_language: sfn.QueryLanguage | None = None) -> Any:
        return self._rendered(dict(super().to_state_json(query_language)))

    def bind_to_graph(self, graph: sfn.StateGraph) -> None:
        # Each call from the CDK is a callback into Python, once from each neighbour (each call back into jsii, one more
        # round trip: ``_join`` makes the first only). The templates' order of a role's statements is where they are
        # registered: as it joins (whenBoundToGraph) or as its traversal ends (a one-callback hook), they change it.
        self._join(graph, reference(graph), super().bind_to_graph)
        self.graph = graph


class JsonItemTask(_OnItems, json_states.Custom):
    """An ``ItemTask`` of a guard whose states Python renders (``json_states``): the same JSON, catchers and
    statements, registered at the same point of its graph's traversal."""

    def __init__(self, scope: Construct, construct_id: str, *, config: GuardConfig, action: str, **request: Any) -> None:
        super().__init__(scope, construct_id, state_json=_item_json(action, **request))
        self._on_items(config, action)

    def to_state_json(self, query_language: str | None = None) -> Any:
        return self._rendered(super().to_state_json(query_language))

    def bind(self, graph: json_graph.Graph) -> None:
        self._join(graph, ("graph", id(graph)), super().bind)


def item_task(scope: Any, construct_id: str, **props: Any) -> GuardState:
    """An ``ItemTask`` of the guard ``scope``: the CDK's, or one Python renders (``in_python``)."""
    return (JsonItemTask if in_python(scope) else ItemTask)(scope, construct_id, **props)


def reference(thing: object) -> str | None:
    """What names one of the CDK's objects (jsii hands a new Python proxy of the same object to each callback)."""
    return getattr(getattr(thing, "__jsii_ref__", None), "ref", None)


def fail(
    scope: Construct,
    config: GuardConfig,
    state: str,
    *,
    error: str,
    cause: str | None = None,
    record: Facts | None = None,
    in_cdk: bool = False,
) -> GuardState:
    """A Fail state of the guard's, named with its prefix; ``error`` and ``cause`` may be JSONata. With
    ``record`` (the guard's facts), ``cause`` is text, followed by the id of the record: `` (record {id})``.
    ``in_cdk``: the CDK's, for a state of the CDK's to go to (an ``ExtendLease`` in the body), whatever makes
    the guard's others (``kit``)."""
    if record is not None and cause is not None:
        cause = expression(f"{literal(cause + ' (record ')} & {record(ID)} & ')'")
    return (sfn if in_cdk else kit(scope)).Fail.jsonata(scope, state, state_name=config.name(state), error=error, cause=cause)


class FunctionTask(tasks.LambdaInvoke):
    """A JSONata call of one of the stack's shared functions (``invoke``), its rendered state made final by
    ``rendering`` (as an ``ItemTask``'s).

    It calls the version published with its definition, and its role may invoke every version of that
    one function: an execution started before a deploy still calls the version it started with, which
    the deploy keeps (retained: ``SharedFunction``), and the role the deploy rewrote still allows it."""

    rendering: Callable[[Any], Any] = staticmethod(as_rendered)

    def __init__(self, scope: Construct, construct_id: str, *, function: lambda_.Function, **props: Any) -> None:
        super().__init__(scope, construct_id, lambda_function=read_once.function(function).current_version, **props)
        self._function = function

    @property
    def _task_policies(self) -> list[iam.PolicyStatement]:  # read as the graph is bound, after __init__
        return [_invoke_statement(self._function)]

    def to_state_json(self, query_language: sfn.QueryLanguage | None = None) -> Any:
        return self.rendering(super().to_state_json(query_language))


@read_once.per_object
def _invoke_statement(function: lambda_.Function) -> iam.PolicyStatement:
    """Invoking every version of ``function``: made once a function, as each statement made is a call into jsii."""
    return iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=[f"{read_once.function(function).arn}:*"])


def invoke(
    scope: Construct,
    config: GuardConfig,
    state: str,
    function: Any,
    payload: dict[str, Any] | str,
    *,
    after_body: bool = False,
    **options: Any,
) -> GuardState:
    """A call of one of the stack's shared functions, through the version published with the definition,
    retried on the Lambda service's transient errors."""
    if in_python(scope):
        made = json_states.LambdaInvoke(
            scope,
            state,
            state_name=config.name(state),
            function_arn=_version_arn(function.function),
            payload=payload,
            **options,
        )
        made.task_policies = [_invoke_statement(function.function)]
        retry_transient(made, TRANSIENT_LAMBDA_ERRORS, after_body=after_body)
        return made
    task = FunctionTask(
        scope,
        state,
        query_language=sfn.QueryLanguage.JSONATA,
        state_name=config.name(state),
        function=function.function,
        payload=sfn.TaskInput.from_object(payload) if isinstance(payload, dict) else sfn.TaskInput.from_text(payload),
        payload_response_only=True,
        retry_on_service_exceptions=False,
        **options,
    )
    retry_transient(task, TRANSIENT_LAMBDA_ERRORS, after_body=after_body)
    return task


@read_once.per_object
def _version_arn(function: lambda_.Function) -> str:
    """The ARN of the version of ``function`` published with the definition (as ``tasks.LambdaInvoke`` writes it)."""
    return str(read_once.function(function).current_version.function_arn)
