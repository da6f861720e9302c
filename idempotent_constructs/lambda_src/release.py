"""Release function: frees the keys held by a Standard execution that ended without releasing them.

Triggered by EventBridge's "Step Functions Execution Status Change" events for FAILED, TIMED_OUT and
ABORTED executions of the watched state machines. An aborted or timed-out execution, or one that
died on an error no Catch can handle, leaves its records INPROGRESS until their lease lapses; this
frees them within seconds instead.

It first asks whether the execution is still over (a redrive may have restarted it since the event
was sent: then it leaves everything alone). DescribeExecution is eventually consistent: right after
the event it may still read ``RUNNING``. A read that says running while the redrive count is still the
event's is such a stale read: the function raises ``ExecutionStillReadsRunning``, so that Lambda
retries the asynchronous invocation (twice, after about one and three minutes), rather than leave the
key held until its lease lapses. It then reads the execution's history for the records it
acquired (the Acquire and Takeover writes, which carry the owner token) and deletes each one on
condition that it is still in progress and still owned by that execution's holder, so it can never
touch another holder's record or a finished one. A transient error is raised, so that Lambda retries
the asynchronous invocation (twice); a record it may not delete (a table it was not granted) is
logged and left to the lease. Only record ids and counts are logged, never payloads.
"""

from __future__ import annotations

import json
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


def held_records(history: list[dict[str, Any]], execution_arn: str) -> Iterator[tuple[str, str, str]]:
    """``(table, id, owner)`` of every record the execution wrote as its own holder: the guard's
    Acquire and Takeover, and the writes after them, are updates whose ``:owner`` is its token."""
    for event in history:
        details = event.get("taskScheduledEventDetails")
        if not details or details.get("resourceType") != "dynamodb" or details.get("resource") != "updateItem":
            continue
        parameters = json.loads(details["parameters"])
        owner = parameters.get("ExpressionAttributeValues", {}).get(f":{schema.OWNER}", {}).get("S", "")
        if schema.owned_by(owner, execution_arn) and schema.ID in parameters.get("Key", {}):
            yield parameters["TableName"], parameters["Key"][schema.ID]["S"], owner


def _history(client: Any, execution_arn: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for page in client.get_paginator("get_execution_history").paginate(executionArn=execution_arn, includeExecutionData=True):
        events.extend(page["events"])
    return events


def still_over(client: Any, detail: dict[str, Any]) -> bool:
    """The execution has not been redriven since the event: it is still in an ended status, and
    (when the event says which attempt ended) still at the same redrive count. Raises
    ``ExecutionStillReadsRunning`` when it reads as running at the event's redrive count: the event
    says it ended, so that read is stale."""
    current = client.describe_execution(executionArn=detail["executionArn"])
    redriven = "redriveCount" in detail and current.get("redriveCount", 0) != detail["redriveCount"]
    if current["status"] in schema.EXECUTION_ENDED_WITHOUT_RELEASE:
        return not redriven
    if current["status"] == "RUNNING" and not redriven:
        raise ExecutionStillReadsRunning(
            f"{detail['executionArn']} reads as RUNNING after an event saying it ended ({detail.get('status')}): "
            "DescribeExecution is eventually consistent; retried"
        )
    return False


def handler(event: dict[str, Any], context: Any = None) -> dict[str, int]:
    detail = event.get("detail", {})
    execution_arn = detail.get("executionArn", "")
    nothing = {"released": 0, "skipped": 0, "denied": 0}
    if detail.get("status") not in schema.EXECUTION_ENDED_WITHOUT_RELEASE or not execution_arn:
        return nothing
    stepfunctions = boto3.client("stepfunctions")
    if not still_over(stepfunctions, detail):
        return nothing
    history = _history(stepfunctions, execution_arn)
    dynamodb = boto3.client("dynamodb")
    released = skipped = denied = 0
    for table, record_id, owner in dict.fromkeys(held_records(history, execution_arn)):
        try:
            dynamodb.delete_item(
                TableName=table,
                Key={schema.ID: {"S": record_id}},
                ConditionExpression=f"{schema.FENCE} AND #{schema.STATUS} = :{schema.STATUS}",
                ExpressionAttributeNames={f"#{schema.OWNER}": schema.OWNER, f"#{schema.STATUS}": schema.STATUS},
                ExpressionAttributeValues={f":{schema.OWNER}": {"S": owner}, f":{schema.STATUS}": {"S": schema.INPROGRESS}},
            )
            released += 1
        except ClientError as error:
            code = error.response["Error"]["Code"]
            if code == "ConditionalCheckFailedException":
                skipped += 1  # finished, released or taken over meanwhile
            elif code == "AccessDeniedException":
                denied += 1  # a guard's table this function was not granted: the lease will do
                logger.warning(
                    "not allowed to release",
                    extra={**telemetry.record_fields(record_id), "execution": execution_arn, "table": table},
                )
            else:
                raise  # transient: Lambda retries the asynchronous invocation
    result = {"released": released, "skipped": skipped, "denied": denied}
    logger.info("execution ended", extra={"execution": execution_arn, "status": detail["status"], **result})
    return result
