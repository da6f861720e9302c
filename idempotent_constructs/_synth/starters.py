"""What starts a workflow in the app, read from the construct tree at synth: each pipe, EventBridge rule
target, API Gateway method and Lambda event source mapping (into a function whose role may start the state
machine: a starter function) that starts an execution, with how its source delivers (``Source``: the fields
a redelivery and a producer's duplicate change, the recipes that hold, a pipe's batch size), whether a pipe
starts it asynchronously, and how long its SQS queues keep a message. What is said about them is
source_advice.py's."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import aws_cdk as cdk
import jsii
from aws_cdk import aws_apigateway as apigateway
from aws_cdk import aws_apigatewayv2 as apigatewayv2
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_pipes as pipes
from aws_cdk import aws_sqs as sqs
from constructs import IConstruct

from .deliveries import (
    API_TIMEOUT_MILLIS,
    DYNAMODB,
    EVENTBRIDGE,
    HTTP_API,
    HTTP_API_TIMEOUT_MILLIS,
    KINESIS,
    LAMBDA_TIMEOUT_SECONDS,
    RULE_EVENT_AGE_SECONDS,
    S3,
    SQS,
    SQS_MESSAGE_BYTES,
    SQS_RETENTION_SECONDS,
    SQS_VISIBILITY_SECONDS,
    Source,
    api_gateway,
)

# (resource type, attribute) of a stream reference, and the forms of an ARN written out.
_STREAMS = {
    ("AWS::SQS::Queue", "Arn"): SQS,
    ("AWS::Kinesis::Stream", "Arn"): KINESIS,
    ("AWS::DynamoDB::Table", "StreamArn"): DYNAMODB,
    ("AWS::DynamoDB::GlobalTable", "StreamArn"): DYNAMODB,
}
_ARNS = ((r"arn:[^:]+:sqs:", SQS), (r"arn:[^:]+:kinesis:", KINESIS), (r"arn:[^:]+:dynamodb:.*/stream/", DYNAMODB))
_REFERENCE = re.compile(r"<<ref\|([^|]*)\|([^|]*)\|([^|]*)>>")


@dataclass(frozen=True)
class Start:
    """A pipe, a target of a rule or an API method that starts an execution."""

    started: str  # what it starts, resolved text where a resource is <<ref|path|...>>
    path: str
    source: Source
    batch: int | None = 1  # the records an execution gets: a pipe's batch size (None: AWS's default, more than one)
    asynchronous: bool | None = None  # a pipe's FIRE_AND_FORGET (None: not a pipe)
    shaped: bool = False  # its input made by an enrichment or an input template: no envelope to advise on
    kept: tuple[str, int] | None = None  # (which queues, how long) a pipe's SQS source may deliver a message again
    waits: float | None = None  # an API method that waits for the execution (StartSyncExecution): its timeout, seconds
    message_bytes: int | None = None  # the largest message a pipe's SQS source accepts (its MaximumMessageSize)
    reports: bool | None = None  # a mapping's ReportBatchItemFailures (None: not a mapping)
    dead_letters: str | None = None  # "the dead-letter queue Stack/DeadLetters" of its SQS source, where the app has it
    retried: int | None = None  # a rule target's: how long EventBridge retries an event it failed to deliver, seconds
    visibility: tuple[str, int] | None = None  # an SQS source: "the queue Stack/Queue" and its visibility timeout, s
    guided: tuple[int, str] | None = None  # a mapping's: the least visibility timeout AWS asks of its queue, and why
    fifo: bool = False  # an SQS FIFO queue's

    @property
    def named(self) -> str:
        """What it is, and its path: "the pipe Stack/OrdersPipe"."""
        return f"{'the event source mapping' if self.reports is not None else 'the pipe'} {self.path}"


def _from_s3(pattern: Any) -> bool:
    """Whether a rule's event pattern matches S3's events alone (``"source": ["aws.s3"]``)."""
    return isinstance(pattern, dict) and pattern.get("source") == ["aws.s3"]


def starts(node: IConstruct, by_path: Mapping[str, IConstruct]) -> Iterator[Start]:
    """What ``node`` starts, where it is a pipe, a rule or an API method that starts an execution."""
    if isinstance(node, pipes.CfnPipe):
        target = _resolve(node, node.target_parameters) or {}
        source = _resolve(node, node.source)
        found = _stream(source)
        if found is not None:
            parameters = _parameters_of(_resolve(node, node.source_parameters), found.parameters)
            batch = parameters.get("batchSize", found.batch)
            machine = _parameters_of(target, "stepFunctionStateMachineParameters")
            yield Start(
                str(_resolve(node, node.target)),
                named(node),
                found,
                batch if isinstance(batch, int) else None,
                machine.get("invocationType") == "FIRE_AND_FORGET",
                shaped=bool(node.enrichment) or "inputTemplate" in target,
                kept=_kept(source, by_path) if found is SQS else None,
                message_bytes=_message_bytes(source, by_path) if found is SQS else None,
                dead_letters=_dead_letters_named(source, by_path) if found is SQS else None,
                visibility=_visibility(source, by_path) if found is SQS else None,
                fifo=_fifo(source, by_path),
            )
    elif isinstance(node, lambda_.CfnEventSourceMapping):
        yield from _mapping(node, by_path)
    elif isinstance(node, events.CfnRule):
        for rule_target in _resolve(node, node.targets) or []:
            if isinstance(rule_target, dict) and not {"input", "inputPath", "inputTransformer"} & set(rule_target):
                age = (rule_target.get("retryPolicy") or {}).get("maximumEventAgeInSeconds", RULE_EVENT_AGE_SECONDS)
                source = S3 if _from_s3(_resolve(node, node.event_pattern)) else EVENTBRIDGE
                yield Start(str(rule_target.get("arn")), named(node), source, retried=age if isinstance(age, int) else None)
    elif isinstance(node, apigateway.CfnMethod):
        integration = _resolve(node, node.integration) or {}
        action = re.search(r":states:action/Start(Sync)?Execution$", str(integration.get("uri")))
        if action is not None:
            timeout = integration.get("timeoutInMillis", API_TIMEOUT_MILLIS)
            waits = timeout / 1000 if action[1] and isinstance(timeout, int) else None
            for template in (integration.get("requestTemplates") or {}).values():
                yield Start(str(template), named(node), api_gateway(str(template)), waits=waits)
    elif isinstance(node, apigatewayv2.CfnIntegration):
        action = re.fullmatch(r"StepFunctions-Start(Sync)?Execution", str(_resolve(node, node.integration_subtype)))
        parameters = _resolve(node, node.request_parameters)
        if action is not None and isinstance(parameters, dict):
            timeout = _resolve(node, node.timeout_in_millis) or HTTP_API_TIMEOUT_MILLIS
            waits = timeout / 1000 if action[1] and isinstance(timeout, int) else None
            yield Start(str(parameters.get("StateMachineArn")), named(node), HTTP_API, waits=waits, shaped=True)


def _mapping(node: lambda_.CfnEventSourceMapping, by_path: Mapping[str, IConstruct]) -> Iterator[Start]:
    """An event source mapping into a function whose role may start a state machine (a starter function).
    What the function sends the workflow is its own: the mapping is ``shaped``."""
    source = _resolve(node, node.event_source_arn)
    found = _stream(source)
    function = _referenced(_resolve(node, node.function_name), by_path)
    if found is None or not isinstance(function, lambda_.CfnFunction):
        return
    role = _REFERENCE.fullmatch(str(_resolve(function, function.role)))
    started = " ".join(_may_start(role[1], by_path)) if role is not None else ""
    if started:
        batch = _resolve(node, node.batch_size) or found.batch
        yield Start(
            started,
            named(node),
            found,
            batch if isinstance(batch, int) else None,
            shaped=True,
            kept=_kept(source, by_path) if found is SQS else None,
            reports="ReportBatchItemFailures" in (_resolve(node, node.function_response_types) or []),
            dead_letters=_dead_letters_named(source, by_path) if found is SQS else None,
            visibility=_visibility(source, by_path) if found is SQS else None,
            guided=_guided(function),
            fifo=_fifo(source, by_path),
        )


class ByPath(Mapping[str, IConstruct]):
    """The constructs ``nodes`` by path, their paths read (two calls into the CDK each) only once one is
    looked up: most apps start their workflows from nothing the app holds."""

    def __init__(self, nodes: Sequence[IConstruct]) -> None:
        self._nodes = nodes

    @functools.cached_property
    def _paths(self) -> dict[str, IConstruct]:
        return {node.node.path: node for node in self._nodes}

    def __getitem__(self, path: str) -> IConstruct:
        return self._paths[path]

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)


# What lets a function start an execution: the actions StartExecution and StartSyncExecution.
_STARTS = re.compile(r"states:(\*|Start\*|Start(Sync)?Execution)")


def _may_start(role: str, by_path: Mapping[str, IConstruct]) -> Iterator[str]:
    """The resources (resolved texts) that the policies of the role at the path ``role`` allow it to start."""
    for policy in by_path.values():
        if not isinstance(policy, iam.CfnPolicy) or not any(
            f"<<ref|{role}|" in str(r) for r in _resolve(policy, policy.roles) or []
        ):
            continue
        document = _resolve(policy, policy.policy_document)
        for statement in document.get("Statement", []) if isinstance(document, dict) else []:
            actions, resources = statement.get("Action", []), statement.get("Resource", [])
            if statement.get("Effect") == "Allow" and any(_STARTS.fullmatch(a) for a in _listed(actions)):
                yield from (str(resource) for resource in _listed(resources))


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _referenced(value: Any, by_path: Mapping[str, IConstruct]) -> IConstruct | None:
    reference = _REFERENCE.fullmatch(str(value))
    return by_path.get(reference[1]) if reference is not None else None


def _kept(source: Any, by_path: Mapping[str, IConstruct]) -> tuple[str, int] | None:
    """How long the queue ``source`` (resolved) keeps a message, or its dead-letter queue if that is longer,
    where the queues are in the app and their retention is known at synth. A standard queue's message keeps
    its enqueue time in the dead-letter queue; a FIFO queue's gets a new one there ("For FIFO queues, the
    enqueue timestamp resets when the message is moved to a dead-letter queue": SQS developer guide, "Setting-up
    dead-letter queue retention"), so it is kept up to both retentions, one after the other."""
    queue = _queue(source, by_path)
    if queue is None:
        return None
    kept = [(f"the queue {named(queue)}", _resolve(queue, queue.message_retention_period) or SQS_RETENTION_SECONDS)]
    dead_letters = _dead_letters(queue, by_path)
    if dead_letters is not None:
        retention = _resolve(dead_letters, dead_letters.message_retention_period) or SQS_RETENTION_SECONDS
        kept.append((f"the dead-letter queue {named(dead_letters)}", retention))
    if not all(isinstance(seconds, int) for _, seconds in kept):
        return None
    if dead_letters is not None and _resolve(queue, queue.fifo_queue) is True:
        (first, source_seconds), (then, dead_letter_seconds) = kept
        return f"{first}, then {then} (FIFO: a new enqueue time there)", source_seconds + dead_letter_seconds
    return max(kept, key=lambda item: item[1])


