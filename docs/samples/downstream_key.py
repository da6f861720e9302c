"""docs/guides/event-sources.md, "Once downstream": the record's id sent to a payment provider as its
Idempotency-Key header by an HTTP Task (tests/test_docs.py synthesizes it; tests/emulator/test_downstream_key.py
reads the id on the local emulator, which runs no HTTP Task), and as a field of a Lambda function's payload
(tests/emulator/test_downstream_key.py runs it, the function's reply lost once)."""

from aws_cdk import aws_events as events
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

from idempotent_constructs import IdempotencyKey, IdempotencyTable, IdempotentStateMachine


def payments(self: Construct, table: IdempotencyTable, connection: events.IConnection) -> IdempotentStateMachine:
    # --8<-- [start:sample]
    charge = tasks.HttpInvoke.jsonata(
        self,
        "Charge",
        connection=connection,
        api_root="https://api.payments.example",
        api_endpoint=sfn.TaskInput.from_text("charges"),
        method=sfn.TaskInput.from_text("POST"),
        # The same for every run under this key: a retry after a lost reply is deduplicated by the provider.
        headers=sfn.TaskInput.from_object({"Idempotency-Key": "{% " + IdempotentStateMachine.RECORD_ID_PATH + " %}"}),
        body=sfn.TaskInput.from_object({"amount": "{% $states.input.amount %}"}),
    )
    return IdempotentStateMachine(self, "Payments", table=table, definition=charge, key=IdempotencyKey.from_paths("$.payment_id"))
    # --8<-- [end:sample]


def lambda_payments(self: Construct, table: IdempotencyTable, provider: lambda_.IFunction) -> IdempotentStateMachine:
    # --8<-- [start:lambda]
    charge = tasks.LambdaInvoke.jsonata(
        self,
        "ChargeByLambda",
        lambda_function=provider,
        # The provider keeps what it did under this key and answers a second call with it.
        payload=sfn.TaskInput.from_object(
            {"idempotency_key": "{% " + IdempotentStateMachine.RECORD_ID_PATH + " %}", "amount": "{% $states.input.amount %}"}
        ),
    )
    return IdempotentStateMachine(
        self, "LambdaPayments", table=table, definition=charge, key=IdempotencyKey.from_paths("$.payment_id")
    )
    # --8<-- [end:lambda]
