"""docs/guides/event-sources.md: a batch of SQS messages (as a pipe or a Lambda hands it over) processed
record by record, each guarded on its message id (tests/test_docs.py synthesizes it; tests/recipes.py
runs it on the local emulator, redelivered as a pipe redelivers a batch)."""

from typing import Any

from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from idempotent_constructs import IdempotencyGuard, IdempotencyKey, IdempotencyPayload, IdempotencyTable


def batch(self: Construct, table: IdempotencyTable, process_one_record: sfn.IChainable, **options: Any) -> sfn.Map:
    # --8<-- [start:sample]
    guard = IdempotencyGuard(
        self,
        "Record",
        table=table,
        body=process_one_record,
        key=IdempotencyKey.from_paths("$.messageId"),
        payload=IdempotencyPayload.from_paths("$.body"),
        **options,  # the guard's other options
    )
    # A record that fails is caught, so that the others finish (a failed Map would stop them) and the
    # batch fails after: the source delivers it again.
    item = sfn.Parallel.jsonata(self, "Guarded", outputs="{% $states.result[0] %}").branch(guard)
    item.add_catch(sfn.Pass.jsonata(self, "RecordFailed", outputs={"failed": True}))
    each = sfn.Map.jsonata(
        self, "EachRecord", max_concurrency=4, items=sfn.ProvideItems.jsonata("{% $states.input %}")
    ).item_processor(item)
    each.next(
        sfn.Choice.jsonata(self, "AnyFailed")
        .when(
            sfn.Condition.jsonata("{% $count($states.input[failed = true]) > 0 %}"),
            sfn.Fail(self, "BatchFailed", error="RecordsFailed"),
        )
        .otherwise(sfn.Succeed(self, "BatchDone"))
    )
    # --8<-- [end:sample]
    return each
