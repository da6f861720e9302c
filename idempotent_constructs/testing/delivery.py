"""The delivery loop: an SQS queue of the emulator drained through an EventBridge pipe into a deployed state
machine (``Pipe``), or through a Lambda event source mapping into a deployed starter function
(``EventSourceMapping``), as AWS documents them to do it, so that a test sees a message's whole life: its
receives, its executions, its deletion or its move to the dead-letter queue.

What is modelled, and where AWS says so:

- A pipe receives up to its batch size of messages at once (SQS's default 10: EventBridge user guide,
  "Amazon SQS as a source") and sends the target a JSON array of SQS records, even of one ("Amazon
  EventBridge Pipes batching and concurrency"): each record as Lambda and Pipes document it (its
  ``messageId``, ``receiptHandle``, ``body``, ``attributes`` with ``ApproximateReceiveCount``).
- ``REQUEST_RESPONSE`` (the default for a Step Functions target) invokes an Express workflow synchronously:
  a failed execution leaves every message of the batch on the queue, to come again after the visibility
  timeout ("Pipes retries customer errors up to the max receive count on the source queue": "EventBridge
  Pipes error handling and troubleshooting"); a succeeded one's ``{"batchItemFailures":
  [{"itemIdentifier": ...}]}`` leaves only those, and the rest are deleted. The whole batch fails where the
  response names a message id that is not in the batch, an empty or null one, or is not a list; an empty or
  null list is a success ("Amazon Simple Queue Service as a source", "Success and failure conditions").
  A Standard workflow cannot be invoked so ("REQUEST_RESPONSE is not supported for STANDARD state machine
  workflows": the Pipes API's PipeTargetStateMachineParameters): ``Pipe`` refuses it.
- ``FIRE_AND_FORGET`` starts the execution asynchronously: the batch is deleted once the execution starts,
  whatever it ends in ("Pipes can't retry errors thrown from within the logic of a Step Functions standard
  workflow because this target must be invoked asynchronously": the troubleshooting page).
- A message left on the queue is received again once its visibility timeout passes, with a new receipt
  handle and a receive count one more; past the queue's ``maxReceiveCount`` SQS moves it to the
  dead-letter queue (SQS developer guide, "Using dead-letter queues"). Time is not waited for: each
  ``cycle()`` ends by making what it left on the queue visible again, as if the timeout had passed.
- An event source mapping invokes its function synchronously with ``{"Records": [...]}``, the same SQS records,
  up to its batch size (10 by default): a function error leaves the whole batch on the queue; a success deletes
  it, unless the mapping's ``FunctionResponseTypes`` holds ``ReportBatchItemFailures``, where the function's
  ``batchItemFailures`` leave those messages, read by the rules above (Lambda developer guide, "Handling errors
  for an SQS event source in Lambda", "Implementing partial batch responses"). Without it a partial batch
  response is ignored: the failed records are deleted with the rest.
- A pipe from a Kinesis stream or a DynamoDB stream (``StreamPipe``) reads each shard in order from its
  checkpoint, up to its batch size of records: Pipes' flat Kinesis record, its ``eventID`` the shard and
  sequence number; a DynamoDB stream's change record as DynamoDB Streams keeps it ("Amazon Kinesis stream as a
  source for EventBridge Pipes", "Amazon DynamoDB stream as a source for EventBridge Pipes"). A failed execution leaves the checkpoint where it was, so the same
  batch comes again; a customer error is retried "up to the maximum retry attempts configured on the pipe retry
  policy" (``MaximumRetryAttempts``; -1, the default, retries until the record expires in the stream), after
  which the batch is discarded ("EventBridge Pipes error handling and troubleshooting"). A partial batch
  response moves the checkpoint to just before the first record it names, so that record and every one after
  it come again: the Lambda developer guide's documented rule for streams, which Pipes states as retrying "the
  remainder of the payload" ("batching and concurrency"). A discarded batch's records are named in the cycle;
  what Pipes sends a stream's dead-letter target (metadata, not the records) is not modelled.
- A lost acknowledgement (``lose_acknowledgements``): the execution succeeded but the deletion never
  happened, so the whole batch comes again (at-least-once delivery, SQS developer guide).

The emulator's own SQS (moto) keeps the messages, counts the receives and moves them to the dead-letter
queue; this module plays the pipe, or the mapping, between the queue and its target.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from .runs import Deployment, Execution

REQUEST_RESPONSE = "REQUEST_RESPONSE"
FIRE_AND_FORGET = "FIRE_AND_FORGET"
SQS_BATCH_SIZE = 10  # a pipe's batch from SQS when its batchSize is not set


@dataclass
class Cycle:
    """One batch delivered: the messages it sent (their ids), the execution (a pipe's) or the function's
    response (a mapping's), and what became of the messages."""

    message_ids: list[str]
    execution: Execution | None
    deleted: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)  # on the queue, to come again (or go to the dead-letter queue)
    acknowledgement_lost: bool = False  # what it would have deleted was left on the queue
    response: Any = None  # a starter function's result, or its error
    discarded: list[str] = field(default_factory=list)  # a stream's records dropped after their last retry


class _Loop:
    """A source drained one batch (``cycle()``) at a time."""

    cycles: list[Cycle]

    def cycle(self) -> Cycle | None:
        raise NotImplementedError

    def drain(self, max_cycles: int = 100) -> list[Cycle]:
        """Cycle until the source has nothing more to deliver (a queue's messages deleted or moved to its
        dead-letter queue, a stream's shards read to their end); the cycles run."""
        start = len(self.cycles)
        for _ in range(max_cycles):
            if self.cycle() is None:
                return self.cycles[start:]
        raise RuntimeError(f"the source still had records to deliver after {max_cycles} cycles")


class _Poller(_Loop):
    """What a pipe and an event source mapping share: receiving a batch from the queue, deleting what the
    target's outcome says, and leaving the rest to come again."""

    def __init__(self, deployment: Deployment, queue_url: str, *, batch_size: int, lose_acknowledgements: int) -> None:
        self.deployment, self.queue_url = deployment, queue_url
        self.batch_size, self.lose_acknowledgements = batch_size, lose_acknowledgements
        self.sqs = deployment.emulator.client("sqs")
        self.queue_arn = self.sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        self.cycles: list[Cycle] = []

    def _deliver(self, batch: list[dict[str, Any]], ids: list[str]) -> Cycle:
        raise NotImplementedError

    def cycle(self) -> Cycle | None:
        """Receive one batch, deliver it to the target, delete what the outcome says; None when the queue
        has nothing to receive."""
        received: list[dict[str, Any]] = []
        while len(received) < self.batch_size:  # ReceiveMessage returns 10 at most
            more = self.sqs.receive_message(
                QueueUrl=self.queue_url,
                MaxNumberOfMessages=min(self.batch_size - len(received), 10),
                AttributeNames=["All"],
                MessageAttributeNames=["All"],
            ).get("Messages", [])
            if not more:
                break
            received += more
        if not received:
            return None
        handles = {message["MessageId"]: message["ReceiptHandle"] for message in received}
        done = self._deliver([self._record(message) for message in received], list(handles))
        if done.deleted and self.lose_acknowledgements > 0:
            self.lose_acknowledgements -= 1
            done.left, done.deleted, done.acknowledgement_lost = done.message_ids, [], True
        for message_id in done.deleted:
            self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=handles[message_id])
        for message_id in done.left:  # its visibility timeout passes
            self.sqs.change_message_visibility(QueueUrl=self.queue_url, ReceiptHandle=handles[message_id], VisibilityTimeout=0)
        self.cycles.append(done)
        return done

    def _record(self, message: dict[str, Any]) -> dict[str, Any]:
        """A received message as a pipe or a mapping hands it over: AWS's SQS record."""
        attributes = message.get("Attributes", {})
        arn = self.queue_arn
        return {
            "messageId": message["MessageId"],
            "receiptHandle": message["ReceiptHandle"],
            "body": message["Body"],
            "attributes": {
                name: attributes[name]
                for name in ("ApproximateReceiveCount", "SentTimestamp", "SenderId", "ApproximateFirstReceiveTimestamp")
                if name in attributes
            },
            "messageAttributes": message.get("MessageAttributes", {}),
            "md5OfBody": message.get("MD5OfBody") or hashlib.md5(message["Body"].encode(), usedforsecurity=False).hexdigest(),
            "eventSource": "aws:sqs",
            "eventSourceARN": arn,
            "awsRegion": arn.split(":")[3],
        }


