"""A Kinesis stream, or a DynamoDB table's stream, of the emulator read through an EventBridge pipe into a
deployed Express state machine (``StreamPipe``), as AWS documents it. What is modelled, and where AWS says so:

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
- A lost checkpoint (``lose_checkpoints``): the execution succeeded but the checkpoint never moved, so the
  whole batch comes again.
"""

from __future__ import annotations

import base64
from typing import Any

from ..runs import Deployment
from .loop import Cycle, Loop, deployed, failures, referenced


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


class StreamPipe(Loop):
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

    @classmethod
    def of(cls, deployment: Deployment, name: str, *, lose_checkpoints: int = 0) -> StreamPipe:
        """The pipe ``name`` (a construct id or path part) of the deployment, played as its template declares
        it: its stream (a Kinesis stream's ``Arn``, a table's ``StreamArn``), its state machine target, its
        ``BatchSize`` and ``MaximumRetryAttempts``."""
        properties = deployment.template["Resources"][deployment.logical_id("AWS::Pipes::Pipe", name)]["Properties"]
        source = properties.get("SourceParameters", {})
        stream = source.get("KinesisStreamParameters") or source.get("DynamoDBStreamParameters") or {}
        target = properties.get("TargetParameters", {}).get("StepFunctionStateMachineParameters", {})
        if target.get("InvocationType", "REQUEST_RESPONSE") != "REQUEST_RESPONSE" or "BatchSize" not in stream:
            raise ValueError(f"the pipe {name} must wait for its target (REQUEST_RESPONSE) and set its BatchSize")
        return cls(
            deployment,
            deployment.paths[referenced(deployment, properties["Source"])],
            deployed(deployment, properties["Target"]),
            batch_size=stream["BatchSize"],
            maximum_retry_attempts=stream.get("MaximumRetryAttempts", -1),
            lose_checkpoints=lose_checkpoints,
        )

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
        failed = set(ids) if execution.status != "SUCCEEDED" else failures(execution.output, ids)
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
