"""What starts a workflow in the same app, and whether its key and payload hold against that source's duplicates,
and its failures against the source's redeliveries.

AWS redelivers a message in an envelope that changes (the table of ``testing/sources/__init__.py``). At synth, once
the whole app is built, the pipes, EventBridge rules and API Gateway methods that start the workflow are
found in the construct tree (starters.py); here is what is said about them. A pipe that starts it asynchronously (a Standard workflow, or FIRE_AND_FORGET)
is warned about: it never redelivers a failed message. A key or payload that reads one record of a pipe's
batch (``[0]``) under a batch size other than 1 is an error: every record of the batch would be keyed, or
checked, on the first one's, and the others lost. A key or payload that a *redelivery* defeats is warned
about with the recipe (docs/guides/event-sources.md), one that only a producer's re-sent message defeats
gets an info note. Whether an expression reads a field is a plain text check of its paths or
JSONata/JMESPath text. A pipe with an enrichment or an input template, a rule with an input, input path
or transformer, and a starter function behind an event source mapping shape the input themselves: nothing is
said about their envelopes. A mapping into a starter function of an ``IdempotentBatch`` that does not report
batch item failures is warned about: Lambda ignores the partial batch response, and the failed records are lost.
"""

from __future__ import annotations

import re
import weakref
from enum import Enum
from typing import Protocol

import aws_cdk as cdk
import jsii
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct, IConstruct, IValidation

from ..lambda_src import schema
from . import definition
from .selection import Selection
from .starters import SQS_ENVELOPE_CHARACTERS, ByPath, Source, Start, starts

REDELIVERY_RUNS_AGAIN = "idempotent-constructs:redelivery-runs-again"
REDELIVERY_MISMATCHES = "idempotent-constructs:redelivery-mismatches-payload"
NEVER_REDELIVERED = "idempotent-constructs:pipe-never-redelivers"
EXPIRES_BEFORE_REDELIVERY = "idempotent-constructs:expires-before-redelivery"
WAITS_PAST_API_TIMEOUT = "idempotent-constructs:duplicate-waits-past-api-timeout"
PARTIAL_RESPONSE_IGNORED = "idempotent-constructs:mapping-ignores-partial-batch-response"
BATCH_PAST_TARGET_LIMIT = "idempotent-constructs:pipe-batch-past-262144-characters"
# What a pipe sends a Step Functions target, the batch as a whole: "Step Functions state machines (262144
# characters)" (EventBridge user guide, "Amazon EventBridge Pipes batching and concurrency").
PIPE_TARGET_CHARACTERS = 262_144
SEE = "(docs/guides/event-sources.md)"


# Where a field at the top of the record may start: after the root ($, $states.input, a record's [0]) or
# at the start of a JMESPath (sub)expression.
_ROOT = r"(?:(?:\$states\.input|\$|\])\s*(?:\.\.?|\[\s*['\"])|(?:^|[\[,{(:])\s*)"
# A selection of one record of the array a pipe sends (Pipes sends an array even of one record).
_ONE_RECORD = re.compile(r"\[\s*0\s*\]")


# What is read here of the constructs that ask for advice, each a Protocol that they meet as they are: this
# layer imports no construct module, not even for its types (the constructs import this one).
class GuardSettings(Protocol):
    """A guard's options, resolved (``guard.config.GuardConfig``)."""

    @property
    def key(self) -> Selection: ...
    @property
    def payload(self) -> Selection: ...
    @property
    def expires_after(self) -> cdk.Duration: ...
    @property
    def max_wait(self) -> cdk.Duration: ...
    @property
    def on_in_flight(self) -> Enum: ...


class BatchGuard(Protocol):
    """The guard of each record of a batch (``IdempotencyGuard``): its options, and which numbers of a
    definition are its own (where they are, it is)."""

    @property
    def config(self) -> GuardSettings: ...
    def owns(self, token: object) -> bool: ...


class Batch(IConstruct, Protocol):
    """A batch whose records are each guarded (``IdempotentBatch``)."""

    @property
    def guard(self) -> BatchGuard: ...


def advise(workflow: IConstruct, machine: sfn.StateMachine, config: GuardSettings) -> None:
    """Warn, at synth, about each source in the app that starts ``workflow`` (its state machine ``machine``,
    guarded whole with the options ``config``) whose redeliveries its key or payload does not survive (and
    note those that only a producer's re-sent message defeats)."""
    _advice_of(workflow).workflows.append((workflow, machine, config))


