"""docs/guides/event-sources.md: the whole stack of a queue of payments through a pipe into an Express workflow
made of IdempotentBatch, with the settings each part needs (tests/test_docs.py synthesizes it;
tests/emulator/test_delivery.py deploys it and drains the queue through the pipe its template declares,
``testing.delivery.Pipe.of``)."""

from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_pipes as pipes
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from idempotent_constructs import IdempotencyTable, IdempotentBatch


def payments_pipe(self: Construct, table: IdempotencyTable, charge: sfn.IChainable, **options: Any) -> sfn.StateMachine:
    # --8<-- [start:sample]
    dead_letters = sqs.Queue(self, "DeadLetters", retention_period=Duration.days(14), enforce_ssl=True)
    queue = sqs.Queue(
        self,
        "Queue",
        max_message_size_bytes=24 * 1024,  # a batch of 10 fits the 262,144 characters Pipes sends a workflow
        visibility_timeout=Duration.minutes(6),  # longer than the Express run the pipe waits for
        dead_letter_queue=sqs.DeadLetterQueue(queue=dead_letters, max_receive_count=3),
        enforce_ssl=True,
    )
    payments = IdempotentBatch(
        self,
        "Payments",
        table=table,
        body=charge,  # one record: {"messageId", "body", ...}
        expires_after=Duration.days(14),  # as long as the dead-letter queue keeps a message
        **options,  # the record's key and payload, by default its messageId and body
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
    # --8<-- [end:sample]
    return machine
