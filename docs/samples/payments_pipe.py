"""docs/guides/event-sources.md: the whole stack of a queue of payments into an Express workflow made of
IdempotentBatch, through a pipe (``payments_pipe``) or through a starter function behind an event source mapping
(``payments_starter``), with the settings each part needs (tests/test_docs.py synthesizes both;
tests/emulator/test_delivery.py deploys them and drains each queue as its template declares it,
``testing.delivery.Pipe.of`` and ``EventSourceMapping.of``)."""

from pathlib import Path
from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_logs as logs
from aws_cdk import aws_pipes as pipes
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from idempotent_constructs import IdempotencyTable, IdempotentBatch

STARTER = Path(__file__).parent / "starter"  # starter.py, the function's code


def payments_queue(self: Construct, prefix: str = "") -> sqs.Queue:
    # --8<-- [start:queue]
    dead_letters = sqs.Queue(self, f"{prefix}DeadLetters", retention_period=Duration.days(14), enforce_ssl=True)
    queue = sqs.Queue(
        self,
        f"{prefix}Queue",
        max_message_size_bytes=24 * 1024,  # a batch of 10 fits the 262,144 characters Pipes sends a workflow
        visibility_timeout=Duration.minutes(30),  # 6 times the starter function's timeout (AWS's guidance), past a run
        dead_letter_queue=sqs.DeadLetterQueue(queue=dead_letters, max_receive_count=3),
        enforce_ssl=True,
    )
    # --8<-- [end:queue]
    return queue


def payments_workflow(self: Construct, table: IdempotencyTable, charge: sfn.IChainable, **options: Any) -> sfn.StateMachine:
    # --8<-- [start:workflow]
    payments = IdempotentBatch(
        self,
        "Payments",
        table=table,
        body=charge,  # one record: {"messageId", "body", ...}
        expires_after=Duration.days(14),  # as long as the dead-letter queue keeps a message
        **options,  # the record's key and payload; by default its body is its key
    )
    log_group = logs.LogGroup(self, "PaymentsLog", retention=logs.RetentionDays.ONE_MONTH)
    machine = sfn.StateMachine(
        self,
        "PaymentsMachine",
        definition_body=sfn.DefinitionBody.from_chainable(payments),
        state_machine_type=sfn.StateMachineType.EXPRESS,  # a pipe waits only for an Express workflow
        logs=sfn.LogOptions(destination=log_group, level=sfn.LogLevel.ALL),  # execution data stays out
    )
    failed = payments.metric_failed_records(log_group)  # records answered as failed, from the execution log
    cloudwatch.Alarm(self, "FailedPayments", metric=failed, threshold=1, evaluation_periods=1)
    # --8<-- [end:workflow]
    return machine


def payments_pipe(self: Construct, table: IdempotencyTable, charge: sfn.IChainable, **options: Any) -> sfn.StateMachine:
    """The queue, the workflow and the pipe between them."""
    queue, machine = payments_queue(self), payments_workflow(self, table, charge, **options)
    # --8<-- [start:pipe]
    role = iam.Role(self, "PipeRole", assumed_by=iam.ServicePrincipal("pipes.amazonaws.com"))
    queue.grant_consume_messages(role)
    machine.grant_start_sync_execution(role)
    pipes.CfnPipe(
        self,
        "PaymentsPipe",
        role_arn=role.role_arn,
        source=queue.queue_arn,
        source_parameters=pipes.CfnPipe.PipeSourceParametersProperty(
            sqs_queue_parameters=pipes.CfnPipe.PipeSourceSqsQueueParametersProperty(batch_size=10)
        ),
        target=machine.state_machine_arn,
        target_parameters=pipes.CfnPipe.PipeTargetParametersProperty(
            step_function_state_machine_parameters=pipes.CfnPipe.PipeTargetStateMachineParametersProperty(
                invocation_type="REQUEST_RESPONSE"  # the default: a failed record is delivered again
            )
        ),
    )
    # --8<-- [end:pipe]
    return machine


def payments_starter(self: Construct, queue: sqs.IQueue, machine: sfn.StateMachine) -> lambda_.Function:
    """A starter function that hands each batch of ``queue`` to ``machine`` (docs/samples/starter)."""
    # --8<-- [start:starter]
    starter = lambda_.Function(
        self,
        "PaymentsStarter",
        runtime=lambda_.Runtime.PYTHON_3_14,
        handler="starter.handler",
        code=lambda_.Code.from_asset(str(STARTER)),
        timeout=Duration.minutes(5),  # covers the Express run it waits for; the queue's visibility is longer
        environment={"STATE_MACHINE_ARN": machine.state_machine_arn},
    )
    machine.grant_start_sync_execution(starter)
    starter.add_event_source(
        sources.SqsEventSource(queue, batch_size=5, report_batch_item_failures=True)  # its partial batch response read
    )
    # --8<-- [end:starter]
    return starter


def payments_mapping(self: Construct, table: IdempotencyTable, charge: sfn.IChainable, **options: Any) -> sfn.StateMachine:
    """The queue, the workflow and the starter function between them."""
    machine = payments_workflow(self, table, charge, **options)
    payments_starter(self, payments_queue(self), machine)
    return machine
