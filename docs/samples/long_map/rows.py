"""docs/guides/per-step.md, "Long Maps: the history limit": an import of thousands of rows in one Standard execution,
each row run once per row id by a guard in a Distributed Map (tests/emulator/test_long_map.py runs it on the local
emulator with duplicate ids among the rows).

An inline Map writes every item's events into the execution's one history, which fails at 25,000 events: for this
guard 19 events a row, so past about 1,315 rows (synth says so, as a note on the state machine). A Distributed Map
runs each row in a child execution of its own, with a history of its own; the parent's history holds the Map run's
few events, whatever the number of rows. The side effect here is a counter in a DynamoDB table (``Effects``,
``runs`` on the row's id) that each real run adds one to: your Lambda task, say.
"""

from aws_cdk import RemovalPolicy, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

from idempotent_constructs import IdempotencyGuard, IdempotencyKey, IdempotencyTable


def once_per_row(scope: Construct, table: IdempotencyTable, effects: dynamodb.ITable) -> IdempotencyGuard:
    """The side effect of one row (``{"id": ...}``), run once per row id, whichever import and child execution the
    row comes in; its output ``{"id": ...}``, the first run's on a replay."""
    effect = tasks.DynamoUpdateItem.jsonata(
        scope,
        "Effect",
        table=effects,
        key={"id": tasks.DynamoAttributeValue.from_string("{% $states.input.id %}")},
        update_expression="ADD runs :one",
        expression_attribute_values={":one": tasks.DynamoAttributeValue.from_number(1)},
        outputs={"id": "{% $states.input.id %}"},  # small: the Map gathers every row's output
    )
    return IdempotencyGuard(scope, "RowOnce", table=table, body=effect, key=IdempotencyKey.from_jsonata("$states.input.id"))


class RowsStack(Stack):
    """``Import``: input ``{"rows": [{"id": ...}, ...]}``, output ``{"rows": <how many>}``.

    ``max_concurrency``: how many child executions run at once; None, Step Functions' default (up to 10,000)."""

    def __init__(self, scope: Construct, construct_id: str, *, max_concurrency: int | None = None) -> None:
        super().__init__(scope, construct_id)
        table = IdempotencyTable(self, "Idempotency")  # retained, encrypted, TTL on
        self.effects = dynamodb.Table(
            self,
            "Effects",
            partition_key=dynamodb.Attribute(name="id", type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            removal_policy=RemovalPolicy.DESTROY,
        )
        # --8<-- [start:sample]
        rows = sfn.DistributedMap.jsonata(
            self,
            "Rows",
            items=sfn.ProvideItems.jsonata("{% $states.input.rows %}"),  # or item_reader=: a file in S3
            max_concurrency=max_concurrency,
            outputs={"rows": "{% $count($states.result) %}"},  # a count, not every row's output
        ).item_processor(once_per_row(self, table, self.effects))  # each row a child execution
        self.imports = sfn.StateMachine(self, "Import", definition_body=sfn.DefinitionBody.from_chainable(rows))
        # --8<-- [end:sample]
