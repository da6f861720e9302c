"""``IdempotentBatch``: a batch of records from a pipe or a starter function made idempotent record by record.

Pipes and Lambda's event source mappings hand a workflow a JSON array of records. The batch runs its body
once for each record, inside an ``IdempotencyGuard`` keyed on the record, in a Map: a record that fails (its
body, ``Idempotency.PayloadMismatch``, a missing key) is caught and reported, never stopping the others, and
the output is the partial batch response the source understands, ``{"batchItemFailures": [{"itemIdentifier":
...}]}``, so that the source delivers again only the records that failed, where every record done replays::

    Records (Map) -> Record (Parallel: the guard around the body) -> (next record)
                                   '-- fails --> RecordFailed
    -> Failures (the partial batch response)

From a FIFO queue (``BatchSource.SQS_FIFO``) the records run one after another in a loop instead
(``Records`` -> ``MoreRecords`` -> ``Record`` -> ``NextRecord`` -> ...), and at the first that fails the rest do
not run: the answer names it and every later record, so that each message group keeps its order (``_in_order``).

Which record failed and why is in the Map's output, in the execution's history: ``{"itemIdentifier", "error",
"cause"}`` for each. The response names only the identifiers, as the sources document it. How many failed is
``metric_failed_records``, counted from the state machine's execution log.

The answer is bounded: Step Functions fails a state whose output passes 262,144 bytes of UTF-8, with
States.DataLimitExceeded, which no Catch catches ("Maximum input or output size for a task, state, or
execution: 262,144 bytes of data as a UTF-8 encoded string", Step Functions quotas; "a terminal error that
cannot be caught by the States.ALL error type", error handling), so that a few records failing with long
causes would fail the whole execution and every record would be delivered again. The Map therefore hands
each record its share of the payload, ``(262,144 - 1,024 - n - 1) / n`` bytes for a batch of ``n`` records
(the Map's ItemSelector, which may read the Map's state input, passes it along with the record: ASL
specification, "Map State"; the Parallel's ``Arguments`` hand the guard the record alone: "the value of
"Arguments" MUST be a JSON text, or a JSONata string that evaluates to a JSON text ... its result becomes
... the branches of a Parallel State", ASL specification, "Input and Output Processing with JSONata"), and
a failed record's error and cause are cut to fit that share with its identifier (a Catcher's Output reads
the state's own input: ASL specification, "Reserved "states" Variable with JSONata"), measured as
Step Functions measures a payload, as UTF-8 bytes of compact JSON (``_jsonata.sizes``). A text cut keeps
its first characters, followed by ``… [cut: 101,888 characters]``, the number left out; the error name is
kept whole unless it alone passes the share. The Map's output, ``n`` shares, a comma between two and its
brackets, then holds within 262,144 bytes, and the response, which names the failed records' identifiers
only, within it. No state is added: a record that succeeds passes the same states as before.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from enum import Enum
from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from ._jsonata.sizes import BYTES, JSON
from ._synth import option_kinds, options, outcome_metrics, source_advice
from .guard import IdempotencyGuard
from .guard.config import EXPRESS_MAX_DURATION, bounded_max_wait
from .guard.guard_options import BATCH, GUARD_MODEL
from .guard.protocol import expression
from .key import IdempotencyKey
from .lambda_src import schema
from .payload import IdempotencyPayload
from .policies import CompletedPolicy, FailurePolicy, InFlightPolicy, ResultStorage
from .table import IdempotencyTable


class BatchSource(Enum):
    """Where a batch comes from: what identifies a record to its consumer in a partial batch response (the
    field each consumer documents for ``itemIdentifier``: behind a pipe, "For Amazon SQS, this is the messageId.
    For Kinesis and DynamoDB, this is the eventID", EventBridge user guide, "Amazon EventBridge Pipes batching and
    concurrency"; behind a Lambda event source mapping, whose starter function returns the batch's answer, an SQS
    message's ``messageId`` and a stream record's sequence number, ``"itemIdentifier": "<SequenceNumber>"``,
    Lambda developer guide, "Configuring partial batch response with Kinesis Data Streams and Lambda" and "...
    with DynamoDB and Lambda"), and what keys a record and what it must repeat. Synth refuses a batch whose source
    names its records otherwise than the pipe or mapping that starts it reads them."""

    SQS = ("messageId", "$.body", None)
    """An SQS queue, through a pipe or an event source mapping: the message's body, which its redeliveries, a
    producer's re-sent copy and a redrive from the dead-letter queue keep (AWS gives a redriven message a new
    ``messageId``: SQS developer guide, "Learn how to configure a dead-letter queue redrive"); being the key, it
    is compared by it."""

    KINESIS = ("eventID", "$.eventID", "$.data")
    """A Kinesis stream through a pipe: the record's event id; its data."""

    DYNAMODB_STREAMS = ("eventID", "$.eventID", "$.dynamodb.NewImage")
    """A DynamoDB stream through a pipe: the change's event id; its new image."""

    KINESIS_MAPPING = ("kinesis.sequenceNumber", "$.eventID", "$.kinesis.data")
    """A Kinesis stream through a Lambda event source mapping into a starter function, in Lambda's record shape
    (``kinesis.data``, ``kinesis.sequenceNumber``): named by its sequence number, keyed on its event id (the
    shard and the sequence number, which its retries keep); its data."""

    DYNAMODB_STREAMS_MAPPING = ("dynamodb.SequenceNumber", "$.eventID", "$.dynamodb.NewImage")
    """A DynamoDB stream through a Lambda event source mapping into a starter function: named by the change's
    sequence number, keyed on its event id; its new image."""

    SQS_FIFO = ("messageId", "$.body", None, True)
    """An SQS FIFO queue, through a pipe or an event source mapping, keyed as ``SQS``: its records run one after
    another, in the batch's order, and at the first that fails the rest run not at all and are answered failed
    with it, so that each message group keeps its order ("If you're using this feature with a FIFO queue, your
    function should stop processing messages after the first failure and return all failed and unprocessed
    messages in batchItemFailures", Lambda developer guide, "Handling errors for an SQS event source in Lambda")."""

    def __init__(self, identifier: str, key: str, payload: str | None, ordered: bool = False) -> None:
        self.identifier, self.key, self.payload, self.ordered = identifier, key, payload, ordered


