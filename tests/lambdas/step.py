"""One step of an order workflow with a counted side effect: adds ``{step: "done"}`` to its input.

Each real run adds one to the counter ``{workflow}#{order id}#{step}`` in the table named by
``COUNTER_TABLE``. With ``fail_first``, the first run of the step for an order fails (``StepFailed``)
after counting, as a step that did part of its work and then broke would.
"""

import os
from typing import Any

import boto3

counters = boto3.client("dynamodb")


class StepFailed(Exception):
    pass


def handler(event: dict[str, Any], context: object = None) -> dict[str, Any]:
    data, step = event["input"], event["step"]
    counter = f"{event['workflow']}#{data['order']['id']}#{step}"
    runs = counters.update_item(
        TableName=os.environ["COUNTER_TABLE"],
        Key={"id": {"S": counter}},
        UpdateExpression="ADD runs :one",
        ExpressionAttributeValues={":one": {"N": "1"}},
        ReturnValues="UPDATED_NEW",
    )["Attributes"]["runs"]["N"]
    if event.get("fail_first") and runs == "1":
        raise StepFailed(f"step {step} failed on its first run")
    return {**data, step: "done"}
