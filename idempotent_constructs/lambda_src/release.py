"""Release function: frees the keys held by a Standard execution that ended without releasing them.

Triggered by EventBridge's "Step Functions Execution Status Change" events for FAILED, TIMED_OUT and
ABORTED executions of the watched state machines. An aborted or timed-out execution, or one that
died on an error no Catch can handle, leaves its records INPROGRESS until their lease lapses; this
frees them within seconds instead.

It first asks whether the execution is still over (a redrive may have restarted it since the event
was sent: then it leaves everything alone), reading its metadata only. DescribeExecution is eventually
consistent: right after the event it may still read ``RUNNING``. A read that says running while the
redrive count is still the event's is such a stale read: the function raises
``ExecutionStillReadsRunning``, so that Lambda retries the asynchronous invocation (twice, after about
one and three minutes), rather than leave the key held until its lease lapses. It then asks each table
it serves (``IDEMPOTENCY_TABLES``) for the records the execution holds, by the holder index (the
records in progress whose ``held_by`` is its ARN), and deletes each one on condition that it is still
in progress and still held by that execution (``held_by`` and the owner token), so it can never touch
another holder's record or a finished one. It reads no execution data: no history, no input, no payload. A transient error is
raised, so that Lambda retries the asynchronous invocation (twice), and so is a table it may not list;
a table without the index (a table of yours given as ``table=``), or a record it may not delete, is
logged and left to the lease.
Only record ids and counts are logged, never payloads.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import boto3
from botocore.exceptions import ClientError

try:  # imported as part of the library
    from . import schema, telemetry
except ImportError:  # imported by the Lambda runtime from the asset root
    import schema  # type: ignore[no-redef,import-not-found]
    import telemetry  # type: ignore[no-redef,import-not-found]

logger = telemetry.get_logger()


class ExecutionStillReadsRunning(Exception):
    """DescribeExecution still says the ended execution runs (eventual consistency): retry later."""


def held_records(dynamodb: Any, table: str, execution_arn: str) -> Iterator[str]:
    """The ids of the records in ``table`` that the execution holds, as the holder index reads them
    (eventually consistent: a record finished since may still be listed; the delete's condition tells)."""
    pages = dynamodb.get_paginator("query").paginate(
        TableName=table,
        IndexName=schema.HOLDER_INDEX,
        KeyConditionExpression=f"#{schema.HELD_BY} = :{schema.HELD_BY}",
        ExpressionAttributeNames={f"#{schema.HELD_BY}": schema.HELD_BY},
        ExpressionAttributeValues={f":{schema.HELD_BY}": {"S": execution_arn}},
    )
    for page in pages:
        for item in page["Items"]:
            yield item[schema.ID]["S"]


def still_over(client: Any, detail: dict[str, Any]) -> bool:
    """The execution has not been redriven since the event: it is still in an ended status, and
    (when the event says which attempt ended) still at the same redrive count. Raises
    ``ExecutionStillReadsRunning`` when it reads as running at the event's redrive count: the event
    says it ended, so that read is stale."""
    current = client.describe_execution(executionArn=detail["executionArn"], includedData="METADATA_ONLY")
    redriven = "redriveCount" in detail and current.get("redriveCount", 0) != detail["redriveCount"]
    if current["status"] in schema.EXECUTION_ENDED_WITHOUT_RELEASE:
        return not redriven
    if current["status"] == "RUNNING" and not redriven:
        raise ExecutionStillReadsRunning(
            f"{detail['executionArn']} reads as RUNNING after an event saying it ended ({detail.get('status')}): "
            "DescribeExecution is eventually consistent; retried"
        )
    return False


def _release(dynamodb: Any, table: str, record_id: str, execution_arn: str) -> str:
    """Delete the record while the execution still holds it: ``released``, ``skipped`` (finished, released or
    taken over since the index was written) or ``denied`` (a namespace this function was not granted: the
    lease will do). A transient error is raised: Lambda retries the asynchronous invocation."""
    try:
        dynamodb.delete_item(
            TableName=table,
            Key={schema.ID: {"S": record_id}},
            # Still in progress and still this execution's: its owner token too, not only held_by, which a
            # definition from before the holder index (an execution started before the deploy that added it)
            # leaves as it was when it takes a record over.
            ConditionExpression=f"#{schema.HELD_BY} = :{schema.HELD_BY} AND #{schema.STATUS} = :{schema.STATUS}"
            f" AND begins_with(#{schema.OWNER}, :{schema.OWNER})",
            ExpressionAttributeNames={
                f"#{schema.HELD_BY}": schema.HELD_BY,
                f"#{schema.STATUS}": schema.STATUS,
                f"#{schema.OWNER}": schema.OWNER,
            },
            ExpressionAttributeValues={
                f":{schema.HELD_BY}": {"S": execution_arn},
                f":{schema.STATUS}": {"S": schema.INPROGRESS},
                f":{schema.OWNER}": {"S": execution_arn + schema.OWNER_SEPARATOR},
            },
        )
    except ClientError as error:
        code = error.response["Error"]["Code"]
        if code == "ConditionalCheckFailedException":
            return "skipped"
        if code != "AccessDeniedException":
            raise
        logger.warning(
            "not allowed to release", extra={**telemetry.record_fields(record_id), "execution": execution_arn, "table": table}
        )
        return "denied"
    return "released"


def handler(event: dict[str, Any], context: Any = None) -> dict[str, int]:
    detail = event.get("detail", {})
    execution_arn = detail.get("executionArn", "")
    nothing = {"released": 0, "skipped": 0, "denied": 0}
    if detail.get("status") not in schema.EXECUTION_ENDED_WITHOUT_RELEASE or not execution_arn:
        return nothing
    stepfunctions = boto3.client("stepfunctions")
    if not still_over(stepfunctions, detail):
        return nothing
    dynamodb = boto3.client("dynamodb")
    result = dict(nothing)
    for table in filter(None, os.environ.get(schema.TABLES_ENV, "").split(",")):
        try:
            held = list(held_records(dynamodb, table, execution_arn))
        except ClientError as error:
            # No holder index (a table of yours: AWS says ValidationException, moto ResourceNotFoundException,
            # AWS's word for a table that is gone): the lease will do. Anything else, not being allowed to list
            # included, is raised: Lambda retries, then the event goes to the dead-letter queue, whose alarm
            # fires, rather than every release of a misconfigured stack failing in silence.
            if error.response["Error"]["Code"] not in ("ValidationException", "ResourceNotFoundException"):
                raise
            result["denied"] += 1
            logger.warning("cannot list the records held", extra={"execution": execution_arn, "table": table})
            continue
        for record_id in held:
            result[_release(dynamodb, table, record_id, execution_arn)] += 1
    logger.info("execution ended", extra={"execution": execution_arn, "status": detail["status"], **result})
    return result