BATCH_OWN = options.Options(
    options.Option(
        "source",
        option_kinds.enum_kind(BatchSource),
        "where the batch comes from: what identifies a record in the partial batch response, and the default key and payload.",
        "``BatchSource.SQS``.",
        (BATCH,),
    ),
    options.Option(
        "max_concurrency",
        option_kinds.instance_of(int, lambda value: "a whole number, such as 4", "int"),
        "how many records run at once (the Map's ``MaxConcurrency``); 0 runs them all at once. A FIFO source's run one "
        "at a time.",
        "0.",
        (BATCH,),
    ),
)
BATCH_MODEL = GUARD_MODEL + BATCH_OWN

# Step Functions' quota on a state's output (the module's docstring), and the bytes of it left free: for a
# number an engine writes shorter than Step Functions does, should an identifier be one.
PAYLOAD_LIMIT = 262_144
ANSWER_MARGIN = 1_024
# A failed record's outcome without its three values: {"itemIdentifier":,"error":,"cause":}.
OUTCOME_FRAME = len('{"itemIdentifier":,"error":,"cause":}')
# Bytes kept for the marker after a cut text: "… [cut: 262,144 characters]" is 29 in UTF-8 (no text of a
# payload has more characters).
MARKER_ROOM = 40
# Each record's share of the Map's output: n shares, n - 1 commas and two brackets fit the quota.
SHARE = f"$floor(({PAYLOAD_LIMIT - ANSWER_MARGIN} - $count($states.input) - 1) / $count($states.input))"
# $size: the bytes of a value's compact JSON (a text's with its quotes). $cut: a text whose JSON fits in $room
# bytes: itself where it fits, else its first characters and the marker (nothing where not even the marker
# fits). A text is measured whole only where its length could fit; cutting, at most two of its prefixes are:
# the first as long as the bytes left allow at the text's own bytes a character (1 where it was not measured),
# the second shorter by what the first took a character; past them, 6 bytes a character always fit (an
# escape such as \u0000 is the longest a character takes).
_CUT = (
    f"{BYTES}{JSON} $size := function($v) {{ $bytes($json($v)) }};"
    " $shorten := function($t, $keep, $ratio) {("
    " $n1 := $min([$length($t), $floor(($keep - 2) / $ratio)]); $b1 := $size($substring($t, 0, $n1));"
    " $n2 := $b1 <= $keep ? $n1 : $floor($n1 * ($keep - 2) / ($b1 - 2));"
    " $n := ($n2 = $n1 or $size($substring($t, 0, $n2)) <= $keep) ? $n2 : $floor(($keep - 2) / 6);"
    " $substring($t, 0, $n) & '\\u2026 [cut: ' & $formatNumber($length($t) - $n, '#,##0') & ' characters]'"
    " )};"
    f" $short := function($t, $room, $ratio) {{ $room < {MARKER_ROOM + 2} ? '' : $shorten($t, $room - {MARKER_ROOM}, $ratio) }};"
    " $cut := function($t, $room) {( $l := $length($t); $l + 2 > $room ? $short($t, $room, 1) :"
    " ($s := $size($t); $s <= $room ? $t : $short($t, $room, ($s - 2) / $l)) )};"
)
_ERROR = "($exists($states.errorOutput.Error) ? $string($states.errorOutput.Error) : '')"
_CAUSE = "($exists($states.errorOutput.Cause) ? $string($states.errorOutput.Cause) : '')"


