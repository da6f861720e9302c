"""docs/guides/event-sources.md: the whole stacks of a Kinesis stream and of a DynamoDB table's stream through a
pipe into an Express workflow made of IdempotentBatch (tests/test_docs.py synthesizes them;
tests/emulator/test_delivery.py deploys them and reads each stream through the pipe its template declares,
``testing.delivery.StreamPipe.of``)."""

from typing import Any

from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kinesis as kinesis
from aws_cdk import aws_logs as logs
from aws_cdk import aws_pipes as pipes
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from idempotent_constructs import BatchSource, IdempotencyKey, IdempotencyPayload, IdempotencyTable, IdempotentBatch


def express_batch(self: Construct, name: str, batch: IdempotentBatch) -> sfn.StateMachine:
    """The Express state machine a pipe waits for, logging every state (its execution data left out)."""
    log_group = logs.LogGroup(self, f"{name}Log", retention=logs.RetentionDays.ONE_MONTH)
    return sfn.StateMachine(
        self,
        f"{name}Machine",
        definition_body=sfn.DefinitionBody.from_chainable(batch),
        state_machine_type=sfn.StateMachineType.EXPRESS,
        logs=sfn.LogOptions(destination=log_group, level=sfn.LogLevel.ALL),
    )


def kinesis_pipe(self: Construct, table: IdempotencyTable, charge: sfn.IChainable, **options: Any) -> sfn.StateMachine:
    # --8<-- [start:kinesis]
    stream = kinesis.Stream(self, "Stream", shard_count=1, encryption=kinesis.StreamEncryption.MANAGED)
    payments = IdempotentBatch(
        self,
        "Streamed",
        table=table,
        body=charge,  # one record: {"eventID", "data" (base64), ...}
        source=BatchSource.KINESIS,  # a failed record named by its eventID
        # A producer's retried PutRecord is a new record with a new eventID: key on your own id in the data.
        key=IdempotencyKey.from_jsonata("$parse($base64decode($states.input.data)).payment_id"),
        payload=IdempotencyPayload.from_paths("$.data"),
        **options,
    )
    machine = express_batch(self, "Streamed", payments)
    role = iam.Role(self, "StreamPipeRole", assumed_by=iam.ServicePrincipal("pipes.amazonaws.com"))
    stream.grant_read(role)
    machine.grant_start_sync_execution(role)
    pipes.CfnPipe(
        self,
        "StreamPipe",
        role_arn=role.role_arn,
        source=stream.stream_arn,
        source_parameters=pipes.CfnPipe.PipeSourceParametersProperty(
            kinesis_stream_parameters=pipes.CfnPipe.PipeSourceKinesisStreamParametersProperty(
                starting_position="TRIM_HORIZON",
                batch_size=4,
                maximum_retry_attempts=2,  # then the batch is dropped: -1, the default, retries until it expires
            )
        ),
        target=machine.state_machine_arn,
        target_parameters=pipes.CfnPipe.PipeTargetParametersProperty(
            step_function_state_machine_parameters=pipes.CfnPipe.PipeTargetStateMachineParametersProperty(
                invocation_type="REQUEST_RESPONSE"
            )
        ),
    )
    # --8<-- [end:kinesis]
    return machine


def dynamodb_pipe(self: Construct, table: IdempotencyTable, charge: sfn.IChainable, **options: Any) -> sfn.StateMachine:
    # --8<-- [start:dynamodb]
    changes = dynamodb.Table(
        self,
        "Changes",
        partition_key=dynamodb.Attribute(name="payment_id", type=dynamodb.AttributeType.STRING),
        billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
        stream=dynamodb.StreamViewType.NEW_IMAGE,
        point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(point_in_time_recovery_enabled=True),
    )
    payments = IdempotentBatch(
        self,
        "Changed",
        table=table,
        body=charge,  # one change: {"eventID", "eventName", "dynamodb": {"NewImage", ...}, ...}
        source=BatchSource.DYNAMODB_STREAMS,  # each change keyed on its eventID, its new image compared
        **options,
    )
    machine = express_batch(self, "Changed", payments)
    role = iam.Role(self, "ChangesPipeRole", assumed_by=iam.ServicePrincipal("pipes.amazonaws.com"))
    changes.grant_stream_read(role)
    machine.grant_start_sync_execution(role)
    pipes.CfnPipe(
        self,
        "ChangesPipe",
        role_arn=role.role_arn,
        source=changes.table_stream_arn or "",
        source_parameters=pipes.CfnPipe.PipeSourceParametersProperty(
            dynamo_db_stream_parameters=pipes.CfnPipe.PipeSourceDynamoDBStreamParametersProperty(
                starting_position="TRIM_HORIZON", batch_size=4, maximum_retry_attempts=1
            )
        ),
        target=machine.state_machine_arn,
        target_parameters=pipes.CfnPipe.PipeTargetParametersProperty(
            step_function_state_machine_parameters=pipes.CfnPipe.PipeTargetStateMachineParametersProperty(
                invocation_type="REQUEST_RESPONSE"
            )
        ),
    )
    # --8<-- [end:dynamodb]
    return machine
