"""testing.gaps.custom_resources: a custom resource's Python handler gets its properties as strings, answers at a
ResponseURL the harness serves, and its Data is read with Fn::GetAtt; the CDK's Node.js handlers (AwsCustomResource,
log retention, auto_delete_objects, the provider framework) run with node, their AWS SDK calls on the emulator
(testing.gaps.node_handlers); a handler that fails, or that the harness cannot run, fails the deploy naming the
resource and why. moto alone hands the properties with their JSON types to a ResponseURL nothing serves, so the stack
never completes, and skips a custom resource of the default type."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from aws_cdk import App, CfnOutput, CustomResource, Duration, RemovalPolicy, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_notifications as s3n
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from aws_cdk import custom_resources as cr
from moto import settings

from idempotent_constructs import IdempotencyTable, IdempotentStateMachine
from idempotent_constructs.testing import LocalEmulator

from .conftest import stack_output

# A custom resource's handler: it keeps the event it got (an SSM parameter named after the resource), then PUTs the
# answer its properties ask for to the ResponseURL, and keeps what became of that PUT.
ECHO = """
import json, urllib.request, boto3

def handler(event, context):
    props, ssm = event["ResourceProperties"], boto3.client("ssm")
    keep = lambda what, value: ssm.put_parameter(Name=f"/echo/{props['Name']}/{what}", Value=value, Type="String", Overwrite=True)
    keep("event", json.dumps(event))
    if "Raise" in props:
        raise ValueError(props["Raise"])
    body = {
        "Status": props.get("Answer", "SUCCESS"),
        "Reason": props.get("Reason", ""),
        "PhysicalResourceId": "echo-" + props["Name"],
        "StackId": event["StackId"],
        "RequestId": event["RequestId"],
        "LogicalResourceId": event["LogicalResourceId"],
        "Data": {"Flag": props.get("Flag"), "FlagType": type(props.get("Flag")).__name__, "Stream": getattr(context, "log_stream_name", "none")},
    }
    answer = urllib.request.Request(event["ResponseURL"], data=json.dumps(body).encode(), method="PUT", headers={"content-type": ""})
    try:
        urllib.request.urlopen(answer, timeout=5).read()
        keep("answer", "delivered")
    except Exception as error:
        keep("answer", f"not delivered: {error}")
"""

# A handler that answers with the cfnresponse module (moto adds it to inline code, as CloudFormation does).
CFNRESPONSE = """
import cfnresponse

def handler(event, context):
    cfnresponse.send(event, context, cfnresponse.SUCCESS, {"Doubled": int(event["ResourceProperties"]["Count"]) * 2})