def _resource(deployment: Deployment, reference: Any) -> str:
    """The physical id of the resource of the stack a template's ``Ref`` or ``Fn::GetAtt`` names: a queue's
    URL for its ``Arn``, a state machine's ARN for its ``Ref``."""
    logical_id = reference.get("Ref") or reference.get("Fn::GetAtt", [None])[0] if isinstance(reference, dict) else None
    if logical_id not in deployment.resources:
        raise LookupError(f"{reference!r} names no resource of {deployment.stack_name}: a pipe's source and target must be")
    return str(deployment.resources[logical_id])


def _cycle(ids: list[str], failed: set[str], **outcome: Any) -> Cycle:
    return Cycle(ids, deleted=[i for i in ids if i not in failed], left=[i for i in ids if i in failed], **outcome)


def _failures(response: Any, ids: list[str]) -> set[str]:
    """The messages a partial batch response leaves on the queue: those it names; all of them where it names
    a message not in the batch, an empty or null one, or its list is not a list; none where it has no list."""
    failures = response.get("batchItemFailures") if isinstance(response, dict) else None
    if failures is None or failures == []:
        return set()
    if not isinstance(failures, list):
        return set(ids)
    named = {failure.get("itemIdentifier") if isinstance(failure, dict) else None for failure in failures}
    return set(ids) if not named <= set(ids) else {name for name in ids if name in named}


