"""One service call of the sample workflows in tests/asl, with a counted side effect: the function of
the step named by ``STEP`` adds ``{STEP: "done"}`` to its input.

Each real run adds one to the counter ``{trip_id}#{STEP}`` in the table named by ``COUNTER_TABLE``. As
the saga sample's own functions do on request (its README's ``run_type``), it fails (``StepFailed``)
when the input's ``run_type`` is ``fail{STEP}``, and on its first run for the trip only when it is
``fail{STEP}Once``: a failure that a retry mends.
"""

import os
from typing import Any

import boto3

counters = boto3.client("dynamodb")


class StepFailed(Exception):
    pass


def handler(event: dict[str, Any], context: object = None) -> dict[str, Any]:
    step = os.environ["STEP"]
    runs = counters.update_item(
        TableName=os.environ["COUNTER_TABLE"],
        Key={"id": {"S": f"{event['trip_id']}#{step}"}},
        UpdateExpression="ADD runs :one",
        ExpressionAttributeValues={":one": {"N": "1"}},
        ReturnValues="UPDATED_NEW",
    )["Attributes"]["runs"]["N"]
    run_type = event.get("run_type")
    if run_type == f"fail{step}" or (run_type == f"fail{step}Once" and runs == "1"):
        raise StepFailed(f"{step} failed on request ({run_type})")
    return {**event, step: "done"}
