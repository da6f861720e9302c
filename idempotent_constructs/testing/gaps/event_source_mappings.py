"""Gap: moto plays an event source mapping itself, and not as Lambda does. On each ``SendMessage`` to a mapped
SQS queue (and each write to a mapped DynamoDB table) it invokes the function at once, one message to an
event, with ``ApproximateReceiveCount`` always ``"1"``. It deletes the message when the function answers,
reading no partial batch response, and makes a failed one visible again at once, with no visibility timeout.

AWS (Lambda developer guide, "Using Lambda with Amazon SQS"): Lambda polls the queue and invokes the function
with batches of up to the mapping's ``BatchSize``. A function error leaves the batch to come back after the
visibility timeout. With ``FunctionResponseTypes: ["ReportBatchItemFailures"]``, only the records the
function's ``batchItemFailures`` names come back.

Here a mapping is created and listed, but moto does not deliver to it: a test plays it with
``testing.delivery.EventSourceMapping.of``, which follows those rules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..patches import Patch


def install(patch: Patch) -> None:
    from moto.awslambda.models import LambdaBackend
    from moto.dynamodb.models import dynamodb_backends
    from moto.sqs.models import sqs_backends

    create = LambdaBackend.create_event_source_mapping

    def create_event_source_mapping(backend: LambdaBackend, spec: dict[str, Any]) -> Any:
        mapping = create(backend, spec)
        queues = sqs_backends[backend.account_id][backend.region_name].queues.values()
        tables = dynamodb_backends[backend.account_id][backend.region_name].tables.values()
        for source in (*queues, *tables):  # moto delivers to what a source lists; it lists nothing now
            getattr(source, "lambda_event_source_mappings", {}).pop(mapping.function_arn, None)
        return mapping

    patch(LambdaBackend, "create_event_source_mapping", create_event_source_mapping)