def advise_batch(batch: Batch) -> None:
    """The same for each state machine of the app that holds ``batch`` (whose definition meets its guard's own
    numbers, ``definition.machines_meeting``): its records are keyed one by one, so a batch of any size is
    what it expects."""
    _advice_of(batch).batches.append(batch)


def _advice_of(construct: IConstruct) -> _Advice:
    # One search of the app per synth for all its workflows (a search costs as much as a small synth),
    # where the app's Python object stays the same (one made in Python): a validation runs once it is built.
    app = cdk.Stage.of(construct) or construct.node.root
    advice = _ADVICE.get(app)
    if advice is None:
        advice = _ADVICE[app] = _Advice(app)
        app.node.add_validation(advice)
    return advice


@jsii.implements(IValidation)
class _Advice:
    def __init__(self, app: IConstruct) -> None:
        self.app = app
        self.workflows: list[tuple[IConstruct, sfn.StateMachine, GuardSettings]] = []
        self.batches: list[Batch] = []

    def validate(self) -> list[str]:
        nodes = self.app.node.find_all()
        by_path = ByPath(nodes)
        starters = [start for node in nodes for start in starts(node, by_path)]
        for workflow, state_machine, config in self.workflows:
            machine = state_machine.node.default_child
            assert isinstance(machine, sfn.CfnStateMachine)
            _advise_machine(workflow, machine, config, starters, per_record=False)
        for batch in self.batches:
            assert isinstance(batch, Construct)  # an IdempotentBatch: machines_meeting searches from a construct
            for machine in definition.machines_meeting(batch, batch.guard.owns):
                _advise_machine(batch, machine, batch.guard.config, starters, per_record=True)
        return []


def _advise_machine(
    target: IConstruct, machine: sfn.CfnStateMachine, config: GuardSettings, starters: list[Start], *, per_record: bool
) -> None:
    """What is said of each start of ``machine``, on ``target``: a workflow, or a batch each of whose records is
    keyed on its own (``per_record``)."""
    express = machine.state_machine_type == "EXPRESS"
    for start in starters:
        if f"<<ref|{machine.node.path}|" not in start.started:
            continue
        if start.asynchronous or (start.asynchronous is not None and not express):
            _never_redelivered(target, start.path, express)
        if start.kept is not None and start.kept[1] > config.expires_after.to_seconds():
            _expires_before_redelivery(target, start, config.expires_after.to_seconds())
        waits = config.on_in_flight.value == "WAIT" and config.max_wait.to_seconds()
        if start.waits is not None and waits and waits > start.waits:
            _waits_past_api_timeout(target, start.path, start.waits, waits)
        if per_record and start.reports is False:
            _partial_response_ignored(target, start.path)
        if start.message_bytes is not None and isinstance(start.batch, int):
            _past_target_limit(target, start.path, start.batch, start.message_bytes)
        if not start.shaped:
            _advise(target, start.path, start.source, start.batch, config.key, config.payload, per_record=per_record)


_ADVICE: weakref.WeakKeyDictionary[IConstruct, _Advice] = weakref.WeakKeyDictionary()


def _expires_before_redelivery(workflow: IConstruct, start: Start, expires_after: float) -> None:
    # A standard queue's message keeps its first enqueue time in its dead-letter queue, whose retention then
    # bounds it (SQS developer guide, "Using dead-letter queues"); a redrive sends it back to the source.
    assert start.kept is not None
    what, seconds = start.kept
    cdk.Annotations.of(workflow).add_warning_v2(
        EXPIRES_BEFORE_REDELIVERY,
        f"{what} keeps a message up to {_duration(seconds)}, and {start.named} may deliver it again (a "
        f"redelivery, a redrive from the dead-letter queue) until then: a record expires {_duration(expires_after)} "
        f"after it completes (expires_after), so a message that comes again later runs the workflow again. Set "
        f"expires_after to at least {_duration(seconds)}, or the queues' retention below it {SEE}",
    )