class Pipe(_Poller):
    """A pipe from the queue ``queue_url`` to the state machine ``state_machine`` (a construct id or path
    part of ``deployment``), with its batch size and invocation type; ``lose_acknowledgements`` batches
    whose deletion is lost after they succeeded."""

    def __init__(
        self,
        deployment: Deployment,
        queue_url: str,
        state_machine: str,
        *,
        batch_size: int = SQS_BATCH_SIZE,
        invocation: str = REQUEST_RESPONSE,
        lose_acknowledgements: int = 0,
    ) -> None:
        if invocation not in (REQUEST_RESPONSE, FIRE_AND_FORGET):
            raise ValueError(f"invocation: {invocation!r} is neither {REQUEST_RESPONSE} nor {FIRE_AND_FORGET}")
        super().__init__(deployment, queue_url, batch_size=batch_size, lose_acknowledgements=lose_acknowledgements)
        self.state_machine, self.invocation = state_machine, invocation
        arn = state_machine if state_machine.startswith("arn:") else deployment.state_machine_arn(state_machine)
        described = deployment.emulator.client("stepfunctions").describe_state_machine(stateMachineArn=arn)
        if invocation == REQUEST_RESPONSE and described["type"] != "EXPRESS":
            raise ValueError(
                f"{state_machine} is a Standard workflow, which a pipe can only start with {FIRE_AND_FORGET} "
                "(REQUEST_RESPONSE is not supported for STANDARD state machine workflows)"
            )

    @classmethod
    def of(cls, deployment: Deployment, name: str, *, lose_acknowledgements: int = 0) -> Pipe:
        """The pipe ``name`` (a construct id or path part) of the deployment, played as its template declares
        it: its SQS source queue and its state machine target (each a resource of the stack), its batch size
        and its invocation type, each AWS's default where left out."""
        properties = deployment.template["Resources"][deployment.logical_id("AWS::Pipes::Pipe", name)]["Properties"]
        source_parameters = properties.get("SourceParameters", {}).get("SqsQueueParameters", {})
        target_parameters = properties.get("TargetParameters", {}).get("StepFunctionStateMachineParameters", {})
        return cls(
            deployment,
            _resource(deployment, properties["Source"]),
            _resource(deployment, properties["Target"]),
            batch_size=source_parameters.get("BatchSize", SQS_BATCH_SIZE),
            invocation=target_parameters.get("InvocationType", REQUEST_RESPONSE),
            lose_acknowledgements=lose_acknowledgements,
        )

    def _deliver(self, batch: list[dict[str, Any]], ids: list[str]) -> Cycle:
        if self.invocation == FIRE_AND_FORGET:
            return Cycle(ids, self.deployment.wait(self.deployment.start(self.state_machine, batch)), deleted=ids)
        execution = self.deployment.run(self.state_machine, batch)
        failed = set(ids) if execution.status != "SUCCEEDED" else _failures(execution.output, ids)
        return _cycle(ids, failed, execution=execution)


