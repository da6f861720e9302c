"""A payment provider that deduplicates on the idempotency key its caller sends: the first call under a key
charges (one ``Charge#{key}`` item in ``COUNTER_TABLE``, its ``calls`` counted), a later one answers with the
same charge. With ``LOSE_FIRST_REPLY`` set, the first call under a key charges and then fails, as a call whose
reply the network lost after the provider acted."""

import os
from typing import Any

import boto3

ledger = boto3.client("dynamodb")


class ReplyLost(Exception):
    pass


def handler(event: dict[str, Any], context: object = None) -> dict[str, Any]:
    key = event["idempotency_key"]
    item = ledger.update_item(
        TableName=os.environ["COUNTER_TABLE"],
        Key={"id": {"S": f"Charge#{key}"}},
        UpdateExpression="ADD calls :one SET amount = if_not_exists(amount, :amount)",
        ExpressionAttributeValues={":one": {"N": "1"}, ":amount": {"N": str(event["amount"])}},
        ReturnValues="ALL_NEW",
    )["Attributes"]
    if os.environ.get("LOSE_FIRST_REPLY") and item["calls"]["N"] == "1":
        raise ReplyLost("the provider charged, and its reply was lost")
    return {"charged": int(item["amount"]["N"]), "idempotency_key": key}
