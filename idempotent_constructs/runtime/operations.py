"""Operating on records at run time: look one up, list them (``listing``), reset one so that its work runs again,
purge expired ones, find a stack's table (``table_of_stack``, from ``stack_table``).

Plain boto3, no CDK: for scripts, runbooks and the command-line tool, which must start fast. Pass a
client to use an endpoint, credentials or retry settings of your own; the default is
``boto3.client("dynamodb")``, which honours ``AWS_ENDPOINT_URL`` (the local emulator).
"""

from __future__ import annotations

import base64
import time
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from ..errors import RecordInProgressError, RecordNotFoundError
from ..lambda_src import schema
from .listing import dynamodb_client, list_records
from .stack_table import table_of_stack

__all__ = [
    "PURGE_GRACE_SECONDS",
    "PurgeSummary",
    "get_record",
    "holder_of",
    "holder_state",
    "list_records",
    "plain",
    "purge_expired",
    "reset",
    "table_of_stack",
]


def get_record(table_name: str, record_id: str, *, client: Any = None) -> dict[str, Any]:
    """The record ``record_id`` as DynamoDB JSON (a consistent read).

    :raises RecordNotFoundError: no record has that id.
    """
    item: dict[str, Any] | None = (
        dynamodb_client(client).get_item(TableName=table_name, Key={schema.ID: {"S": record_id}}, ConsistentRead=True).get("Item")
    )
    if item is None:
        raise RecordNotFoundError(f"no idempotency record {record_id!r} in table {table_name!r}")
    return item


def reset(
    table_name: str, record_id: str, *, holder: str | None = None, lease: int | None = None, client: Any = None
) -> dict[str, Any]:
    """Delete one record, so that the next request with its key runs the work again; returns the
    deleted record (DynamoDB JSON).

    A record in progress is refused unless ``holder`` names the execution that holds it (the ARN of its
    owner token, ``holder_of``): its holder may still be running, and a duplicate started after the
    reset would run alongside it (``holder_state`` tells whether it runs). Named, it is deleted only while
    that execution holds it still. A record in progress without an owner token (written by another tool,
    such as Powertools' idempotency for a function) has no holder to name: ``lease``, its lease as read
    (``in_progress_expiration``; 0 where it has none), deletes it only while it has no owner token and that
    lease still. A finished record's result object in S3, if any, is left to the bucket's lifecycle rule.

    :raises RecordNotFoundError: no record has that id.
    :raises RecordInProgressError: the record is in progress, and neither ``holder`` nor ``lease`` is its own.
    """
    dynamodb = dynamodb_client(client)
    try:
        return _delete(dynamodb, table_name, record_id, holder, lease)
    except RecordInProgressError:
        # It may have finished between the delete and the read that explained the refusal: once more.
        if get_record(table_name, record_id, client=dynamodb)[schema.STATUS]["S"] == schema.INPROGRESS:
            raise
        return _delete(dynamodb, table_name, record_id, holder, lease)


def holder_of(record: dict[str, Any]) -> str:
    """The execution ARN of the holder of ``record`` (DynamoDB JSON; "" for a record without one)."""
    return schema.owner_execution(record.get(schema.OWNER, {}).get("S", ""))


