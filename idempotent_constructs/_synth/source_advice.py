"""What starts a workflow in the same app, and whether its key and payload hold against that source's duplicates.

AWS redelivers a message in an envelope that changes (the table of ``testing/sources.py``). At synth, once
the whole app is built, the pipes, EventBridge rules and API Gateway methods that start the workflow are
found in the construct tree. A pipe that starts it asynchronously (a Standard workflow, or FIRE_AND_FORGET)
is warned about: it never redelivers a failed message. A key or payload that reads one record of a pipe's
batch (``[0]``) under a batch size other than 1 is an error: every record of the batch would be keyed, or
checked, on the first one's, and the others lost. A key or payload that a *redelivery* defeats is warned
about with the recipe (docs/guides/event-sources.md), one that only a producer's re-sent message defeats
gets an info note. Whether an expression reads a field is a plain text check of its paths or
JSONata/JMESPath text. A pipe with an enrichment or an input template, and a rule with an input, input path
or transformer, shape the input themselves: nothing is said about their envelopes.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import aws_cdk as cdk
import jsii
from aws_cdk import aws_apigateway as apigateway
from aws_cdk import aws_events as events
from aws_cdk import aws_pipes as pipes
from constructs import IConstruct, IValidation

from ..lambda_src import schema
from .selection import Selection

if TYPE_CHECKING:
    from ..state_machine import IdempotentStateMachine

REDELIVERY_RUNS_AGAIN = "idempotent-constructs:redelivery-runs-again"
REDELIVERY_MISMATCHES = "idempotent-constructs:redelivery-mismatches-payload"
NEVER_REDELIVERED = "idempotent-constructs:pipe-never-redelivers"
SEE = "(docs/guides/event-sources.md)"


@dataclass(frozen=True)
class _Source:
    """How one kind of source delivers: the fields of its record (dotted) that its redelivery and a
    producer's re-sent duplicate change, each told of (``{path}``: the source) with the recipe that holds."""

    redelivery: str = ""  # "an SQS message redelivered through the pipe {path}"
    redelivered: tuple[str, ...] = ()
    recipe: str = ""
    duplicate: str = ""
    duplicated: tuple[str, ...] = ()
    business: str = ""  # a key in the content, which a producer's duplicate repeats too
    parameters: str = ""  # its pipe's source parameters, which hold its batchSize
    batch: int | None = None  # a pipe's batch size where batchSize is not set (None: more than one, by AWS's choice)


_SQS = _Source(
    "an SQS message redelivered through the pipe {path}",
    ("receiptHandle", "attributes.ApproximateReceiveCount"),
    'key=IdempotencyKey.from_paths("$[0].messageId"), payload=IdempotencyPayload.from_paths("$[0].body")',
    "an SQS message sent again by a producer's retried SendMessage, through the pipe {path},",
    ("messageId", "receiptHandle", "attributes.SentTimestamp", "attributes.ApproximateFirstReceiveTimestamp"),
    'key=IdempotencyKey.from_jsonata("$parse($states.input[0].body).orderId") (your id in the body), '
    'payload=IdempotencyPayload.from_paths("$[0].body")',
    # "By default, EventBridge polls up to 10 messages in your queue simultaneously and sends that batch to your
    # pipe" (EventBridge user guide, "Amazon SQS as a source").
    "sqsQueueParameters",
    10,
)
_KINESIS = _Source(
    duplicate="a Kinesis record put again by a producer's retried PutRecord, through the pipe {path},",
    duplicated=("sequenceNumber", "eventID", "approximateArrivalTimestamp"),
    business='key=IdempotencyKey.from_jsonata("$parse($base64decode($states.input[0].data)).orderId") (your id in the '
    'data), payload=IdempotencyPayload.from_paths("$[0].data")',
    parameters="kinesisStreamParameters",
)
# A retried batch is byte-identical, and a stream has no producer's duplicate.
_DYNAMODB = _Source(parameters="dynamoDbStreamParameters")
_EVENTBRIDGE = _Source(
    duplicate="an event published again by a producer's retried PutEvents, through the rule {path},",
    duplicated=("id", "time"),
    business='key=IdempotencyKey.from_paths("$.detail.orderId") (your id in the detail), '
    'payload=IdempotencyPayload.from_paths("$.detail")',
)
# (resource type, attribute) of a stream reference, and the forms of an ARN written out.
_STREAMS = {
    ("AWS::SQS::Queue", "Arn"): _SQS,
    ("AWS::Kinesis::Stream", "Arn"): _KINESIS,
    ("AWS::DynamoDB::Table", "StreamArn"): _DYNAMODB,
    ("AWS::DynamoDB::GlobalTable", "StreamArn"): _DYNAMODB,
}
_ARNS = ((r"arn:[^:]+:sqs:", _SQS), (r"arn:[^:]+:kinesis:", _KINESIS), (r"arn:[^:]+:dynamodb:.*/stream/", _DYNAMODB))
_REFERENCE = re.compile(r"<<ref\|([^|]*)\|([^|]*)\|([^|]*)>>")
# Where a field at the top of the record may start: after the root ($, $states.input, a record's [0]) or
# at the start of a JMESPath (sub)expression.
_ROOT = r"(?:(?:\$states\.input|\$|\])\s*(?:\.\.?|\[\s*['\"])|(?:^|[\[,{(:])\s*)"
# A selection of one record of the array a pipe sends (Pipes sends an array even of one record).
_ONE_RECORD = re.compile(r"\[\s*0\s*\]")