class EventSourceMapping(_Poller):
    """An event source mapping from the queue ``queue_url`` to the function ``function`` (a construct id or
    path part of ``deployment``), a starter function that hands the batch to a workflow; with
    ``report_batch_item_failures`` (``FunctionResponseTypes: ["ReportBatchItemFailures"]``) its partial batch
    response is read."""

    def __init__(
        self,
        deployment: Deployment,
        queue_url: str,
        function: str,
        *,
        batch_size: int = SQS_BATCH_SIZE,
        report_batch_item_failures: bool = True,
        lose_acknowledgements: int = 0,
    ) -> None:
        super().__init__(deployment, queue_url, batch_size=batch_size, lose_acknowledgements=lose_acknowledgements)
        self.function = deployment.physical_id("AWS::Lambda::Function", function)
        self.report_batch_item_failures = report_batch_item_failures

    def _deliver(self, batch: list[dict[str, Any]], ids: list[str]) -> Cycle:
        answer = self.deployment.emulator.client("lambda").invoke(
            FunctionName=self.function, Payload=json.dumps({"Records": batch}).encode()
        )
        response = json.loads(answer["Payload"].read() or b"null")
        if "FunctionError" in answer:
            return _cycle(ids, set(ids), execution=None, response=response)
        failed = _failures(response, ids) if self.report_batch_item_failures else set()
        return _cycle(ids, failed, execution=None, response=response)


class _Kinesis:
    """A Kinesis stream's shards and records, each as a pipe hands it to its target: Pipes' flat Kinesis
    record, its ``eventID`` the shard and sequence number (``testing.sources.kinesis_via_pipe`` has AWS's
    sample)."""

    def __init__(self, deployment: Deployment, stream: str) -> None:
        self.client = deployment.emulator.client("kinesis")
        self.name = deployment.physical_id("AWS::Kinesis::Stream", stream)
        self.arn = self.client.describe_stream_summary(StreamName=self.name)["StreamDescriptionSummary"]["StreamARN"]

    def shards(self) -> list[str]:
        return [shard["ShardId"] for shard in self.client.list_shards(StreamName=self.name)["Shards"]]

    def read(self, shard: str, after: str | None, limit: int) -> list[tuple[str, dict[str, Any]]]:
        where = {"ShardIteratorType": "AFTER_SEQUENCE_NUMBER", "StartingSequenceNumber": after} if after else {}
        iterator = self.client.get_shard_iterator(
            StreamName=self.name, ShardId=shard, **(where or {"ShardIteratorType": "TRIM_HORIZON"})
        )["ShardIterator"]
        return [
            (record["SequenceNumber"], self._record(shard, record))
            for record in self.client.get_records(ShardIterator=iterator, Limit=limit)["Records"]
        ]

    def _record(self, shard: str, record: dict[str, Any]) -> dict[str, Any]:
        return {
            "kinesisSchemaVersion": "1.0",
            "partitionKey": record["PartitionKey"],
            "sequenceNumber": record["SequenceNumber"],
            "data": base64.b64encode(record["Data"]).decode(),
            "approximateArrivalTimestamp": round(record["ApproximateArrivalTimestamp"].timestamp(), 3),
            "eventSource": "aws:kinesis",
            "eventVersion": "1.0",
            "eventID": f"{shard}:{record['SequenceNumber']}",
            "eventName": "aws:kinesis:record",
            "awsRegion": self.arn.split(":")[3],
            "eventSourceARN": self.arn,
        }


class _DynamoDBStream:
    """A DynamoDB table's stream: its shards and change records, each as a pipe hands it to its target, the
    record DynamoDB Streams keeps with the stream's ARN (``testing.sources.dynamodb_stream_via_pipe`` has
    AWS's sample)."""

    def __init__(self, deployment: Deployment, table: str) -> None:
        self.client = deployment.emulator.client("dynamodbstreams")
        name = deployment.table_name(table)
        self.arn = deployment.emulator.client("dynamodb").describe_table(TableName=name)["Table"]["LatestStreamArn"]

    def shards(self) -> list[str]:
        return [shard["ShardId"] for shard in self.client.describe_stream(StreamArn=self.arn)["StreamDescription"]["Shards"]]

    def read(self, shard: str, after: str | None, limit: int) -> list[tuple[str, dict[str, Any]]]:
        where = {"ShardIteratorType": "AFTER_SEQUENCE_NUMBER", "SequenceNumber": after} if after else {}
        iterator = self.client.get_shard_iterator(
            StreamArn=self.arn, ShardId=shard, **(where or {"ShardIteratorType": "TRIM_HORIZON"})
        )["ShardIterator"]
        records = self.client.get_records(ShardIterator=iterator, Limit=limit)["Records"]
        return [(record["dynamodb"]["SequenceNumber"], self._record(record)) for record in records]

    def _record(self, record: dict[str, Any]) -> dict[str, Any]:
        change = dict(record["dynamodb"])
        created = change.get("ApproximateCreationDateTime")
        if created is not None and not isinstance(created, (int, float)):  # the SDK's datetime: epoch seconds
            change["ApproximateCreationDateTime"] = int(created.timestamp())
        return {**record, "dynamodb": change, "eventSourceARN": self.arn}


