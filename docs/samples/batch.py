"""docs/guides/event-sources.md: a batch of SQS messages (as a pipe or a starter function hands it over) made
idempotent record by record with IdempotentBatch (tests/test_docs.py synthesizes it; tests/recipes.py runs
it on the local emulator, the failed records delivered again as a pipe delivers them)."""

from typing import Any

from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from idempotent_constructs import BatchSource, IdempotencyTable, IdempotentBatch


def batch(self: Construct, table: IdempotencyTable, process_one_record: sfn.IChainable, **options: Any) -> IdempotentBatch:
    # --8<-- [start:sample]
    payments = IdempotentBatch(
        self,
        "Payments",
        table=table,
        body=process_one_record,  # its input: one record, {"messageId", "body", ...}
        source=BatchSource.SQS,  # each record keyed on its body, which a dead-letter queue redrive keeps
        max_concurrency=4,
        **options,  # the guard's other options
    )
    # Its output: {"batchItemFailures": [{"itemIdentifier": <messageId>}, ...]}
    # --8<-- [end:sample]
    return payments
