"""The baseline: a workflow made idempotent the way the widely copied aws-samples sample does it.

Written for this benchmark from the sample's published description (aws-samples/
step-functions-workflows-collection, ``idempotent-workflow`` and ``idempotent-workflow-sam``: "an
idempotency key is calculated based on the input event ... and stored in the database as a semaphore
together with a status of IN_PROGRESS ... if acquiring the semaphore was not successful ... the workflow
retrieves the idempotency record ... If the status is IN_PROGRESS the workflow continues to query the
database every 10 seconds"), in our own CDK code; no code is copied. Its shape::

    ComputeKey (Lambda) -> Lock (TransactWriteItems, AWS SDK integration) -> Body -> SaveResult -> Done
                             | TransactionCanceled
                           GetRecord (eventually consistent GetItem) -> Status? -- SUCCEEDED --> Deserialize -> Done
                                                                          |-- FAILED --> Lock
                                                                          |-- IN_PROGRESS --> Wait 10 s -> GetRecord
    Body fails -> SaveFailure -> Failed

What it lacks, by design of the sample: no lease, so a crashed holder blocks its key
until TTL deletes the record; unfenced result writes; no payload check; key and TTL from a Lambda.
"""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

from .functions import bench_function

POLL_SECONDS = 10  # the sample's fixed poll interval
NOTES = (
    "moto runs the baseline's transactional lock as published (aws-sdk:dynamodb:transactWriteItems, its "
    "DynamoDb.TransactionCanceledException caught); only $$.Execution.StartTime, which moto hands over as a "
    "Python datetime the SDK integration cannot serialize, is replaced by $$.State.EnteredTime (same kind and size)."
)
THROTTLED = [
    "DynamoDb.ProvisionedThroughputExceededException",
    "DynamoDb.RequestLimitExceeded",
    "DynamoDb.ThrottlingException",
]
THROTTLED_NATIVE = [name.replace("DynamoDb.", "DynamoDB.") for name in THROTTLED]
LAMBDA_TRANSIENT = ["Lambda.ServiceException", "Lambda.AWSLambdaException", "Lambda.SdkClientException"]
# State names of the baseline, for counting: everything but the user's chain.
STATE_NAMES = (
    "ComputeKey",
    "Lock",
    "Body",
    "SaveResult",
    "Done",
    "GetRecord",
    "Status",
    "Deserialize",
    "WaitForHolder",
    "Undefined",
    "SaveFailure",
    "Failed",
)