def _dead_letters(queue: sqs.CfnQueue, by_path: Mapping[str, IConstruct]) -> sqs.CfnQueue | None:
    """The dead-letter queue of ``queue`` (its redrive policy's target), where the app holds it."""
    redrive = _resolve(queue, queue.redrive_policy)
    return _queue(redrive.get("deadLetterTargetArn"), by_path) if isinstance(redrive, dict) else None


def _dead_letters_named(source: Any, by_path: Mapping[str, IConstruct]) -> str | None:
    """ "the dead-letter queue {path}" of the queue ``source`` (resolved), where the app holds both."""
    queue = _queue(source, by_path)
    dead_letters = _dead_letters(queue, by_path) if queue is not None else None
    return f"the dead-letter queue {named(dead_letters)}" if dead_letters is not None else None


def _message_bytes(source: Any, by_path: Mapping[str, IConstruct]) -> int | None:
    """The largest message the queue ``source`` (resolved) accepts, where it is in the app and known at synth."""
    queue = _queue(source, by_path)
    size = (_resolve(queue, queue.maximum_message_size) or SQS_MESSAGE_BYTES) if queue is not None else None
    return size if isinstance(size, int) else None


def _visibility(source: Any, by_path: Mapping[str, IConstruct]) -> tuple[str, int] | None:
    """The queue ``source`` (resolved) and its visibility timeout, where it is in the app and known at synth."""
    queue = _queue(source, by_path)
    seconds = (_resolve(queue, queue.visibility_timeout) or SQS_VISIBILITY_SECONDS) if queue is not None else None
    return (f"the queue {named(queue)}", seconds) if queue is not None and isinstance(seconds, int) else None