def failed_outcome(identifier: str) -> dict[str, str]:
    """The Catch's Output for a failed record (the state's input: ``{"record", "share"}``): its identifier,
    read from the record at ``identifier``, and its error and cause cut to fit its share with the identifier
    (the error first, keeping 2 bytes for the cause's quotes)."""
    room = f"$room := $states.input.share - {OUTCOME_FRAME} - $size($states.input.record.{identifier});"
    error = f"$err := $cut({_ERROR}, $room - 2);"
    return {
        "itemIdentifier": expression(f"$states.input.record.{identifier}"),
        "error": expression(f"({_CUT} {room} {error} $err)"),
        "cause": expression(f"({_CUT} {room} {error} $cut({_CAUSE}, $room - $size($err)))"),
    }


class _RecordState(sfn.Parallel):
    """The Parallel around a record's guard, handing its branch the record alone (``Arguments`` as one
    JSONata text, ``record``, which the CDK's typed ``arguments`` does not take)."""

    record = "$states.input.record"

    def to_state_json(self, query_language: sfn.QueryLanguage | None = None) -> Any:
        return {**super().to_state_json(query_language), "Arguments": expression(self.record)}


class IdempotentBatch(sfn.StateMachineFragment):
    """Runs ``body`` once for each record of a batch (the state's input, a JSON array), each record inside an
    ``IdempotencyGuard`` of its own; its output is the batch's partial batch response. Chain it as the whole
    definition of the Express workflow a pipe or a starter function invokes synchronously."""

    @BATCH_MODEL.documented(BATCH)
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        table: IdempotencyTable | dynamodb.ITable,
        body: sfn.IChainable,
        key: IdempotencyKey | None = None,
        payload: IdempotencyPayload | None = None,
        namespace: str | None = None,
        expires_after: Duration | None = None,
        lease: Duration | None = None,
        poll_interval: Duration | None = None,
        max_wait: Duration | None = None,
        on_in_flight: InFlightPolicy | None = None,
        on_failure: FailurePolicy | None = None,
        on_completed: CompletedPolicy | None = None,
        replay_marker: str | None = None,
        cache_errors: Sequence[str] | None = None,
        state_name_prefix: str | None = None,
        result_storage: ResultStorage | None = None,
        source: BatchSource | None = None,
        max_concurrency: int | None = None,
    ) -> None:
        """
        :options: each option's documentation is written here from batch.BATCH_MODEL
        """
        super().__init__(scope, construct_id)
        found = options.Validation(self, BATCH_MODEL, BATCH, locals())
        if isinstance(max_concurrency, int) and max_concurrency < 0:
            found.extend([f"max_concurrency: {max_concurrency} is negative; pass 0 (all at once) or more"])
        if isinstance(max_concurrency, int) and max_concurrency > 1 and source is BatchSource.SQS_FIFO:
            found.extend(
                [f"max_concurrency: a FIFO batch runs its records one at a time, in order; leave it out (not {max_concurrency})"]
            )
        found.raise_if_any()
        self.source = source or BatchSource.SQS
        prefix = f"{construct_id}." if state_name_prefix is None else state_name_prefix
        self.guard = IdempotencyGuard(
            self,
            "Record",
            table=table,
            body=body,
            key=key or IdempotencyKey.from_paths(self.source.key),
            payload=payload
            or (IdempotencyPayload.from_paths(self.source.payload) if self.source.payload else IdempotencyPayload.none()),
            namespace=namespace,
            expires_after=expires_after,
            # A batch is meant for the Express workflow a pipe or a starter function waits for: its defaults fit the run.
            lease=lease or EXPRESS_MAX_DURATION,
            poll_interval=poll_interval,
            max_wait=max_wait or bounded_max_wait(EXPRESS_MAX_DURATION),
            on_in_flight=on_in_flight,
            on_failure=on_failure,
            on_completed=on_completed,
            replay_marker=replay_marker,
            cache_errors=cache_errors,
            state_name_prefix=f"{prefix}Record.",
            result_storage=result_storage,
            in_inline_map=True,  # records run in one execution: as an inline Map's iterations (or, FIFO, a loop's turns)
        )
        # A record's outcome: null once done; its identifier and error when it failed (caught, so that the
        # other records finish), cut to its share of the Map's output (the module's docstring).
        record = _RecordState(
            self,
            "RecordState",
            state_name=f"{prefix}Record",
            query_language=sfn.QueryLanguage.JSONATA,
            outputs="{% $states.input %}" if self.source.ordered else "{% null %}",  # in order: the batch goes on
        )
        record.branch(self.guard)
        self.failed_state_name = f"{prefix}RecordFailed"
        failed = sfn.Pass.jsonata(self, "RecordFailed", state_name=self.failed_state_name)
        if self.source.ordered:
            self.start: sfn.State
            self.start, self.response = _in_order(self, prefix, record, failed, self.source.identifier)
            source_advice.advise_batch(self)
            return
        record.add_catch(failed, outputs=failed_outcome(self.source.identifier))
        self.map = sfn.Map.jsonata(
            self,
            "Records",
            state_name=f"{prefix}Records",
            items=sfn.ProvideItems.jsonata("{% $states.input %}"),
            item_selector={"record": "{% $states.context.Map.Item.Value %}", "share": expression(SHARE)},
            max_concurrency=max_concurrency or 0,
        ).item_processor(record)
        self.response = sfn.Pass.jsonata(
            self,
            "Failures",
            state_name=f"{prefix}Failures",
            outputs="{% {'batchItemFailures': [$states.input[$type($) = 'object'].{'itemIdentifier': itemIdentifier}]} %}",
        )
        self.map.next(self.response)
        self.start = self.map
        source_advice.advise_batch(self)

    def metric_failed_records(self, log_group: logs.ILogGroup, **props: Any) -> cloudwatch.IMetric:
        """Records that failed (their body, ``Idempotency.PayloadMismatch``, a missing key): the entries of the
        batch's ``RecordFailed`` state, counted from ``log_group``, the execution log of the state machine that
        runs the batch, which must log at ``sfn.LogLevel.ALL`` (its execution data may stay out). ``props`` are
        the metric's options. Adds the metric filter "FailedRecords" to the batch on first use."""
        if self.node.try_find_child("FailedRecords") is None:
            pattern = outcome_metrics.pattern_of({"PassStateEntered": [self.failed_state_name]})
            outcome_metrics.entries_filter(self, "FailedRecords", log_group, self.guard.namespace, pattern)
        return cloudwatch.Metric(
            namespace=schema.metrics_namespace(self.guard.namespace),
            metric_name=schema.STATES_ENTERED_METRIC,
            dimensions_map={"State": self.failed_state_name},
            statistic="Sum",
            **{"label": "FailedRecords", **props},
        )

    @property
    def start_state(self) -> sfn.State:
        return self.start

    @property
    def end_states(self) -> list[sfn.INextable]:
        return [self.response]