def _waits_past_api_timeout(workflow: IConstruct, path: str, timeout: float, max_wait: float) -> None:
    cdk.Annotations.of(workflow).add_warning_v2(
        WAITS_PAST_API_TIMEOUT,
        f"the API method {path} waits for the execution (StartSyncExecution) at most {_duration(timeout)}, its "
        f"integration's timeout, and a duplicate that comes while the first request runs waits up to "
        f"{_duration(max_wait)} for it (max_wait): its client gets a 504 and may retry while both still run. Set "
        f"on_in_flight=InFlightPolicy.FAIL and answer {schema.IN_FLIGHT} with a 409 in the integration response, "
        f"or a max_wait below the timeout {SEE}",
    )


def _partial_response_ignored(batch: IConstruct, path: str) -> None:
    # "Lambda doesn't process these responses unless the ReportBatchItemFailures feature is explicitly turned on for
    # your event source mapping", even where the function returns one (Lambda developer guide, the partial batch
    # response pages of SQS and of DynamoDB streams); a success then deletes the whole batch.
    cdk.Annotations.of(batch).add_warning_v2(
        PARTIAL_RESPONSE_IGNORED,
        f"the event source mapping {path} invokes a function that starts the workflow, and its function response "
        "types leave out ReportBatchItemFailures: Lambda ignores the batch's partial batch response and deletes a "
        "failed record with the others, never to be delivered again. Pass report_batch_item_failures=True to the "
        f"event source (FunctionResponseTypes: [ReportBatchItemFailures]) and return the workflow's output {SEE}",
    )


def _past_target_limit(workflow: IConstruct, path: str, batch: int, message_bytes: int) -> None:
    largest = batch * (message_bytes + SQS_ENVELOPE_CHARACTERS)
    if largest <= PIPE_TARGET_CHARACTERS:
        return
    fits = PIPE_TARGET_CHARACTERS // batch - SQS_ENVELOPE_CHARACTERS
    fix = (
        f"Set the queue's maximumMessageSize to {fits:,} bytes or less"
        if fits >= 1_024  # the least maximumMessageSize SQS allows
        else f"Set the pipe's batch size to {max(1, PIPE_TARGET_CHARACTERS // (message_bytes + SQS_ENVELOPE_CHARACTERS))} or less"
    )
    cdk.Annotations.of(workflow).add_warning_v2(
        BATCH_PAST_TARGET_LIMIT,
        f"the pipe {path} may send {_records(batch)} of up to {message_bytes:,} bytes each (its queue's "
        f"maximumMessageSize), about {largest:,} characters in their records, more where a JSON body's quotes are "
        f"escaped: Pipes sends a Step Functions target at most {PIPE_TARGET_CHARACTERS:,} characters, the batch "
        f"as a whole, and AWS does not document what becomes of messages past it. {fix}, leaving room for "
        f"escapes, or send a reference to the content (an S3 key) {SEE}",
    )


def _records(batch: int) -> str:
    return "one message" if batch == 1 else f"a batch of {batch} messages"


def _duration(seconds: float) -> str:
    for unit, size in (("days", 86_400), ("hours", 3_600), ("minutes", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds // size:.0f} {unit if seconds != size else unit[:-1]}"
    return f"{seconds:.0f} seconds"


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


def _advise(
    workflow: IConstruct,
    path: str,
    source: Source,
    batch: int | None,
    key: Selection,
    payload: Selection,
    *,
    per_record: bool = False,
) -> None:
    recipe, business = source.recipe, source.business
    if per_record:  # an IdempotentBatch: its key and payload read a record, the input of its Map's iteration
        recipe, business = (_of_a_record(fix) for fix in (recipe, business))
    elif batch != 1:
        for option, selection, outcome in (("key", key, "keyed"), ("payload", payload, "checked")):
            if _reads_one_record(selection):
                records = f"up to {batch} records" if batch else "more than one record"
                cdk.Annotations.of(workflow).add_error(
                    f"the pipe {path} sends {records} to one execution ({source.parameters}.batchSize): with "
                    f"{_text(selection)} as the {option}, every record of a batch is {outcome} on the first one's, and "
                    f"a batch whose first record was seen replays without running the others: they are lost. Set the "
                    f"pipe's batch size to 1, or make the workflow an IdempotentBatch, which guards each record {SEE}"
                )
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


def _of_a_record(recipe: str) -> str:
    """A recipe that reads the first record of a pipe's array, written for the record itself."""
    return recipe.replace("$[0].", "$.").replace("$states.input[0]", "$states.input")


def _per_record(recipe: str) -> str:
    return recipe and f"an IdempotentBatch, which guards each record, with {_of_a_record(recipe)}"


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