"""

# Returns what the provider framework's handlers return, and answers nothing: on AWS the stack waits an hour.
SILENT = "def handler(event, context):\n    return {'Data': {'Answer': 42}}\n"


def python_function(stack: Stack, construct_id: str, code: str) -> lambda_.Function:
    return lambda_.Function(
        stack, construct_id, runtime=lambda_.Runtime.PYTHON_3_13, handler="index.handler", code=lambda_.Code.from_inline(code)
    )


def echo(stack: Stack, **properties: object) -> CustomResource:
    """A ``Custom::Echo`` resource whose handler is ``ECHO``, with ``properties`` (and its own ``Name``)."""
    function = python_function(stack, "EchoHandler", ECHO)
    return CustomResource(
        stack,
        "Echo",
        service_token=function.function_arn,
        resource_type="Custom::Echo",
        properties={"Name": stack.stack_name, **properties},
    )


def echo_with_outputs(app: App, name: str) -> None:
    stack = Stack(app, name)
    resource = echo(stack, Flag=True, Count=5, Nested={"List": [1, False, "x"], "Ratio": 0.5})
    CfnOutput(stack, "Flag", value=resource.get_att_string("Flag"))
    CfnOutput(stack, "FlagType", value=resource.get_att_string("FlagType"))
    CfnOutput(stack, "Stream", value=resource.get_att_string("Stream"))
    CfnOutput(stack, "PhysicalId", value=resource.ref)


def event_bridge_uploads(app: App) -> None:
    stack = Stack(app, "CustomResourcesEventBridge")
    bucket = s3.Bucket(stack, "Uploads", event_bridge_enabled=True)
    queue = sqs.Queue(stack, "Uploaded")
    events.Rule(
        stack,
        "OnUpload",
        event_pattern=events.EventPattern(
            source=["aws.s3"], detail_type=["Object Created"], detail={"bucket": {"name": [bucket.bucket_name]}}
        ),
        targets=[targets.SqsQueue(queue)],
    )


def notified_uploads(app: App) -> None:
    stack = Stack(app, "CustomResourcesDestinations")
    bucket = s3.Bucket(stack, "Uploads")
    created = s3.EventType.OBJECT_CREATED
    bucket.add_event_notification(
        created, s3n.SqsDestination(sqs.Queue(stack, "Queue")), s3.NotificationKeyFilter(prefix="queue/")
    )
    bucket.add_event_notification(
        created, s3n.SnsDestination(sns.Topic(stack, "Topic")), s3.NotificationKeyFilter(prefix="topic/")
    )
    function = python_function(stack, "Function", ECHO)
    bucket.add_event_notification(created, s3n.LambdaDestination(function), s3.NotificationKeyFilter(prefix="function/"))


def doubled(app: App, name: str, *, output: bool) -> None:
    """A ``CustomResource`` without a ``resource_type`` (so ``AWS::CloudFormation::CustomResource``) answered by
    ``cfnresponse``; its ``Doubled`` as the output ``Answer``, if ``output``."""
    stack = Stack(app, name)
    resource = CustomResource(
        stack, "Doubled", service_token=python_function(stack, "Handler", CFNRESPONSE).function_arn, properties={"Count": 21}
    )
    if output:
        CfnOutput(stack, "Answer", value=resource.get_att_string("Doubled"))


# Node.js handlers of your own (inline code): one that throws, one that needs an AWS SDK client not installed.
NODE_THROWS = "exports.handler = async (event) => { throw new TypeError('no widget here'); };"
NODE_MISSING_CLIENT = "const kafka = require('@aws-sdk/client-kafka');\nexports.handler = async () => ({});"
ANY_RESOURCE = cr.AwsCustomResourcePolicy.from_sdk_calls(resources=cr.AwsCustomResourcePolicy.ANY_RESOURCE)


def sdk_call(
    stack: Stack, construct_id: str, action: str, parameters: dict[str, object], **options: object
) -> cr.AwsCustomResource:
    """An ``AwsCustomResource`` that calls SSM's ``action`` on create."""
    call = cr.AwsSdkCall(
        service="SSM", action=action, parameters=parameters, physical_resource_id=cr.PhysicalResourceId.of(construct_id)
    )
    return cr.AwsCustomResource(stack, construct_id, on_create=call, policy=ANY_RESOURCE, **options)