def _in_order(
    batch: IdempotentBatch, prefix: str, record: _RecordState, failed: sfn.Pass, identifier: str
) -> tuple[sfn.State, sfn.Pass]:
    """A FIFO batch's states, ``(first, last)``: its records one after another (the variable holds the next one's
    index and the failed one's, -1 while none has), each handed its record; at the first that fails, the answer
    names it and every later record, which never ran. No Map: an iteration cannot tell the next not to run."""
    at = f"$batch_{hashlib.sha256(prefix.encode()).hexdigest()[:12]}"
    start = sfn.Pass.jsonata(batch, "Records", state_name=f"{prefix}Records", assign={at[1:]: "{% {'next': 0, 'failed': -1} %}"})
    record.record = f"$states.input[{at}.next]"
    record.add_catch(
        failed, outputs="{% $states.input %}", assign={at[1:]: expression(f"{{'next': {at}.next, 'failed': {at}.next}}")}
    )
    advance = sfn.Pass.jsonata(
        batch,
        "NextRecord",
        state_name=f"{prefix}NextRecord",
        assign={at[1:]: expression(f"{{'next': {at}.next + 1, 'failed': -1}}")},
    )
    response = sfn.Pass.jsonata(
        batch,
        "Failures",
        state_name=f"{prefix}Failures",
        outputs=expression(
            f"{{'batchItemFailures': [$filter($states.input, function($r, $i) {{ {at}.failed >= 0 and $i >= {at}.failed }})"
            f".{{'itemIdentifier': {identifier}}}]}}"
        ),
    )
    more = sfn.Choice.jsonata(batch, "MoreRecords", state_name=f"{prefix}MoreRecords")
    more.when(sfn.Condition.jsonata(f"{{% {at}.next < $count($states.input) %}}"), record).otherwise(response)
    start.next(more)
    record.next(advance)
    advance.next(more)
    failed.next(response)
    return start, response
