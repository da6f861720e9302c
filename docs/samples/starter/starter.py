"""docs/guides/event-sources.md: a starter function behind an SQS event source mapping (with
``FunctionResponseTypes: ["ReportBatchItemFailures"]``) that hands the batch to an Express workflow made of an
IdempotentBatch and returns its partial batch response (tests/emulator/test_delivery.py runs it through
``testing.delivery.EventSourceMapping``)."""

# --8<-- [start:sample]
import json
import os
from typing import Any

import boto3

states = boto3.client("stepfunctions")


def handler(event: dict[str, Any], context: object = None) -> Any:
    # The workflow waits for nothing longer than its Express run; the function's timeout must cover it.
    result = states.start_sync_execution(stateMachineArn=os.environ["STATE_MACHINE_ARN"], input=json.dumps(event["Records"]))
    if result["status"] != "SUCCEEDED":  # the execution failed as a whole: the mapping delivers the batch again
        raise RuntimeError(f"{result['status']}: {result.get('error')}")
    return json.loads(result["output"])  # {"batchItemFailures": [{"itemIdentifier": <messageId>}, ...]}


# --8<-- [end:sample]