def node_backed(app: App) -> None:
    """Constructs whose custom resource's handler runs on Node.js, a stack each."""
    sdk = Stack(app, "CustomResourcesAwsSdk")  # a parameter put, then read back: its value an output
    put = sdk_call(sdk, "Put", "putParameter", {"Name": "/custom-resources/currency", "Value": "EUR", "Type": "String"})
    get = sdk_call(sdk, "Get", "getParameter", {"Name": "/custom-resources/currency"}, install_latest_aws_sdk=False)
    get.node.add_dependency(put)
    CfnOutput(sdk, "Currency", value=get.get_response_field("Parameter.Value"))
    missing = Stack(app, "CustomResourcesAwsSdkFails")  # moto's error, through the SDK, in the handler's FAILED
    sdk_call(missing, "Get", "getParameter", {"Name": "/custom-resources/missing"}, install_latest_aws_sdk=False)
    auto_delete = Stack(app, "CustomResourcesAutoDelete")
    s3.Bucket(auto_delete, "Scratch", auto_delete_objects=True, removal_policy=RemovalPolicy.DESTROY)
    retention = Stack(app, "CustomResourcesLogRetention")
    lambda_.Function(
        retention,
        "Retained",
        runtime=lambda_.Runtime.PYTHON_3_13,
        handler="index.handler",
        code=lambda_.Code.from_inline(SILENT),
        function_name="retained",
        log_retention=logs.RetentionDays.ONE_WEEK,
    )
    provided = Stack(app, "CustomResourcesProvider")  # the framework's function is Node.js, its handler Python
    provider = cr.Provider(provided, "Provider", on_event_handler=python_function(provided, "OnEvent", SILENT))
    CfnOutput(
        provided,
        "Answer",
        value=CustomResource(provided, "Provided", service_token=provider.service_token).get_att_string("Answer"),
    )
    waiting = Stack(app, "CustomResourcesIsComplete")  # its waiter state machine would poll during the deploy
    handler = python_function(waiting, "OnEvent", SILENT)
    provider = cr.Provider(waiting, "Provider", on_event_handler=handler, is_complete_handler=handler)
    CustomResource(waiting, "Provided", service_token=provider.service_token)
    on_node = Stack(app, "CustomResourcesNodeOnEvent")  # the emulator's Lambda runs Python functions only
    handler = lambda_.Function(
        on_node,
        "OnEvent",
        runtime=lambda_.Runtime.NODEJS_22_X,
        handler="index.handler",
        code=lambda_.Code.from_inline(NODE_THROWS),
    )
    CustomResource(on_node, "Provided", service_token=cr.Provider(on_node, "Provider", on_event_handler=handler).service_token)
    for name, code in (("CustomResourcesNodeThrows", NODE_THROWS), ("CustomResourcesNodeMissingClient", NODE_MISSING_CLIENT)):
        stack = Stack(app, name)
        function = lambda_.Function(
            stack, "Handler", runtime=lambda_.Runtime.NODEJS_22_X, handler="index.handler", code=lambda_.Code.from_inline(code)
        )
        CustomResource(stack, "Widget", service_token=function.function_arn, resource_type="Custom::Widget")


def orders_with_uploads(app: App) -> None:
    """The issue's stack: a bucket sending to EventBridge and notifying a queue, an ``AwsCustomResource`` that seeds a
    settings table, and an idempotent workflow that reads the seeded setting."""
    stack = Stack(app, "CustomResourcesOrders")
    uploads = s3.Bucket(stack, "Uploads", event_bridge_enabled=True)
    uploads.add_event_notification(s3.EventType.OBJECT_CREATED, s3n.SqsDestination(sqs.Queue(stack, "Uploaded")))
    settings_table = dynamodb.Table(
        stack, "Settings", partition_key=dynamodb.Attribute(name="id", type=dynamodb.AttributeType.STRING)
    )
    seed = cr.AwsSdkCall(
        service="DynamoDB",
        action="putItem",
        parameters={"TableName": settings_table.table_name, "Item": {"id": {"S": "currency"}, "value": {"S": "EUR"}}},
        physical_resource_id=cr.PhysicalResourceId.of("currency"),
    )
    cr.AwsCustomResource(
        stack,
        "Seed",
        on_create=seed,
        policy=cr.AwsCustomResourcePolicy.from_sdk_calls(resources=[settings_table.table_arn]),
        timeout=Duration.seconds(30),
    )
    read = tasks.DynamoGetItem(
        stack,
        "ReadCurrency",
        table=settings_table,
        key={"id": tasks.DynamoAttributeValue.from_string("currency")},
        result_selector={"currency.$": "$.Item.value.S"},
        result_path="$.settings",
    )
    IdempotentStateMachine(
        stack, "Orders", table=IdempotencyTable(stack, "Idempotency"), definition=read.next(sfn.Pass(stack, "Ship"))
    )