def advise(workflow: IdempotentStateMachine) -> None:
    """Warn, at synth, about each source in the app that starts ``workflow`` whose redeliveries its key
    or payload does not survive (and note those that only a producer's re-sent message defeats)."""
    # One search of the app per synth for all its workflows (a search costs as much as a small synth),
    # where the app's Python object stays the same (one made in Python): a validation runs once it is built.
    app = cdk.Stage.of(workflow) or workflow.node.root
    advice = _ADVICE.get(app)
    if advice is None:
        advice = _ADVICE[app] = _Advice(app)
        app.node.add_validation(advice)
    advice.workflows.append(workflow)


@jsii.implements(IValidation)
class _Advice:
    def __init__(self, app: IConstruct) -> None:
        self.app = app
        self.workflows: list[IdempotentStateMachine] = []

    def validate(self) -> list[str]:
        starters = [start for node in self.app.node.find_all() for start in _starts(node)]
        for workflow in self.workflows:
            machine = workflow.state_machine.node.default_child
            assert machine is not None
            config = workflow.guard.config
            express = getattr(machine, "state_machine_type", None) == "EXPRESS"
            for start in starters:
                if f"<<ref|{machine.node.path}|" in start.started:
                    if start.asynchronous or (start.asynchronous is not None and not express):
                        _never_redelivered(workflow, start.path, express)
                    if not start.shaped:
                        _advise(workflow, start.path, start.source, start.batch, config.key, config.payload)
        return []


_ADVICE: weakref.WeakKeyDictionary[IConstruct, _Advice] = weakref.WeakKeyDictionary()


def _never_redelivered(workflow: IConstruct, path: str, express: bool) -> None:
    # "Pipes cannot retry errors thrown from within the logic of a Step Functions standard workflow"; an
    # asynchronous invocation succeeds once the execution starts (EventBridge user guide, "EventBridge Pipes
    # error handling and troubleshooting"; the Pipes API's PipeTargetStateMachineParameters).
    how = "with FIRE_AND_FORGET" if express else "(a Standard workflow, which Pipes can only start asynchronously)"
    cdk.Annotations.of(workflow).add_warning_v2(
        NEVER_REDELIVERED,
        f"the pipe {path} starts the workflow {how}: the pipe is done once the execution starts, so a message "
        "whose execution fails is deleted from its source and never redelivered. Use an Express workflow and "
        "the pipe's default invocation type, REQUEST_RESPONSE: a failed execution is then redelivered until the "
        f"source's maxReceiveCount, then goes to its dead-letter queue {SEE}",
    )


def _advise(workflow: IConstruct, path: str, source: _Source, batch: int | None, key: Selection, payload: Selection) -> None:
    recipe, business = source.recipe, source.business
    if batch != 1:
        for option, selection, outcome in (("key", key, "keyed"), ("payload", payload, "checked")):
            if _reads_one_record(selection):
                records = f"up to {batch} records" if batch else "more than one record"
                cdk.Annotations.of(workflow).add_error(
                    f"the pipe {path} sends {records} to one execution ({source.parameters}.batchSize): with "
                    f"{_text(selection)} as the {option}, every record of a batch is {outcome} on the first one's, and "
                    f"a batch whose first record was seen replays without running the others: they are lost. Set the "
                    f"pipe's batch size to 1, or guard each record in a Map over the batch {SEE}"
                )
        # The recipes read one record: in a Map over the batch, that record is the iteration's input.
        recipe, business = (_per_record(fix) for fix in (recipe, business))
    for fields, what, which, fix, warn in (
        (source.redelivered, source.redelivery, "each redelivery", recipe, True),
        (source.duplicated, source.duplicate, "such a duplicate", business, False),
    ):
        for option, selection, outcome, code in (
            ("key", key, "runs the workflow again", REDELIVERY_RUNS_AGAIN),
            ("payload", payload, "fails with Idempotency.PayloadMismatch", REDELIVERY_MISMATCHES),
        ):
            reads = _reads(selection, fields)
            if reads is None:
                continue
            message = (
                f"{what.format(path=path)} gets {_new(fields)}: with {reads} as the {option}, {which} {outcome}; use {fix} {SEE}"
            )
            if warn:
                cdk.Annotations.of(workflow).add_warning_v2(code, message)
            else:  # a producer's re-sent message may be meant: a note, which --strict does not fail on
                cdk.Annotations.of(workflow).add_info(message)
            return


def _reads_one_record(selection: Selection) -> bool:
    text = _text(selection)
    return text is not None and _ONE_RECORD.search(text) is not None


def _per_record(recipe: str) -> str:
    if not recipe:
        return recipe
    fix = recipe.replace("$[0].", "$.").replace("$states.input[0]", "$states.input")
    return f"an IdempotencyGuard on each record, in a Map over the batch, with {fix}"


