"""Operating on records at run time: look one up, reset one so that its work runs again.

Plain boto3, no CDK: for scripts, runbooks and the command-line tool. Pass a client to use an
endpoint, credentials or retry settings of your own; the default is ``boto3.client("dynamodb")``,
which honours ``AWS_ENDPOINT_URL`` (the local emulator).
"""

from __future__ import annotations

from typing import Any

from .errors import RecordInProgressError, RecordNotFoundError
from .lambda_src import schema


def _client(client: Any) -> Any:
    if client is not None:
        return client
    import boto3

    return boto3.client("dynamodb")


def get_record(table_name: str, record_id: str, *, client: Any = None) -> dict[str, Any]:
    """The record ``record_id`` as DynamoDB JSON (a consistent read).

    :raises RecordNotFoundError: no record has that id.
    """
    item = _client(client).get_item(TableName=table_name, Key={schema.ID: {"S": record_id}}, ConsistentRead=True).get("Item")
    if item is None:
        raise RecordNotFoundError(f"no idempotency record {record_id!r} in table {table_name!r}")
    return item


def reset(table_name: str, record_id: str, *, force: bool = False, client: Any = None) -> dict[str, Any]:
    """Delete one record, so that the next request with its key runs the work again; returns the
    deleted record (DynamoDB JSON).

    A record in progress is refused unless ``force``: its holder is still running, and a duplicate
    started after the reset would run alongside it (the holder's finishing write then recreates the
    record with its result). A finished record's result object in S3, if any, is left to the bucket's
    lifecycle rule.

    :raises RecordNotFoundError: no record has that id.
    :raises RecordInProgressError: the record is in progress and ``force`` is not set.
    """
    dynamodb = _client(client)
    condition = f"attribute_exists(#{schema.ID})"
    values: dict[str, Any] = {}
    if not force:
        condition += f" AND #{schema.STATUS} <> :{schema.INPROGRESS}"
        values[f":{schema.INPROGRESS}"] = {"S": schema.INPROGRESS}
    try:
        response = dynamodb.delete_item(
            TableName=table_name,
            Key={schema.ID: {"S": record_id}},
            ConditionExpression=condition,
            ExpressionAttributeNames={f"#{schema.ID}": schema.ID, **({f"#{schema.STATUS}": schema.STATUS} if not force else {})},
            **({"ExpressionAttributeValues": values} if values else {}),
            ReturnValues="ALL_OLD",
        )
    except dynamodb.exceptions.ConditionalCheckFailedException:
        get_record(table_name, record_id, client=dynamodb)  # raises RecordNotFoundError if absent
        raise RecordInProgressError(
            f"idempotency record {record_id!r} is in progress: an execution holds it and may still be running; "
            "wait for it to finish, or reset with force=True if you know it is gone"
        ) from None
    return response["Attributes"]
