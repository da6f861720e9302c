"""A moto DynamoDB table "records" (the idempotency schema's key) for the handlers' unit tests."""

from __future__ import annotations

import contextlib
from typing import Any

import boto3
import pytest
from moto import mock_aws


@pytest.fixture
def table(monkeypatch: pytest.MonkeyPatch) -> Any:
    """A DynamoDB client, with an empty table "records" keyed on "id", and its holder index."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws():
        client = boto3.client("dynamodb")
        with contextlib.suppress(client.exceptions.ResourceNotFoundException):  # kept by an outer mock
            client.delete_table(TableName="records")
        client.create_table(
            TableName="records",
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[
                {"AttributeName": "id", "AttributeType": "S"},
                {"AttributeName": "held_by", "AttributeType": "S"},
            ],
            GlobalSecondaryIndexes=[
                {
                    "IndexName": "by-holder",
                    "KeySchema": [{"AttributeName": "held_by", "KeyType": "HASH"}],
                    "Projection": {"ProjectionType": "KEYS_ONLY"},
                }
            ],
            BillingMode="PAY_PER_REQUEST",
        )
        yield client