def _fifo(source: Any, by_path: Mapping[str, IConstruct]) -> bool:
    """Whether ``source`` (resolved) is a FIFO queue of the app."""
    queue = _queue(source, by_path)
    return queue is not None and _resolve(queue, queue.fifo_queue) is True


def _guided(function: lambda_.CfnFunction) -> tuple[int, str] | None:
    """ "To allow your function time to process each batch of records, set the source queue's visibility timeout
    to at least six times the timeout that you configure on your function" (Lambda developer guide, "Using
    Lambda with Amazon SQS"); a function's timeout is 3 seconds unless set (Lambda API reference,
    CreateFunction)."""
    timeout = _resolve(function, function.timeout) or LAMBDA_TIMEOUT_SECONDS
    if not isinstance(timeout, int):
        return None
    return 6 * timeout, f"six times the timeout of its function {named(function)}, {timeout} s, as AWS asks of a mapping"


def _queue(arn: Any, by_path: Mapping[str, IConstruct]) -> sqs.CfnQueue | None:
    found = _referenced(arn, by_path)
    return found if isinstance(found, sqs.CfnQueue) else None


def _parameters_of(resolved: Any, name: str) -> dict[str, Any]:
    found = resolved.get(name) if isinstance(resolved, dict) else None
    return found if isinstance(found, dict) else {}