class StreamPipe(_Loop):
    """A pipe from a stream to the Express state machine ``state_machine``, waited for (``REQUEST_RESPONSE``):
    ``stream`` (a construct id or path part of ``deployment``) names a Kinesis stream, or a DynamoDB table
    whose stream it reads. With its batch size and ``MaximumRetryAttempts`` (-1: until the record expires,
    which the loop does not reach: ``drain`` then stops at ``max_cycles``); ``lose_checkpoints`` batches
    whose checkpoint is lost after they succeeded."""

    def __init__(
        self,
        deployment: Deployment,
        stream: str,
        state_machine: str,
        *,
        batch_size: int,
        maximum_retry_attempts: int = -1,
        lose_checkpoints: int = 0,
    ) -> None:
        self.deployment, self.state_machine, self.batch_size = deployment, state_machine, batch_size
        self.maximum_retry_attempts, self.lose_checkpoints = maximum_retry_attempts, lose_checkpoints
        kinesis = any(
            resource["Type"] == "AWS::Kinesis::Stream" and f"/{stream}/" in f"/{deployment.paths.get(logical_id, '')}/"
            for logical_id, resource in deployment.template["Resources"].items()
        )
        self.source = _Kinesis(deployment, stream) if kinesis else _DynamoDBStream(deployment, stream)
        self.checkpoints: dict[str, str | None] = {}  # the last sequence number done, by shard
        self.attempts: dict[tuple[str, str | None], int] = {}  # retries of a batch, by shard and checkpoint
        self.cycles: list[Cycle] = []

    def cycle(self) -> Cycle | None:
        """Read one batch from the first shard with records past its checkpoint, invoke the target, move the
        checkpoint as the outcome says; None when every shard is done."""
        for shard in self.source.shards():
            records = self.source.read(shard, self.checkpoints.get(shard), self.batch_size)
            if records:
                return self._deliver(shard, [sequence for sequence, _ in records], [record for _, record in records])
        return None

    def _deliver(self, shard: str, sequences: list[str], batch: list[dict[str, Any]]) -> Cycle:
        ids = [record["eventID"] for record in batch]
        execution = self.deployment.run(self.state_machine, batch)
        failed = set(ids) if execution.status != "SUCCEEDED" else _failures(execution.output, ids)
        first = next((index for index, name in enumerate(ids) if name in failed), len(ids))
        done = Cycle(ids, execution, deleted=ids[:first], left=ids[first:])
        if done.deleted and self.lose_checkpoints > 0:
            self.lose_checkpoints -= 1
            done.left, done.deleted, done.acknowledgement_lost = ids, [], True
            first = 0
        position = (shard, self.checkpoints.get(shard))
        if done.left and not done.acknowledgement_lost:
            self.attempts[position] = self.attempts.get(position, 0) + 1
            if 0 <= self.maximum_retry_attempts < self.attempts[position]:  # retried as often as allowed: dropped
                done.discarded = [name for name in done.left if name in failed]
                done.deleted += [name for name in done.left if name not in failed]
                done.left, first = [], len(ids)
        if first > 0:
            self.checkpoints[shard] = sequences[first - 1]
        self.cycles.append(done)
        return done


def messages_in(deployment: Deployment, queue_url: str) -> list[dict[str, Any]]:
    """Every message on the queue ``queue_url`` (a dead-letter queue, say) once the loop is done: each
    ``{"messageId", "body"}``. Reading receives them, hidden for a minute."""
    sqs = deployment.emulator.client("sqs")
    found: dict[str, dict[str, Any]] = {}
    while received := sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, VisibilityTimeout=60).get("Messages"):
        found.update({message["MessageId"]: {"messageId": message["MessageId"], "body": message["Body"]} for message in received})
    return list(found.values())
