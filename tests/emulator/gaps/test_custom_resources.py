"""testing.gaps.custom_resources: a custom resource's Python handler gets its properties as strings, answers at a
ResponseURL the harness serves, and its Data is read with Fn::GetAtt; a handler that fails, or that the harness cannot
run, fails the deploy naming the resource and why. moto alone hands the properties with their JSON types to a
ResponseURL nothing serves, so the stack never completes, and skips a custom resource of the default type."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from aws_cdk import App, CfnOutput, CustomResource, RemovalPolicy, Stack
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_notifications as s3n
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from aws_cdk import custom_resources as cr
from moto import settings

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


def node_backed(app: App) -> None:
    """Constructs whose custom resource's handler runs on Node.js, a stack each."""
    auto_delete = Stack(app, "CustomResourcesAutoDelete")
    s3.Bucket(auto_delete, "Scratch", auto_delete_objects=True, removal_policy=RemovalPolicy.DESTROY)
    retention = Stack(app, "CustomResourcesLogRetention")
    logs.LogRetention(retention, "Retention", log_group_name="/orders", retention=logs.RetentionDays.ONE_DAY)
    provided = Stack(app, "CustomResourcesProvider")  # the framework's function is Node.js, its handler Python
    provider = cr.Provider(provided, "Provider", on_event_handler=python_function(provided, "OnEvent", SILENT))
    CustomResource(provided, "Provided", service_token=provider.service_token)


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


@pytest.mark.parametrize(
    ("stack", "resource_type"),
    [
        ("CustomResourcesAutoDelete", "Custom::S3AutoDeleteObjects"),
        ("CustomResourcesLogRetention", "Custom::LogRetention"),
        ("CustomResourcesProvider", "AWS::CloudFormation::CustomResource"),
    ],
)
def test_a_construct_whose_handler_runs_on_node_fails_the_deploy_saying_the_harness_does_not_run_it(
    emulator, custom_resources, stack, resource_type
):
    with pytest.raises(RuntimeError) as failed:
        emulator.deploy(custom_resources, stack)
    assert re.fullmatch(
        rf"stack {stack} ended in CREATE_FAILED: \w+ \({resource_type}\) CREATE_FAILED: its handler, the function \S+, runs on "
        r"nodejs\d+\.x, which the harness does not run \(it runs Python handlers only, in process\): deploy this stack to AWS to test it",
        str(failed.value),
    )
    described = emulator.client("cloudformation").describe_stacks(StackName=stack)["Stacks"][0]
    assert described["StackStatus"] == "CREATE_FAILED"


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
