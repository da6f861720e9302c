"""A user's task Lambda that makes itself idempotent with Powertools, on the table a workflow uses.

It charges an order once per ``order_id``; every real run of the handler and of ``charge`` adds one
to a counter in another table (COUNTER_TABLE_NAME), so a test can tell a run from a replay.
"""

import os
import uuid
from typing import Any

import boto3
from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent,
    idempotent_function,
)

TABLE_NAME = os.environ["IDEMPOTENCY_TABLE_NAME"]
KEY_PREFIX = os.environ["IDEMPOTENCY_KEY_PREFIX"]
dynamodb = boto3.client("dynamodb")

# One persistence layer per decorator: a layer keeps the settings of the first decorator that uses it.
handler_config = IdempotencyConfig(event_key_jmespath="order_id")
charge_config = IdempotencyConfig()  # keyed on the whole order


def count(what: str, order_id: str) -> None:
    dynamodb.update_item(
        TableName=os.environ["COUNTER_TABLE_NAME"],
        Key={"name": {"S": f"{what}#{order_id}"}},
        UpdateExpression="ADD runs :one",
        ExpressionAttributeValues={":one": {"N": "1"}},
    )


@idempotent_function(  # type: ignore[untyped-decorator]  # Powertools leaves it unannotated
    data_keyword_argument="order",
    config=charge_config,
    persistence_store=DynamoDBPersistenceLayer(table_name=TABLE_NAME, boto3_client=dynamodb),
    key_prefix=f"{KEY_PREFIX}.charge",
)
def charge(*, order: dict[str, Any]) -> dict[str, Any]:
    count("charge", order["order_id"])
    return {"order_id": order["order_id"], "amount": order["amount"], "receipt": uuid.uuid4().hex}


@idempotent(
    config=handler_config,
    persistence_store=DynamoDBPersistenceLayer(table_name=TABLE_NAME, boto3_client=dynamodb),
    key_prefix=KEY_PREFIX,
)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    count("handler", event["order_id"])
    charge_config.register_lambda_context(context)
    return {"charged": charge(order={"order_id": event["order_id"], "amount": event["amount"]})}