@pytest.fixture(scope="session")
def custom_resources(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cloud assembly with every stack these tests deploy."""
    app = App(outdir=str(tmp_path_factory.mktemp("custom-resources")))
    event_bridge_uploads(app)
    notified_uploads(app)
    echo_with_outputs(app, "CustomResourcesEcho")
    echo_with_outputs(app, "CustomResourcesEchoOnMoto")
    echo(Stack(app, "CustomResourcesFailed"), Answer="FAILED", Reason="the widget is missing")
    echo(Stack(app, "CustomResourcesRaises"), Raise="no widget here")
    doubled(app, "CustomResourcesDefaultType", output=True)
    doubled(app, "CustomResourcesDefaultTypeOnMoto", output=False)  # moto skips the type: an output of it fails the deploy
    silent = Stack(app, "CustomResourcesSilent")
    CustomResource(silent, "Silent", service_token=python_function(silent, "Handler", SILENT).function_arn)
    node_backed(app)
    orders_with_uploads(app)
    return Path(app.synth().directory)


def kept(emulator: LocalEmulator, stack: str, what: str, timeout: float = 30.0) -> str:
    """What the echo handler of ``stack`` kept (``event``, ``answer``), waiting for it."""
    ssm, deadline = emulator.client("ssm"), time.monotonic() + timeout
    while True:
        try:
            return str(ssm.get_parameter(Name=f"/echo/{stack}/{what}")["Parameter"]["Value"])
        except ssm.exceptions.ParameterNotFound:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


@pytest.fixture(scope="session")
def event_bridge_uploads_deployed(emulator, custom_resources):
    return emulator.deploy(custom_resources, "CustomResourcesEventBridge")


def test_a_bucket_with_event_bridge_enabled_deploys_and_sends_its_events_to_event_bridge(emulator, event_bridge_uploads_deployed):
    deployment = event_bridge_uploads_deployed
    bucket = deployment.physical_id("AWS::S3::Bucket", "Uploads")
    emulator.client("s3").put_object(Bucket=bucket, Key="orders/1.json", Body=b"{}")
    queue = deployment.physical_id("AWS::SQS::Queue", "Uploaded")
    messages = emulator.client("sqs").receive_message(QueueUrl=queue, WaitTimeSeconds=1)["Messages"]
    event = json.loads(messages[0]["Body"])
    assert (event["detail-type"], event["detail"]["bucket"]["name"], event["detail"]["object"]["key"]) == (
        "Object Created",
        bucket,
        "orders/1.json",
    )


def test_moto_reads_back_no_event_bridge_configuration_though_it_sends_the_events(emulator, event_bridge_uploads_deployed):
    """Why the test above watches the events: moto's GetBucketNotificationConfiguration leaves out the
    ``EventBridgeConfiguration`` AWS returns, though it keeps it (a gap of moto's S3, not of custom resources)."""
    bucket = event_bridge_uploads_deployed.physical_id("AWS::S3::Bucket", "Uploads")
    assert "EventBridgeConfiguration" not in emulator.client("s3").get_bucket_notification_configuration(Bucket=bucket)


def test_bucket_notifications_to_a_queue_a_topic_and_a_function_deploy_and_are_configured(emulator, custom_resources):
    deployment = emulator.deploy(custom_resources, "CustomResourcesDestinations")
    bucket = deployment.physical_id("AWS::S3::Bucket", "Uploads")
    configuration = emulator.client("s3").get_bucket_notification_configuration(Bucket=bucket)
    queue = emulator.client("sqs").get_queue_attributes(
        QueueUrl=deployment.physical_id("AWS::SQS::Queue", "Queue"), AttributeNames=["QueueArn"]
    )["Attributes"]["QueueArn"]
    function = emulator.client("lambda").get_function(FunctionName=deployment.physical_id("AWS::Lambda::Function", "Function"))
    assert [c["QueueArn"] for c in configuration["QueueConfigurations"]] == [queue]
    assert [c["TopicArn"] for c in configuration["TopicConfigurations"]] == [deployment.physical_id("AWS::SNS::Topic", "Topic")]
    assert [c["LambdaFunctionArn"] for c in configuration["LambdaFunctionConfigurations"]] == [
        function["Configuration"]["FunctionArn"]
    ]
    assert {rule["Value"] for c in configuration["QueueConfigurations"] for rule in c["Filter"]["Key"]["FilterRules"]} == {
        "queue/"
    }


def test_a_custom_resource_of_your_own_sees_its_properties_as_strings_and_its_data_is_read_by_get_att(emulator, custom_resources):
    deployment = emulator.deploy(custom_resources, "CustomResourcesEcho")
    event = json.loads(kept(emulator, "CustomResourcesEcho", "event"))
    assert event["ResourceProperties"] == {
        "ServiceToken": event["ServiceToken"],
        "Name": "CustomResourcesEcho",
        "Flag": "true",
        "Count": "5",
        "Nested": {"List": ["1", "false", "x"], "Ratio": "0.5"},
    }
    assert event["ServiceToken"].endswith(f":function:{deployment.physical_id('AWS::Lambda::Function', 'EchoHandler')}")
    assert (event["RequestType"], event["ResourceType"], event["LogicalResourceId"]) == (
        "Create",
        "Custom::Echo",
        deployment.logical_id("Custom::Echo"),
    )
    assert event["ResponseURL"].startswith("http://127.0.0.1:")
    assert kept(emulator, "CustomResourcesEcho", "answer") == "delivered"
    assert stack_output(emulator, deployment, "Flag") == "true"
    assert stack_output(emulator, deployment, "FlagType") == "str"
    assert re.fullmatch(r"\d{4}/\d{2}/\d{2}/\[\$LATEST\][0-9a-f]{32}", stack_output(emulator, deployment, "Stream"))
    assert stack_output(emulator, deployment, "PhysicalId") == "echo-CustomResourcesEcho"


def test_a_custom_resource_of_the_default_type_answered_with_cfnresponse_deploys_and_its_data_is_read(emulator, custom_resources):
    deployment = emulator.deploy(custom_resources, "CustomResourcesDefaultType")
    assert stack_output(emulator, deployment, "Answer") == "42"
    assert "AWS::CloudFormation::CustomResource" not in deployment.unmodelled


def test_a_handler_that_answers_failed_fails_the_deploy_naming_the_resource_and_its_reason(emulator, custom_resources):
    with pytest.raises(RuntimeError) as failed:
        emulator.deploy(custom_resources, "CustomResourcesFailed")
    message = str(failed.value)
    assert message.startswith("stack CustomResourcesFailed ended in CREATE_FAILED: Echo")
    assert "(Custom::Echo) CREATE_FAILED: Received response status [FAILED] from custom resource." in message
    assert message.endswith("Message returned: the widget is missing")
    stack = emulator.client("cloudformation").describe_stack_events(StackName="CustomResourcesFailed")["StackEvents"]
    failed_events = [event for event in stack if event["ResourceStatus"] == "CREATE_FAILED"]
    assert {(event["ResourceType"], event.get("ResourceStatusReason", "")[:24]) for event in failed_events} == {
        ("Custom::Echo", "Received response status"),
        ("AWS::CloudFormation::Stack", "The following resource(s"),
    }


def test_a_handler_that_raises_fails_the_deploy_with_its_error(emulator, custom_resources):
    with pytest.raises(
        RuntimeError, match=r"\(Custom::Echo\) CREATE_FAILED: its handler raised ValueError: no widget here, and sent no"
    ):
        emulator.deploy(custom_resources, "CustomResourcesRaises")


def test_a_handler_that_returns_without_answering_fails_the_deploy_where_aws_would_wait_an_hour(emulator, custom_resources):
    with pytest.raises(RuntimeError, match=r"its handler returned without sending a response to its ResponseURL"):
        emulator.deploy(custom_resources, "CustomResourcesSilent")


def test_an_aws_custom_resource_runs_its_sdk_call_on_the_emulator_and_its_response_field_is_read(emulator, custom_resources):
    deployment = emulator.deploy(custom_resources, "CustomResourcesAwsSdk")
    parameter = emulator.client("ssm").get_parameter(Name="/custom-resources/currency")["Parameter"]
    assert parameter["Value"] == "EUR"
    assert stack_output(emulator, deployment, "Currency") == "EUR"  # Fn::GetAtt of the Get resource's Data
    handler = deployment.physical_id("AWS::Lambda::Function", "AWS679f53fac002430cb0da5b7982bd2287")
    printed = "\n".join(emulator.lambdas.logs[handler])
    # installLatestAwsSdk (the Put's default): no npm install here, the installed client is used.
    assert "Failed to install latest AWS SDK v3. Falling back to pre-installed version." in printed
    assert printed.count("Installing latest AWS SDK v3") == 1  # the Get's install_latest_aws_sdk=False


def test_an_aws_custom_resource_whose_call_fails_fails_the_deploy_with_the_services_error(emulator, custom_resources):
    with pytest.raises(RuntimeError) as failed:
        emulator.deploy(custom_resources, "CustomResourcesAwsSdkFails")
    assert str(failed.value) == (
        "stack CustomResourcesAwsSdkFails ended in CREATE_FAILED: GetC5CA2530 (Custom::AWS) CREATE_FAILED: Received response "
        "status [FAILED] from custom resource. Message returned: Parameter /custom-resources/missing not found."
    )


def test_log_retention_sets_the_retention_of_the_functions_log_group(emulator, custom_resources):
    emulator.deploy(custom_resources, "CustomResourcesLogRetention")
    groups = emulator.client("logs").describe_log_groups(logGroupNamePrefix="/aws/lambda/retained")["logGroups"]
    assert [(group["logGroupName"], group.get("retentionInDays")) for group in groups] == [("/aws/lambda/retained", 7)]


def test_auto_delete_objects_deploys_its_create_doing_nothing_and_no_delete_is_ever_sent(emulator, custom_resources):
    deployment = emulator.deploy(custom_resources, "CustomResourcesAutoDelete")
    # Its Create returns nothing: the provider's entrypoint answers SUCCESS with the request's id as physical id.
    assert re.fullmatch(r"[0-9a-f-]{36}", deployment.physical_id("Custom::S3AutoDeleteObjects"))
    bucket = deployment.physical_id("AWS::S3::Bucket", "Scratch")
    tags = emulator.client("s3").get_bucket_tagging(Bucket=bucket)["TagSet"]
    assert {"Key": "aws-cdk:auto-delete-objects", "Value": "true"} in tags  # what its Delete would look for


def test_the_provider_frameworks_node_function_invokes_a_python_handler_through_lambda(emulator, custom_resources):
    deployment = emulator.deploy(custom_resources, "CustomResourcesProvider")
    assert stack_output(emulator, deployment, "Answer") == "42"  # what the Python handler returned, as Data
    framework = deployment.physical_id("AWS::Lambda::Function", "framework-onEvent")
    assert any("[provider-framework] submit response to cloudformation" in line for line in emulator.lambdas.logs[framework])


@pytest.mark.parametrize(
    ("stack", "reason"),
    [
        (
            "CustomResourcesIsComplete",
            "its provider framework has an is_complete_handler, which the framework's waiter state machine",
        ),
        (
            "CustomResourcesNodeOnEvent",
            r"its provider framework's on_event_handler, the function \S+, runs on nodejs22\.x, and the emulator's",
        ),
    ],
)
def test_what_the_provider_framework_cannot_do_here_is_refused_naming_why(emulator, custom_resources, stack, reason):
    with pytest.raises(RuntimeError) as failed:
        emulator.deploy(custom_resources, stack)
    assert re.fullmatch(
        rf"stack {stack} ended in CREATE_FAILED: Provided \(AWS::CloudFormation::CustomResource\) CREATE_FAILED: {reason} .*"
        ": deploy this stack to AWS to test it",
        str(failed.value),
    )


@pytest.mark.parametrize(
    ("stack", "error"),
    [
        ("CustomResourcesNodeThrows", "TypeError: no widget here"),
        (
            "CustomResourcesNodeMissingClient",
            "Runtime.ImportModuleError: Error: Cannot find module '@aws-sdk/client-kafka'",
        ),
    ],
)
def test_a_node_handler_that_throws_fails_the_deploy_naming_the_resource_and_its_error(emulator, custom_resources, stack, error):
    with pytest.raises(RuntimeError) as failed:
        emulator.deploy(custom_resources, stack)
    message = str(failed.value)
    assert message.startswith(
        f"stack {stack} ended in CREATE_FAILED: Widget (Custom::Widget) CREATE_FAILED: its handler raised {error}"
    )
    assert message.endswith(
        "and sent no response to its ResponseURL (AWS would wait for ServiceTimeout, an hour by default, then fail the resource)"
    )
    if "client-kafka" in error:
        assert "(npm install @aws-sdk/client-kafka: the harness loads the AWS SDK from node_modules" in message


def test_a_stack_with_bucket_notifications_and_an_aws_custom_resource_deploys_and_its_workflow_runs(emulator, custom_resources):
    deployment = emulator.deploy(custom_resources, "CustomResourcesOrders")
    execution = deployment.run("Orders", {"order": {"id": "custom-resources-1"}})
    assert execution.status == "SUCCEEDED", execution.cause
    assert execution.output["settings"] == {"currency": "EUR"}  # the item the AwsCustomResource put
    bucket = deployment.physical_id("AWS::S3::Bucket", "Uploads")
    emulator.client("s3").put_object(Bucket=bucket, Key="order-1.json", Body=b"{}")
    queue = deployment.physical_id("AWS::SQS::Queue", "Uploaded")
    messages = emulator.client("sqs").receive_message(QueueUrl=queue, MaxNumberOfMessages=10, WaitTimeSeconds=1)["Messages"]
    bodies = [json.loads(message["Body"]) for message in messages]  # S3's s3:TestEvent first, then the upload's
    assert [record["s3"]["object"]["key"] for body in bodies for record in body.get("Records", [])] == ["order-1.json"]


def test_an_update_that_changes_a_custom_resources_properties_fails_naming_it(emulator):
    def revision(flag: bool) -> Stack:
        stack = Stack(App(), "CustomResourcesUpdated")
        CfnOutput(stack, "Flag", value=echo(stack, Flag=flag).get_att_string("Flag"))
        return stack

    deployment = emulator.deploy_stack(revision(True))
    with pytest.raises(RuntimeError) as failed:
        emulator.update_stack(revision(False))
    assert str(failed.value).startswith("stack CustomResourcesUpdated ended in UPDATE_FAILED: Echo")
    assert (
        "(Custom::Echo) UPDATE_FAILED: its properties changed, and the harness sends custom resources no Update request"
        in str(failed.value)
    )
    assert stack_output(emulator, deployment, "Flag") == "true"  # the resource as it was created


def test_without_the_workaround_moto_sends_json_types_to_a_url_nothing_serves_and_the_stack_never_completes(
    emulator, custom_resources
):
    with emulator.without_workaround("custom_resources"), pytest.raises(RuntimeError) as failed:
        emulator.deploy(custom_resources, "CustomResourcesEchoOnMoto")
    assert str(failed.value).startswith("stack CustomResourcesEchoOnMoto ended in CREATE_IN_PROGRESS: Echo")
    assert str(failed.value).endswith("(Custom::Echo) has had no response from its handler at its ResponseURL")
    # moto invokes the handler on a thread of its own: what it got, once it has run.
    answer = kept(emulator, "CustomResourcesEchoOnMoto", "answer")
    event = json.loads(kept(emulator, "CustomResourcesEchoOnMoto", "event"))
    assert (event["ResourceProperties"]["Flag"], event["ResourceProperties"]["Count"]) == (True, 5)
    assert event["ResponseURL"].startswith(f"{settings.moto_server_host()}:{settings.moto_server_port()}/")
    assert answer.startswith("not delivered")


def test_without_the_workaround_moto_skips_a_custom_resource_of_the_default_type_and_never_calls_its_handler(
    emulator, custom_resources
):
    with emulator.without_workaround("custom_resources"):
        deployment = emulator.deploy(custom_resources, "CustomResourcesDefaultTypeOnMoto")
    assert "AWS::CloudFormation::CustomResource" in deployment.unmodelled
    assert not emulator.lambdas.logs.get(deployment.physical_id("AWS::Lambda::Function", "Handler"))
