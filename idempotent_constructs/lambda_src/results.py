"""Result function: stores the results the native ``Complete`` cannot keep, and restores them on replay.

Shared by every guard of a stack. A guard completes natively when its result is small and
``$string`` gives it back exactly; otherwise it completes through this function, which picks the
cheapest form that fits:

* up to ``inline_threshold`` bytes of JSON (and ``schema.RECORD_DATA_LIMIT`` once escaped): the JSON
  itself in ``data``, exact (Python writes every double with the digits that give it back);
* otherwise gzip-compressed: in ``data_gzip`` if that fits under ``record_limit``, else as an S3 object
  ``{namespace}#/{hash}/{holder}.json.gz`` (the holder: its owner token's digest) with ``data_location`` pointing at it ("#" cannot occur in
  a namespace, so one namespace's prefix never contains another's). The object is written
  before the record, under a name only this holder uses, so a stale holder can never overwrite the
  result a newer owner points at; the fenced record write decides which result counts.

Only a holder acts on a record: the function serves every namespace of its stack, and any workflow of
the stack may invoke it, so it takes no caller at its word (it would be a confused deputy). A ``store``
names the holder's owner token and writes only a record that token holds still, never one that is gone;
a ``restore`` names the owner token it read in the record, and reads only a record that token holds. An
owner token is its execution's ARN and a UUID drawn in it: only the record, its holder's execution and
the executions that read the record (their roles scoped to the namespace) know it, so a workflow that
cannot read another's records cannot name them to this function either.

Events (built by the generated states)::

    {"action": "store", "table": "...", "bucket": "..." (absent without one), "inline_threshold": 8192,
     "record_limit": 8192, "expires_after_seconds": 86400, "result": <the chain's output>,
     "idempotency": {"id", "owner", "validation"}}
    {"action": "restore", "table": "...", "id": "<record id>", "owner": "<its owner token, as read>",
     "validation": "<payload digest>"}

``store`` returns nothing, or raises ``Idempotency.ResultTooLarge`` for a result that fits nowhere,
or that a restore could not return (the runtime sends a return value as ``json.dumps`` writes it,
spaced and ASCII-escaped, within Lambda's and Step Functions' 256 KiB); ``restore`` reads the record (consistently) and returns the result, or
raises ``Idempotency.ResultMissing`` if the record holds no readable result (its S3 object was
deleted, or a guard without large results wrote it). Only record ids and sizes are logged.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import time
from typing import Any

import boto3
from botocore.config import Config

try:  # imported as part of the library
    from . import schema, telemetry
except ImportError:  # imported by the Lambda runtime from the asset root
    import schema  # type: ignore[no-redef,import-not-found]
    import telemetry  # type: ignore[no-redef,import-not-found]

logger = telemetry.get_logger()
_CONFIG = Config(retries={"mode": "standard", "max_attempts": 10})
_clients: dict[str, Any] = {}


class LeaseLost(Exception):
    """The record is no longer this holder's (it was taken over): the result is not stored."""


class ResultMissing(Exception):
    """The record says the work completed, but its result cannot be read."""


class ResultTooLarge(Exception):
    """The result fits neither in the record, compressed, nor anywhere else (no bucket)."""


# Lambda reports an exception's class name as the Step Functions error name.
LeaseLost.__name__ = LeaseLost.__qualname__ = schema.LEASE_LOST
ResultMissing.__name__ = ResultMissing.__qualname__ = schema.RESULT_MISSING
ResultTooLarge.__name__ = ResultTooLarge.__qualname__ = schema.RESULT_TOO_LARGE


def _client(service: str) -> Any:
    if service not in _clients:
        _clients[service] = boto3.client(service, config=_CONFIG)
    return _clients[service]


