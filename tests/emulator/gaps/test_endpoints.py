"""testing.gaps.endpoints: DynamoDB Streams answers at the account-based host the SDK calls, and
StartSyncExecution reaches Step Functions; moto alone routes neither."""

from __future__ import annotations

import uuid

import botocore.exceptions
import pytest


def stream_arn(emulator) -> str:
    name = f"changes-{uuid.uuid4().hex[:8]}"
    emulator.client("dynamodb").create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"},
    )
    return emulator.client("dynamodb").describe_table(TableName=name)["Table"]["LatestStreamArn"]


def test_the_stream_of_a_table_is_described_at_the_host_the_sdk_calls(emulator):
    client, arn = emulator.client("dynamodbstreams"), stream_arn(emulator)
    described = client.describe_stream(StreamArn=arn)["StreamDescription"]
    assert described["StreamArn"] == arn and len(described["Shards"]) == 1


def test_without_the_workaround_moto_answers_not_yet_implemented(emulator):
    arn = stream_arn(emulator)
    with emulator.without_workaround("endpoints"), pytest.raises(botocore.exceptions.ClientError) as raised:
        emulator.client("dynamodbstreams").describe_stream(StreamArn=arn)
    assert raised.value.response["Error"]["Code"] == "404" and "Not yet implemented" in str(raised.value)