def _stream(source: Any) -> Source | None:
    reference = _REFERENCE.fullmatch(str(source))
    if reference is not None:
        return _STREAMS.get((reference[2], reference[3]))
    return next((found for pattern, found in _ARNS if re.match(pattern, str(source))), None)


def named(node: IConstruct) -> str:
    """The path of the construct the user made: an L2's, for its ``Resource``."""
    scope = node.node.scope
    return scope.node.path if node.node.id == "Resource" and scope is not None else node.node.path


def _resolve(scope: IConstruct, value: Any) -> Any:
    return cdk.Tokenization.resolve(value, scope=scope, resolver=_Marked())


@jsii.implements(cdk.ITokenResolver)
class _Marked:
    """Resolves each reference to a resource as ``<<ref|path|type|attribute>>``: it names the resource
    itself, where a resolved ``Ref`` would name a logical id that another stack of the app may share."""

    def __init__(self) -> None:
        self.default = cdk.DefaultTokenResolver(cdk.StringConcat())

    def resolve_token(self, t: cdk.IResolvable, context: cdk.IResolveContext, post_processor: cdk.IPostProcessor) -> Any:
        if isinstance(t, cdk.Reference):
            return f"<<ref|{t.target.node.path}|{getattr(t.target, 'cfn_resource_type', '')}|{t.display_name}>>"
        return self.default.resolve_token(t, context, post_processor)

    def resolve_string(self, s: cdk.TokenizedStringFragments, context: cdk.IResolveContext) -> Any:
        return self.default.resolve_string(s, context)

    def resolve_list(self, l: Sequence[str], context: cdk.IResolveContext) -> Any:  # noqa: E741 (ITokenResolver's name)
        return self.default.resolve_list(l, context)