def serialize(result: Any) -> bytes:
    """The result as compact JSON; ``json.loads`` gives back an equal value (exact numbers)."""
    return json.dumps(result, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def storage_form(text: bytes, threshold: int, record_limit: int | None = None) -> tuple[str, bytes]:
    """``(attribute, bytes)``: where a result of ``text`` goes, ``DATA_LOCATION`` meaning S3."""
    escaped = len(json.dumps(text.decode(), ensure_ascii=False).encode())
    if len(text) <= threshold and escaped <= schema.RECORD_DATA_LIMIT:
        return schema.DATA, text
    packed = gzip.compress(text, compresslevel=6, mtime=0)
    limit = threshold if record_limit is None else record_limit
    return (schema.DATA_GZIP if len(packed) <= limit else schema.DATA_LOCATION), packed


# What a restore may return: the Lambda runtime writes the return value with json.dumps' defaults.
RETURN_LIMIT = 262_144 - 1024


def _store(event: dict[str, Any]) -> None:
    meta = event["idempotency"]
    returned = len(json.dumps(event["result"]).encode())
    if returned > RETURN_LIMIT:
        raise ResultTooLarge(
            f"the result ({returned} bytes as a function returns it) is too large to be given back on a replay; it was not "
            f"stored (record {meta['id']})"
        )
    text = serialize(event["result"])
    attribute, payload = storage_form(text, int(event["inline_threshold"]), event.get("record_limit"))
    if attribute == schema.DATA_LOCATION and not event.get("bucket"):
        raise ResultTooLarge(
            f"the result ({len(text)} bytes of JSON, {len(payload)} compressed) is too large for the record "
            f"{meta['id']}; use ResultStorage.large() to keep it in S3"
        )
    if attribute == schema.DATA_LOCATION:
        namespace, digest = schema.split_id(meta["id"])
        # One object a holder: named by its whole token's digest (its holder part may hold any character).
        holder = hashlib.sha256(meta["owner"].encode()).hexdigest()[:32]
        key = f"{schema.object_prefix(namespace)}{digest}/{holder}.json.gz"
        _client("s3").put_object(
            Bucket=event["bucket"], Key=key, Body=payload, ContentType="application/json", ContentEncoding="gzip"
        )
        value: dict[str, Any] = {"S": f"s3://{event['bucket']}/{key}"}
    elif attribute == schema.DATA_GZIP:
        value = {"B": payload}
    else:
        value = {"S": payload.decode()}
    attributes = {
        schema.STATUS: {"S": schema.COMPLETED},
        schema.EXPIRATION: {"N": str(int(time.time()) + int(event["expires_after_seconds"]))},
        schema.OWNER: {"S": meta["owner"]},
        schema.VALIDATION: {"S": meta["validation"]},
        attribute: value,
    }
    others = [
        name
        for name in (schema.DATA, schema.DATA_GZIP, schema.DATA_LOCATION, schema.ERROR, schema.CAUSE, schema.HELD_BY)
        if name != attribute
    ]
    names = {f"#{name}": name for name in [*attributes, *others]}
    try:
        _client("dynamodb").update_item(
            TableName=event["table"],
            Key={schema.ID: {"S": meta["id"]}},
            # Still this holder's. Unlike the native Complete (whose writer is the holder's own role), never
            # a record that is gone: the token is the only proof of who asks.
            ConditionExpression=schema.FENCE,
            UpdateExpression="SET "
            + ", ".join(f"#{name} = :{name}" for name in attributes)
            + " REMOVE "
            + ", ".join(f"#{name}" for name in others),
            ExpressionAttributeNames=names,
            ExpressionAttributeValues={f":{name}": value for name, value in attributes.items()},
        )
    except _client("dynamodb").exceptions.ConditionalCheckFailedException as error:
        raise LeaseLost(
            f"record {meta['id']} is no longer this run's (another execution took its key over, or it was "
            "released or reset); this run's result was not stored."
        ) from error
    logger.info(
        "result stored",
        extra={
            **telemetry.record_fields(meta["id"]),
            "json_bytes": len(text),
            "stored_as": attribute,
            "stored_bytes": len(payload),
        },
    )


def _restore(table: str, record_id: str, owner: str, validation: str | None) -> Any:
    record = _client("dynamodb").get_item(TableName=table, Key={schema.ID: {"S": record_id}}, ConsistentRead=True).get("Item", {})
    if record.get(schema.OWNER, {}).get("S") != owner:
        # Reset or taken over since it was read, or asked for by whoever never read it: the same answer.
        raise ResultMissing(f"record {record_id} is not the one this run read: its owner changed, or it is gone")
    if validation is not None and record.get(schema.VALIDATION, {}).get("S") != validation:
        # Reset or expired, and completed for another payload, since the guard read it.
        raise ResultMissing(f"record {record_id} changed since it was read: it now holds another payload's result")
    if schema.DATA in record:
        return json.loads(record[schema.DATA]["S"])
    if schema.DATA_GZIP in record:
        return json.loads(gzip.decompress(record[schema.DATA_GZIP]["B"]))
    if schema.DATA_LOCATION not in record:
        raise ResultMissing(
            f"record {record_id} holds no result (it changed since it was read, or was not written with large results)"
        )
    bucket, _, key = record[schema.DATA_LOCATION]["S"].removeprefix("s3://").partition("/")
    try:
        body = _client("s3").get_object(Bucket=bucket, Key=key)["Body"].read()
    except _client("s3").exceptions.NoSuchKey:
        raise ResultMissing(
            f"the result object of record {record_id} is gone from s3://{bucket}/{key}; reset the record "
            "(idempotent-constructs reset) to run the work again"
        ) from None
    return json.loads(gzip.decompress(body))


def handler(event: dict[str, Any], context: Any = None) -> Any:
    if event["action"] == "store":
        return _store(event)
    return _restore(event["table"], event["id"], event["owner"], event.get("validation"))