def _text(selection: Selection) -> str | None:
    """The paths (one a line) or the expression of ``selection``, where it has a text known at synth."""
    if selection.kind in (schema.KIND_NONE, schema.KIND_WHOLE_INPUT):
        return None
    text = "\n".join(selection.expression) if isinstance(selection.expression, list) else selection.expression
    return text if isinstance(text, str) and not cdk.Token.is_unresolved(text) else None


def _new(fields: tuple[str, ...]) -> str:
    names = list(dict.fromkeys(field.split(".")[-1] for field in fields))
    return "a new " + (f"{', '.join(names[:-1])} and {names[-1]}" if len(names) > 1 else names[0])


def _reads(selection: Selection, fields: tuple[str, ...]) -> str | None:
    """How ``selection`` reads the changing ``fields`` ("the whole input", "a selection of receiptHandle"), or None."""
    if not fields or selection.kind == schema.KIND_NONE:
        return None
    if selection.kind == schema.KIND_WHOLE_INPUT:
        return "the whole input"
    text = _text(selection)
    if text is None:
        return None
    read = [field for field in fields if _names(text, field)]
    return f"a selection of {' and '.join(read)}" if read else None


def _names(text: str, field: str) -> bool:
    """Whether ``text`` names ``field`` (dotted) or, selected whole, an object that holds it."""
    parts = field.split(".")
    for depth, name in enumerate(parts):
        before = rf"{re.escape(parts[depth - 1])}\s*(?:\.|\[\s*['\"])" if depth else _ROOT
        after = r"(?![\w-])" if depth == len(parts) - 1 else r"(?![\w-]|\s*[.\[])"
        if re.search(before + re.escape(name) + after, text, re.MULTILINE | re.IGNORECASE):
            return True
    return False


@dataclass(frozen=True)
class _Start:
    """A pipe, a target of a rule or an API method that starts an execution."""

    started: str  # what it starts, resolved text where a resource is <<ref|path|...>>
    path: str
    source: _Source
    batch: int | None = 1  # the records an execution gets: a pipe's batch size (None: AWS's default, more than one)
    asynchronous: bool | None = None  # a pipe's FIRE_AND_FORGET (None: not a pipe)
    shaped: bool = False  # its input made by an enrichment or an input template: no envelope to advise on


def _starts(node: IConstruct) -> Iterator[_Start]:
    """What ``node`` starts, where it is a pipe, a rule or an API method that starts an execution."""
    if isinstance(node, pipes.CfnPipe):
        target = _resolve(node, node.target_parameters) or {}
        found = _stream(_resolve(node, node.source))
        if found is not None:
            parameters = _parameters_of(_resolve(node, node.source_parameters), found.parameters)
            batch = parameters.get("batchSize", found.batch)
            machine = _parameters_of(target, "stepFunctionStateMachineParameters")
            yield _Start(
                str(_resolve(node, node.target)),
                _named(node),
                found,
                batch if isinstance(batch, int) else None,
                machine.get("invocationType") == "FIRE_AND_FORGET",
                shaped=bool(node.enrichment) or "inputTemplate" in target,
            )
    elif isinstance(node, events.CfnRule):
        for rule_target in _resolve(node, node.targets) or []:
            if isinstance(rule_target, dict) and not {"input", "inputPath", "inputTransformer"} & set(rule_target):
                yield _Start(str(rule_target.get("arn")), _named(node), _EVENTBRIDGE)
    elif isinstance(node, apigateway.CfnMethod):
        integration = _resolve(node, node.integration) or {}
        if re.search(r":states:action/Start(Sync)?Execution$", str(integration.get("uri"))):
            for template in (integration.get("requestTemplates") or {}).values():
                yield _Start(str(template), _named(node), _api_gateway(str(template)))


def _parameters_of(resolved: Any, name: str) -> dict[str, Any]:
    found = resolved.get(name) if isinstance(resolved, dict) else None
    return found if isinstance(found, dict) else {}


def _stream(source: Any) -> _Source | None:
    reference = _REFERENCE.fullmatch(str(source))
    if reference is not None:
        return _STREAMS.get((reference[2], reference[3]))
    return next((found for pattern, found in _ARNS if re.match(pattern, str(source))), None)


def _api_gateway(template: str) -> _Source:
    """What a client's retry changes in the input that ``template`` (a request mapping template, as
    ``StepFunctionsIntegration`` writes it) makes: its request id, and its trace header among the headers."""
    changed = tuple(
        field
        for field, pattern in (
            ("requestContext.requestId", r"\$context\.(requestId|extendedRequestId|requestTime)"),
            ("header.X-Amzn-Trace-Id", r"#set\(\$includeHeaders = true\)|\$input\.params\(\)\.header|X-Amzn-Trace-Id"),
        )
        if re.search(pattern, template, re.IGNORECASE)
    )
    recipe = (
        'key=IdempotencyKey.from_paths("$.body.orderId") (your id in the body), payload=IdempotencyPayload.from_paths("$.body")'
    )
    return _Source("a request retried by its client through the API method {path}", changed, recipe)


def _named(node: IConstruct) -> str:
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