class BaselineIdempotentWorkflow(Construct):
    """A Standard state machine running ``definition`` once per key, aws-samples style."""

    def __init__(
        self, scope: Construct, construct_id: str, *, definition: sfn.IChainable, poll_seconds: int = POLL_SECONDS
    ) -> None:
        super().__init__(scope, construct_id)
        # As in the sample: on-demand, TTL on "ttl", a string partition key "id".
        self.table = dynamodb.Table(
            self,
            "Table",
            partition_key=dynamodb.Attribute(name="id", type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            time_to_live_attribute="ttl",
            removal_policy=RemovalPolicy.DESTROY,
        )
        # As in the sample's template: 128 MB, the default (x86_64) architecture.
        self.key_function = bench_function(self, "KeyFunction", "baseline_key.handler", memory_mb=128)
        key = "$.config.key"
        compute_key = tasks.LambdaInvoke(
            self,
            "ComputeKey",
            lambda_function=self.key_function,
            payload_response_only=True,
            retry_on_service_exceptions=False,
        )
        compute_key.add_retry(errors=LAMBDA_TRANSIENT, interval=Duration.seconds(2), max_attempts=6, backoff_rate=2)
        lock = tasks.CallAwsService(
            self,
            "Lock",
            service="dynamodb",
            action="transactWriteItems",
            iam_action="dynamodb:UpdateItem",
            iam_resources=[self.table.table_arn],
            parameters={
                "TransactItems": [
                    {
                        "Update": {
                            "TableName": self.table.table_name,
                            "Key": {"id": {"S": sfn.JsonPath.string_at(key)}},
                            "ConditionExpression": "attribute_not_exists(#status) OR #status = :failed",
                            "UpdateExpression": "SET #status = :running, #execution = :execution, #started = :started, #ttl = :ttl",
                            "ExpressionAttributeNames": {
                                "#status": "executionstatus",
                                "#execution": "execution",
                                "#started": "starttime",
                                "#ttl": "ttl",
                            },
                            "ExpressionAttributeValues": {
                                ":failed": {"S": "FAILED"},
                                ":running": {"S": "IN_PROGRESS"},
                                ":execution": {"S": sfn.JsonPath.string_at("$$.Execution.Id")},
                                # The sample writes $$.Execution.StartTime; moto hands it over as a Python datetime, which the
                                # AWS SDK integration cannot serialize, so write the same kind of timestamp (same size).
                                ":started": {"S": sfn.JsonPath.string_at("$$.State.EnteredTime")},
                                ":ttl": {"N": sfn.JsonPath.string_at("$.config.ttl")},
                            },
                        }
                    }
                ]
            },
            result_path=sfn.JsonPath.DISCARD,
        )
        lock.add_retry(errors=THROTTLED, interval=Duration.seconds(3), max_attempts=10, backoff_rate=2)
        body = sfn.Parallel(
            self, "Body", state_name="Body", input_path="$.payload", result_selector={"value.$": "$[0]"}, result_path="$.results"
        )
        body.branch(definition)

        def save(state: str, status: str, value_path: str, **options) -> tasks.DynamoUpdateItem:
            """The native write of the record's final status and its result (or error) as JSON."""
            task = tasks.DynamoUpdateItem(
                self,
                state,
                table=self.table,
                key={"id": tasks.DynamoAttributeValue.from_string(sfn.JsonPath.string_at(key))},
                update_expression="SET #status = :status, #result = :result",
                expression_attribute_names={"#status": "executionstatus", "#result": "executionresult"},
                expression_attribute_values={
                    ":status": tasks.DynamoAttributeValue.from_string(status),
                    ":result": tasks.DynamoAttributeValue.from_string(
                        sfn.JsonPath.json_to_string(sfn.JsonPath.object_at(value_path))
                    ),
                },
                result_path=sfn.JsonPath.DISCARD,
                **options,
            )
            task.add_retry(errors=THROTTLED_NATIVE, interval=Duration.seconds(3), max_attempts=10, backoff_rate=2)
            return task

        save_result = save("SaveResult", "SUCCEEDED", "$.results.value", output_path="$.results.value")
        done = sfn.Succeed(self, "Done")
        get_record = tasks.DynamoGetItem(
            self,
            "GetRecord",
            table=self.table,
            key={"id": tasks.DynamoAttributeValue.from_string(sfn.JsonPath.string_at(key))},
            consistent_read=False,
            projection_expression=[
                tasks.DynamoProjectionExpression().with_attribute("executionstatus"),
                tasks.DynamoProjectionExpression().with_attribute("executionresult"),
            ],
            result_path="$.record",
        )
        get_record.add_retry(errors=THROTTLED_NATIVE, interval=Duration.seconds(3), max_attempts=10, backoff_rate=2)
        deserialize = sfn.Pass(
            self,
            "Deserialize",
            parameters={"value": sfn.JsonPath.string_to_json(sfn.JsonPath.string_at("$.record.Item.executionresult.S"))},
            output_path="$.value",
        )
        wait = sfn.Wait(self, "WaitForHolder", time=sfn.WaitTime.duration(Duration.seconds(poll_seconds)))
        status = (
            sfn.Choice(self, "Status")
            .when(
                sfn.Condition.and_(
                    sfn.Condition.string_equals("$.record.Item.executionstatus.S", "SUCCEEDED"),
                    sfn.Condition.is_present("$.record.Item.executionresult.S"),
                ),
                deserialize,
            )
            .when(sfn.Condition.string_equals("$.record.Item.executionstatus.S", "FAILED"), lock)
            .when(sfn.Condition.string_equals("$.record.Item.executionstatus.S", "IN_PROGRESS"), wait)
            .otherwise(
                sfn.Fail(
                    self,
                    "Undefined",
                    error="UndefinedExecutionState",
                    cause="The record's status is none of SUCCEEDED, FAILED, IN_PROGRESS",
                )
            )
        )
        save_failure = save("SaveFailure", "FAILED", "$.error")

        compute_key.next(lock)
        lock.add_catch(get_record, errors=["DynamoDb.TransactionCanceledException"], result_path="$.lock_error")
        lock.next(body)
        body.add_catch(save_failure, errors=["States.ALL"], result_path="$.error")
        body.next(save_result)
        save_result.next(done)
        save_failure.next(
            sfn.Fail(self, "Failed", error="WorkflowFailed", cause="The workflow failed; the error is in the record")
        )
        get_record.next(status)
        wait.next(get_record)
        deserialize.next(done)

        self.state_machine = sfn.StateMachine(
            self,
            "StateMachine",
            definition_body=sfn.DefinitionBody.from_chainable(compute_key),
        )
        self.table.grant_read_write_data(self.state_machine)