def _delete(dynamodb: Any, table_name: str, record_id: str, holder: str | None, lease: int | None) -> dict[str, Any]:
    condition = f"attribute_exists(#{schema.ID}) AND (#{schema.STATUS} <> :{schema.INPROGRESS}"
    values: dict[str, Any] = {f":{schema.INPROGRESS}": {"S": schema.INPROGRESS}}
    names = {f"#{schema.ID}": schema.ID, f"#{schema.STATUS}": schema.STATUS}
    if holder:  # or held by that execution still
        condition += f" OR begins_with(#{schema.OWNER}, :holder)"
        values[":holder"] = {"S": holder + schema.OWNER_SEPARATOR}
        names[f"#{schema.OWNER}"] = schema.OWNER
    if lease is not None:  # or without an owner token, under the lease read still (0: without one still)
        unchanged = (
            f"#{schema.IN_PROGRESS_EXPIRATION} = :lease" if lease else f"attribute_not_exists(#{schema.IN_PROGRESS_EXPIRATION})"
        )
        condition += f" OR (attribute_not_exists(#{schema.OWNER}) AND {unchanged})"
        if lease:
            values[":lease"] = {"N": str(lease)}
        names[f"#{schema.OWNER}"] = schema.OWNER
        names[f"#{schema.IN_PROGRESS_EXPIRATION}"] = schema.IN_PROGRESS_EXPIRATION
    try:
        response = dynamodb.delete_item(
            TableName=table_name,
            Key={schema.ID: {"S": record_id}},
            ConditionExpression=condition + ")",
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
            ReturnValues="ALL_OLD",
        )
    except dynamodb.exceptions.ConditionalCheckFailedException:
        record = get_record(table_name, record_id, client=dynamodb)  # raises RecordNotFoundError if absent
        named = "" if holder is None else f", not by {holder}"
        raise RecordInProgressError(
            f"idempotency record {record_id!r} is in progress: held by {holder_of(record) or 'an execution'}{named}, "
            "which may still be running; wait for it to finish, or reset with holder=<its execution ARN> if you "
            "know it is gone"
        ) from None
    deleted: dict[str, Any] = response["Attributes"]
    return deleted


def holder_state(record: dict[str, Any], *, stepfunctions: Any = None, now: float | None = None) -> tuple[bool, str]:
    """``(ended, why)``: whether the holder of ``record`` (in progress) can no longer act on it, and why.

    A Standard execution: Step Functions is asked (ended: SUCCEEDED, FAILED, TIMED_OUT, ABORTED). An
    Express one, which DescribeExecution does not describe, one it does not know (its answers are
    eventually consistent, so a new execution may be unknown yet), or a holder that cannot be asked:
    ended once its lease has lapsed, as a duplicate would take the record over then.
    """
    holder = holder_of(record)
    lease = int(record.get(schema.IN_PROGRESS_EXPIRATION, {}).get("N", "0"))
    lapsed = lease <= (time.time() if now is None else now) * 1000
    until = time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(lease / 1000))
    by_lease = "its lease has lapsed" if lapsed else f"its lease runs until {until}"
    if not holder.startswith("arn:") or ":express:" in holder:
        return lapsed, f"{by_lease} (Step Functions does not describe an Express execution)"
    if stepfunctions is None:
        import boto3

        stepfunctions = boto3.client("stepfunctions")
    client = stepfunctions
    try:
        described = client.describe_execution(executionArn=holder, includedData="METADATA_ONLY")
    except client.exceptions.ExecutionDoesNotExist:
        # DescribeExecution is eventually consistent: a holder started a moment ago may be unknown yet.
        return lapsed, f"{by_lease} (Step Functions does not know its execution, not yet or no more)"
    except client.exceptions.ClientError as error:
        return lapsed, f"{by_lease} (Step Functions could not be asked: {error.response['Error']['Code']})"
    status = described["status"]
    ended = status in schema.EXECUTION_ENDED
    why = f"its execution {'ended' if ended else 'is'} {status}, as Step Functions says"
    if ended and described.get("redriveStatus") in schema.REDRIVABLE:
        # FailurePolicy.KEEP_FOR_REDRIVE keeps such a key for the redrive: a reset gives it up.
        why += "; it can still be redriven: do not, once reset (it would run the rest of its work beside the next run)"
    return ended, why


# --- listing --------------------------------------------------------------------------------------
# --- purging --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PurgeSummary:
    """What ``purge_expired`` did."""

    scanned: int
    """Records read (the whole table)."""
    deleted: int
    """Expired finished records deleted (with ``dry_run``: that would have been deleted)."""
    in_progress: int
    """Expired records still in progress, kept: a purge never deletes one (see ``purge_expired``)."""
    changed: int
    """Expired records that changed or vanished between the scan and their delete, kept."""


PURGE_GRACE_SECONDS = 300


