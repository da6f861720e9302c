"""Emulator end-to-end: an IdempotentBatch behind a Lambda event source mapping names a stream's failed record
as the mapping reads it, by its sequence number (issue 55): ``BatchSource.KINESIS_MAPPING`` with Lambda's Kinesis
records (``kinesis_via_starter``), ``BatchSource.DYNAMODB_STREAMS_MAPPING`` with a stream's changes. A record whose
data asks to fail is answered failed; the batch sent again runs only that one, the others replaying."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk import App, RemovalPolicy, Stack
from aws_cdk import aws_stepfunctions as sfn

from idempotent_constructs import BatchSource, IdempotencyTable, IdempotentBatch
from idempotent_constructs.testing import Deployment, LocalEmulator
from idempotent_constructs.testing.sources import dynamodb_stream_via_pipe, kinesis_via_starter
from tests.stacks import FAST

# What asks a record to fail: its Kinesis data's "fail", its new image's fail attribute.
ASKS = {
    "KinesisBatch": "$parse($base64decode($states.input.kinesis.data)).fail = true",
    "ChangesBatch": "$states.input.dynamodb.NewImage.fail.BOOL = true",
}


class StreamBatchesStack(Stack):
    """``KinesisBatch`` and ``ChangesBatch``: an IdempotentBatch of each mapping's kind, whose body fails a record
    that asks to (``ASKS``) and passes the others."""

    def __init__(self, scope: App, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        table = IdempotencyTable(self, "Idempotency", removal_policy=RemovalPolicy.DESTROY)
        for name, source in (
            ("KinesisBatch", BatchSource.KINESIS_MAPPING),
            ("ChangesBatch", BatchSource.DYNAMODB_STREAMS_MAPPING),
        ):
            body = (
                sfn.Choice.jsonata(self, f"{name}Asks")
                .when(sfn.Condition.jsonata("{% " + ASKS[name] + " %}"), sfn.Fail(self, f"{name}Failed", error="Asked"))
                .otherwise(sfn.Pass(self, f"{name}Work"))
            )
            batch = IdempotentBatch(self, f"{name}Records", table=table, body=body, source=source, **FAST)
            sfn.StateMachine(
                self,
                name,
                definition_body=sfn.DefinitionBody.from_chainable(batch),
                state_machine_type=sfn.StateMachineType.EXPRESS,
            )


@pytest.fixture(scope="module")
def streams(emulator: LocalEmulator, tmp_path_factory: pytest.TempPathFactory) -> Deployment:
    app = App(outdir=str(tmp_path_factory.mktemp("stream-batches-assembly")))
    return emulator.deploy_stack(StreamBatchesStack(app, "StreamBatches"))


def kinesis_batch(unique: str) -> list[dict[str, Any]]:
    return [
        kinesis_via_starter(json.dumps({"orderId": f"{unique}-{n}", "fail": n == 1}), f"{unique}-{n}", seed=n).event
        for n in range(3)
    ]


def changes_batch(unique: str) -> list[dict[str, Any]]:
    return [
        dynamodb_stream_via_pipe({"pk": f"{unique}-{n}", "fail": n == 1}, keys={"pk": f"{unique}-{n}"}, seed=n).event[0]
        for n in range(3)
    ]


@pytest.mark.parametrize(
    ("workflow", "records", "sequence_number"),
    [
        ("KinesisBatch", kinesis_batch, lambda record: record["kinesis"]["sequenceNumber"]),
        ("ChangesBatch", changes_batch, lambda record: record["dynamodb"]["SequenceNumber"]),
    ],
)
def test_a_batch_behind_a_lambda_mapping_answers_a_failed_record_by_its_sequence_number(
    streams, unique, workflow, records, sequence_number
):
    batch = records(unique)
    first = streams.run(workflow, batch)
    assert first.status == "SUCCEEDED", (first.error, first.cause)
    assert first.output == {"batchItemFailures": [{"itemIdentifier": sequence_number(batch[1])}]}
    again = streams.run(workflow, batch)
    assert again.output == first.output
    assert again.entered_states().count(f"{workflow}Work") == 0  # the two done replay; the failed one fails again
