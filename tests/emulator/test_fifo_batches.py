"""Emulator end-to-end: a FIFO queue drained through a pipe into an ``IdempotentBatch`` with
``BatchSource.SQS_FIFO`` keeps each message group's order while records fail and are delivered again (issue 55).
Each payment appends its id to its group's ledger (one DynamoDB item a group), so a ledger shows both the order
and any second charge; a flaky payment fails on its first receive. The batch stops at the first failure and
answers it and every later record as failed; the queue gives them again in order, the ones done replay."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from aws_cdk import App, Duration, RemovalPolicy, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks

from idempotent_constructs import BatchSource, IdempotencyTable, IdempotentBatch
from idempotent_constructs.testing import Deployment, Faults, LocalEmulator
from idempotent_constructs.testing.delivery import Pipe, messages_in
from tests.stacks import FAST

PAYMENT = "$parse($states.input.body)"


class FifoPaymentsStack(Stack):
    """``Payments``: an Express workflow of a FIFO batch whose body fails a flaky payment on its first receive
    and otherwise appends the payment's id to its group's ``Ledger`` item; the FIFO queue ``Queue`` and its
    dead-letter queue (3 receives)."""

    def __init__(self, scope: App, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        table = IdempotencyTable(self, "Idempotency", removal_policy=RemovalPolicy.DESTROY)
        ledger = dynamodb.Table(
            self,
            "Ledger",
            partition_key=dynamodb.Attribute(name="id", type=dynamodb.AttributeType.STRING),
            removal_policy=RemovalPolicy.DESTROY,
        )
        append = tasks.CallAwsService.jsonata(
            self,
            "Append",
            service="dynamodb",
            action="updateItem",
            iam_resources=[ledger.table_arn],
            parameters={
                "TableName": ledger.table_name,
                "Key": {"id": {"S": "{% " + PAYMENT + ".group %}"}},
                "UpdateExpression": "SET #paid = list_append(if_not_exists(#paid, :none), :one)",
                "ExpressionAttributeNames": {"#paid": "paid"},
                "ExpressionAttributeValues": {":none": {"L": []}, ":one": {"L": [{"S": "{% " + PAYMENT + ".id %}"}]}},
            },
        )
        flaky = "{% " + PAYMENT + ".flaky = true and $states.input.attributes.ApproximateReceiveCount = '1' %}"
        body = (
            sfn.Choice.jsonata(self, "Flaky")
            .when(sfn.Condition.jsonata(flaky), sfn.Fail(self, "Declined", error="Declined"))
            .otherwise(append)
        )
        batch = IdempotentBatch(self, "Payments", table=table, body=body, source=BatchSource.SQS_FIFO, **FAST)
        sfn.StateMachine(
            self,
            "PaymentsMachine",
            definition_body=sfn.DefinitionBody.from_chainable(batch),
            state_machine_type=sfn.StateMachineType.EXPRESS,
        )
        # Named: the emulator takes a FIFO queue only by a name that ends in .fifo (CloudFormation makes one up).
        dead_letters = sqs.Queue(
            self, "DeadLetters", queue_name=f"{construct_id}-dead.fifo", fifo=True, removal_policy=RemovalPolicy.DESTROY
        )
        sqs.Queue(
            self,
            "Queue",
            queue_name=f"{construct_id}-payments.fifo",
            fifo=True,
            visibility_timeout=Duration.minutes(5),
            dead_letter_queue=sqs.DeadLetterQueue(queue=dead_letters, max_receive_count=3),
            removal_policy=RemovalPolicy.DESTROY,
        )


@pytest.fixture(scope="module")
def fifo(emulator: LocalEmulator, tmp_path_factory: pytest.TempPathFactory) -> Deployment:
    app = App(outdir=str(tmp_path_factory.mktemp("fifo-assembly")))
    return emulator.deploy_stack(FifoPaymentsStack(app, "FifoPayments"))


def ledgers(deployment: Deployment, groups: list[str]) -> dict[str, list[str]]:
    found = {item["id"]["S"]: [paid["S"] for paid in item["paid"]["L"]] for item in deployment.items("Ledger")}
    return {group: found.get(group, []) for group in groups}


def send_payments(deployment: Deployment) -> tuple[str, list[str], list[dict[str, Any]]]:
    """Three groups of four payments each, in order, two of them flaky, and a producer's retried send of the
    first (within the deduplication interval, which the queue drops): ``(queue, groups, payments)``."""
    run = uuid.uuid4().hex[:8]
    groups = [f"{run}-{name}" for name in ("alice", "bob", "carol")]
    payments: list[dict[str, Any]] = [
        {"group": group, "id": f"{group}-{n}", "flaky": (g, n) in {(0, 1), (1, 2)}}
        for n in range(4)
        for g, group in enumerate(groups)
    ]
    queue = deployment.physical_id("AWS::SQS::Queue", "Queue")
    client = deployment.emulator.client("sqs")
    for payment in [*payments, payments[0]]:
        client.send_message(
            QueueUrl=queue, MessageBody=json.dumps(payment), MessageGroupId=payment["group"], MessageDeduplicationId=payment["id"]
        )
    return queue, groups, payments


def in_order_once(deployment: Deployment, queue: str, groups: list[str], payments: list[dict[str, Any]]) -> None:
    expected = {group: [p["id"] for p in payments if p["group"] == group] for group in groups}
    assert ledgers(deployment, groups) == expected  # each group in its order, each payment once
    dead_letters = deployment.physical_id("AWS::SQS::Queue", "DeadLetters")
    assert messages_in(deployment, queue) == [] and messages_in(deployment, dead_letters) == []


def test_a_fifo_batch_keeps_each_groups_order_while_records_fail_and_come_again(fifo):
    queue, groups, payments = send_payments(fifo)

    cycles = Pipe(fifo, queue, "PaymentsMachine", batch_size=10).drain()

    in_order_once(fifo, queue, groups, payments)
    # The first batch stopped at the first flaky payment: it and every later record were answered failed.
    first = cycles[0]
    assert first.execution is not None
    flaky_at = next(i for i, record in enumerate(first.execution.input) if json.loads(record["body"])["flaky"])
    answered = [failure["itemIdentifier"] for failure in first.execution.output["batchItemFailures"]]
    assert answered == [record["messageId"] for record in first.execution.input[flaky_at:]]
    assert first.execution.entered_states().count("Payments.Record") == flaky_at + 1


def test_a_fifo_batch_keeps_each_groups_order_under_faults_on_the_idempotency_table(fifo, emulator):
    queue, groups, payments = send_payments(fifo)
    aimed = (fifo.table_name("Idempotency"),)
    with emulator.faults(Faults(dynamodb=0.2, dynamodb_lost_replies=0.2, seed=3, tables=aimed)) as faults:
        Pipe(fifo, queue, "PaymentsMachine", batch_size=10).drain()
    assert faults.injected["dynamodb"] > 0 and faults.injected["dynamodb_lost_replies"] > 0
    in_order_once(fifo, queue, groups, payments)
