"""What starts a workflow in the same app, and whether its key and payload hold against that source's duplicates,
and its failures against the source's redeliveries.

AWS redelivers a message in an envelope that changes (the table of ``testing/sources/__init__.py``). At synth, once
the whole app is built, the pipes, EventBridge rules and API Gateway methods that start the workflow are
found in the construct tree (starters.py); here is what is said about them (and, in delivery_advice.py, of how
they deliver: a pipe that never redelivers a failed message, a retention past expires_after...). A key or
payload that reads one record of a pipe's
batch (``[0]``) under a batch size other than 1 is an error: every record of the batch would be keyed, or
checked, on the first one's, and the others lost. A key or payload that a *redelivery* defeats is warned
about with the recipe (docs/guides/event-sources.md), one that only a producer's re-sent message defeats
gets an info note; a messageId in a key or payload behind a queue with a dead-letter queue is warned about, since
a redrive sends each message again with a new id. Whether an expression reads a field is a plain text check of its paths or
JSONata/JMESPath text. A pipe with an enrichment or an input template, a rule with an input, input path
or transformer, and a starter function behind an event source mapping shape the input themselves: nothing is
said about their envelopes.
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
from . import definition, read_once
from .deliveries import EXPRESS_RUN_SECONDS, HTTP_API
from .delivery_advice import (
    SEE,
    expires_before_redelivery,
    never_redelivered,
    partial_response_ignored,
    past_target_limit,
    retried_past_expiry,
    visibility_shorter_than_run,
    waits_past_api_timeout,
)
from .selection import Selection
from .starters import ByPath, Start, starts
from .state_names import definition_of

REDELIVERY_RUNS_AGAIN = "idempotent-constructs:redelivery-runs-again"
REDELIVERY_MISMATCHES = "idempotent-constructs:redelivery-mismatches-payload"
REDRIVE_RUNS_AGAIN = "idempotent-constructs:dead-letter-redrive-runs-again"


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

    @property
    def source(self) -> Enum: ...


def advise(workflow: IConstruct, machine: sfn.StateMachine, config: GuardSettings, timeout: cdk.Duration | None) -> None:
    """Warn, at synth, about each source in the app that starts ``workflow`` (its state machine ``machine``,
    guarded whole with the options ``config``, its executions stopped after ``timeout``) whose redeliveries its
    key or payload does not survive (and note those that only a producer's re-sent message defeats)."""
    seconds = int(timeout.to_seconds()) if timeout is not None else None
    _advice_of(workflow).workflows.append((workflow, machine, config, seconds))


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
        self.workflows: list[tuple[IConstruct, sfn.StateMachine, GuardSettings, int | None]] = []
        self.batches: list[Batch] = []

    def validate(self) -> list[str]:
        nodes = self.app.node.find_all()
        by_path = ByPath(nodes)
        starters = [start for node in nodes for start in starts(node, by_path)]
        for workflow, state_machine, config, timeout in self.workflows:
            # Its state machine is under it: what starts none of the workflow's is nothing to read (no call into jsii).
            if not any(f"<<ref|{read_once.path(workflow)}/" in start.started for start in starters):
                continue
            machine = state_machine.node.default_child
            assert isinstance(machine, sfn.CfnStateMachine)
            _advise_machine(workflow, machine, config, starters, per_record=False, timeout=timeout)
        for batch in self.batches:
            assert isinstance(batch, Construct)  # an IdempotentBatch: machines_meeting searches from a construct
            for machine in definition.machines_meeting(batch, batch.guard.owns):
                _advise_machine(batch, machine, batch.guard.config, starters, per_record=True)
                for start in _starts_of(machine, starters):
                    _names_its_records(batch, start)
        return []


def _advise_machine(
    target: IConstruct,
    machine: sfn.CfnStateMachine,
    config: GuardSettings,
    starters: list[Start],
    *,
    per_record: bool,
    timeout: int | None = None,
) -> None:
    """What is said of each start of ``machine``, on ``target``: a workflow, or a batch each of whose records is
    keyed on its own (``per_record``); ``timeout``: its executions', where its definition does not say (a shared one)."""
    express = machine.state_machine_type == "EXPRESS"
    for start in _starts_of(machine, starters):
        if start.asynchronous or (start.asynchronous is not None and not express):
            never_redelivered(target, start.path, express, start.source.retries)
        if start.kept is not None and start.kept[1] > config.expires_after.to_seconds():
            expires_before_redelivery(target, start, config.expires_after.to_seconds())
        if start.retried is not None and start.retried > config.expires_after.to_seconds():
            retried_past_expiry(target, start.path, start.retried, config.expires_after.to_seconds())
        waits = config.on_in_flight.value == "WAIT" and config.max_wait.to_seconds()
        if start.waits is not None and waits and waits > start.waits:
            what = "the HTTP API integration" if start.source is HTTP_API else "the API method"
            waits_past_api_timeout(target, f"{what} {start.path}", start.waits, waits)
        if per_record and start.reports is False:
            partial_response_ignored(target, start.path)
        # A mapping's starter function waits for the run; a pipe waits only for an Express one (REQUEST_RESPONSE).
        needed = start.guided or (_longest_run(machine, timeout) if express and start.asynchronous is False else None)
        if start.visibility is not None and needed is not None and start.visibility[1] < needed[0]:
            visibility_shorter_than_run(target, start, *needed)
        if start.message_bytes is not None and isinstance(start.batch, int):
            past_target_limit(target, start.path, start.batch, start.message_bytes)
        if start.dead_letters is not None and (per_record or not start.shaped):  # a batch's records are SQS records
            _redrive_runs_again(target, start, config.key, config.payload, per_record=per_record)
        if not start.shaped:
            _advise(target, start, config.key, config.payload, per_record=per_record)


_ADVICE: weakref.WeakKeyDictionary[IConstruct, _Advice] = weakref.WeakKeyDictionary()


def _redrive_runs_again(workflow: IConstruct, start: Start, key: Selection, payload: Selection, *, per_record: bool) -> None:
    # "All redriven messages are considered new messages with a new messageID and enqueueTime" (SQS developer
    # guide, "Learn how to configure a dead-letter queue redrive"). A whole input reads it too, but is told of
    # already: every redelivery changes its receipt handle.
    for option, selection, outcome in (
        ("key", key, "runs the workflow again"),
        ("payload", payload, "fails with Idempotency.PayloadMismatch"),
    ):
        text = _text(selection)  # None for a whole input
        if text is None or not _names(text, "messageId"):
            continue
        fix = start.source.redriven if start.batch == 1 and not per_record else _of_a_record(start.source.redriven)
        cdk.Annotations.of(workflow).add_warning_v2(
            REDRIVE_RUNS_AGAIN,
            f"{start.named} reads a queue whose messages may go to {start.dead_letters}, and a redrive from it sends each "
            f"message again as a new one, with a new messageId: with a selection of messageId as the {option}, a "
            f"redriven message that had completed {outcome}. Use {fix} (an IdempotentBatch's default), or your id in "
            f"the body {SEE}",
        )
        return


def _longest_run(machine: sfn.CfnStateMachine, timeout: int | None) -> tuple[int, str]:
    """How long an Express execution of ``machine``, which a pipe waits for, may run, and why: its timeout (as
    given, or in its definition), or an Express execution's limit."""
    if timeout is None:
        timeout = (definition_of(machine) or {}).get("TimeoutSeconds")
    if isinstance(timeout, int) and timeout < EXPRESS_RUN_SECONDS:
        return timeout, "the state machine's timeout"
    return EXPRESS_RUN_SECONDS, "the longest an Express execution runs, 5 minutes, where its state machine's timeout says no less"


def _starts_of(machine: sfn.CfnStateMachine, starters: list[Start]) -> list[Start]:
    return [start for start in starters if f"<<ref|{machine.node.path}|" in start.started]


def _names_its_records(batch: Batch, start: Start) -> None:
    """Refused: a batch whose source names a failed record otherwise than the pipe or mapping that starts it reads
    it (an SQS message by its messageId; a stream's record by its eventID through a pipe, by its sequence number
    through a Lambda mapping): the source would deliver again what did not fail, or nothing of what did; and a
    batch that keeps no order behind a FIFO queue (one that keeps it behind a standard queue only runs slower)."""
    expected = "SQS_FIFO" if start.fifo else start.source.batches[start.reports is not None]
    accepted = {expected, "SQS_FIFO"} if expected == "SQS" else {expected}
    if expected and batch.source.name not in accepted:
        cdk.Annotations.of(batch).add_error(
            f"{start.named} reads the records of a failed batch's answer by what BatchSource.{expected} names them by"
            f"{' and in its order' if start.fifo else ''}, and this IdempotentBatch's source is "
            f"BatchSource.{batch.source.name}: the source would deliver again records that did not fail and lose "
            f"those that did{', or its message groups lose their order' if start.fifo else ''}. "
            f"Pass source=BatchSource.{expected} {SEE}"
        )


def _advise(workflow: IConstruct, start: Start, key: Selection, payload: Selection, *, per_record: bool = False) -> None:
    path, source, batch = start.path, start.source, start.batch
    recipe = source.redriven if start.dead_letters is not None and source.redriven else source.recipe
    business = source.business
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