def purge_expired(
    table_name: str,
    *,
    now: int | None = None,
    grace_seconds: int = PURGE_GRACE_SECONDS,
    dry_run: bool = False,
    client: Any = None,
    on_page: Callable[[int], None] | None = None,
) -> PurgeSummary:
    """Delete every finished record whose ``expiration`` has passed: what DynamoDB's TTL deletion
    does, which can lag by days. Such records already count as absent (B11), so this changes no
    outcome; it only tidies listings and storage.

    Each delete is fenced on the status, expiration and owner that were read, so a record that was
    acquired again, completed or taken over meanwhile is never deleted (it is counted as changed).

    Records in progress are never deleted, even past ``expiration``. For them ``expiration`` is how
    long a holder may run (366 days for a Standard workflow with the owner check), and the workflows
    themselves do not treat them as absent: Acquire never overwrites a record in progress, only a
    takeover after the lease (and liveness check) does. Deleting one would be a step the workflows
    never take. They are counted in ``in_progress``; DynamoDB's TTL still removes them, and
    ``reset(..., holder=...)`` removes one on purpose.

    :param now: epoch seconds to compare ``expiration`` with. Default: the current time.
    :param grace_seconds: only records expired at least this long ago are deleted, so that a clock
        running ahead of the workflows' (the key function's) never deletes a record they still
        replay from. Default: ``PURGE_GRACE_SECONDS`` (5 minutes).
    :param dry_run: count what would be deleted, delete nothing. Default: ``False``.
    :param on_page: called with the number of records each page of the scan read, to show progress.
    """
    dynamodb = dynamodb_client(client)
    cutoff = (int(time.time()) if now is None else int(now)) - grace_seconds
    names = {f"#{name}": name for name in (schema.ID, schema.STATUS, schema.EXPIRATION, schema.OWNER)}
    pages = dynamodb.get_paginator("scan").paginate(
        TableName=table_name,
        FilterExpression=f"#{schema.EXPIRATION} < :now",
        ProjectionExpression=", ".join(names),
        ExpressionAttributeNames=names,
        ExpressionAttributeValues={":now": {"N": str(cutoff)}},
    )
    scanned = deleted = in_progress = changed = 0
    for page in pages:
        scanned += page.get("ScannedCount", 0)
        if on_page is not None:
            on_page(page.get("ScannedCount", 0))
        for item in page["Items"]:
            if item.get(schema.STATUS, {}).get("S") == schema.INPROGRESS:
                in_progress += 1
            elif dry_run or _delete_unchanged(dynamodb, table_name, item):
                deleted += 1
            else:
                changed += 1
    return PurgeSummary(scanned=scanned, deleted=deleted, in_progress=in_progress, changed=changed)


def _delete_unchanged(dynamodb: Any, table_name: str, seen: dict[str, Any]) -> bool:
    """Delete the record only if its status, expiration and owner are still those in ``seen``."""
    conditions, names, values = [], {}, {}
    for name in (schema.STATUS, schema.EXPIRATION, schema.OWNER):
        names[f"#{name}"] = name
        if name in seen:
            conditions.append(f"#{name} = :{name}")
            values[f":{name}"] = seen[name]
        else:
            conditions.append(f"attribute_not_exists(#{name})")
    try:
        dynamodb.delete_item(
            TableName=table_name,
            Key={schema.ID: seen[schema.ID]},
            ConditionExpression=" AND ".join(conditions),
            ExpressionAttributeNames=names,
            **({"ExpressionAttributeValues": values} if values else {}),
        )
    except dynamodb.exceptions.ConditionalCheckFailedException:
        return False
    return True


# --- plain JSON -----------------------------------------------------------------------------------
def plain(item: dict[str, Any]) -> dict[str, Any]:
    """A record in DynamoDB JSON as plain JSON values (numbers as numbers, binary as base64 text),
    for printing and for scripts that do not want to know DynamoDB's type tags."""
    return {name: _plain_value(value) for name, value in item.items()}


def _plain_value(value: dict[str, Any]) -> Any:
    ((kind, content),) = value.items()
    if kind == "N":
        number = Decimal(content)
        return int(number) if number == number.to_integral_value() else float(number)
    if kind == "B":
        return base64.b64encode(content).decode() if isinstance(content, (bytes, bytearray)) else content
    if kind == "NULL":
        return None
    if kind == "L":
        return [_plain_value(element) for element in content]
    if kind == "M":
        return plain(content)
    if kind in ("NS", "BS"):
        return [_plain_value({kind[0]: element}) for element in content]
    return content  # S, BOOL, SS
