"""What the gap tests share: a Lambda function that returns its event, and a stack for the gaps of
moto's CloudFormation."""

from __future__ import annotations

import io
import json
import uuid
import zipfile
from pathlib import Path

import pytest
from aws_cdk import App, CfnOutput, RemovalPolicy, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from idempotent_constructs.testing import ACCOUNT, Deployment, LocalEmulator


@pytest.fixture(scope="session")
def echo_function(emulator: LocalEmulator) -> str:
    """The ARN of a Python function that returns its event."""
    name = f"echo-{uuid.uuid4().hex[:8]}"
    role = emulator.client("iam").create_role(
        RoleName=name,
        AssumeRolePolicyDocument=json.dumps(
            {"Statement": [{"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}]}
        ),
    )["Role"]["Arn"]
    code = io.BytesIO()
    with zipfile.ZipFile(code, "w") as archive:
        archive.writestr("echo.py", "def handler(event, context):\n    return event\n")
    created = emulator.client("lambda").create_function(
        FunctionName=name, Runtime="python3.13", Role=role, Handler="echo.handler", Code={"ZipFile": code.getvalue()}
    )
    assert created["FunctionArn"].startswith(f"arn:aws:lambda:{emulator.region}:{ACCOUNT}:function:")
    return str(created["FunctionArn"])


class DeploymentGaps(Stack):
    """What CloudFormation must get right here: a state machine, a table with TTL, a function version,
    a state machine with DefinitionSubstitutions, and (this stack alone) one whose definition is in S3."""

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        sfn.StateMachine(self, "Machine", definition_body=sfn.DefinitionBody.from_chainable(sfn.Pass(self, "Done")))
        table = dynamodb.Table(
            self,
            "Table",
            partition_key=dynamodb.Attribute(name="id", type=dynamodb.AttributeType.STRING),
            time_to_live_attribute="expiration",
            removal_policy=RemovalPolicy.DESTROY,
        )
        function = lambda_.Function(
            self,
            "Function",
            runtime=lambda_.Runtime.PYTHON_3_13,
            handler="index.handler",
            code=lambda_.Code.from_inline("def handler(event, context):\n    return event\n"),
        )
        CfnOutput(self, "Version", value=function.current_version.function_arn)
        sfn.StateMachine(
            self,
            "Substituted",
            definition_body=sfn.DefinitionBody.from_string(json.dumps(SUBSTITUTED)),
            definition_substitutions={"Greeting": "hello", "Table": table.table_name},
        )
        CfnOutput(self, "TableName", value=table.table_name)
        if construct_id == "DeploymentGaps":  # the stack with every workaround; without them: DefinitionInS3
            definition_in_s3(self, table.table_name)


class DefinitionInS3(Stack):
    """A state machine whose definition is in S3, alone: moto without the workaround fails its deploy."""

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        definition_in_s3(self, "a-table")


def definition_in_s3(scope: Stack, table_name: str) -> None:
    """``SUBSTITUTED`` kept in S3 (``DefinitionS3Location``: a file asset), with its substitutions."""
    sfn.StateMachine(
        scope,
        "FromS3",
        definition_body=sfn.DefinitionBody.from_file(str(Path(__file__).parent / "substituted.asl.json")),
        definition_substitutions={"Greeting": "hello", "Table": table_name},
    )


# A definition with placeholders (the substitutions above put theirs in place).
SUBSTITUTED = json.loads((Path(__file__).parent / "substituted.asl.json").read_text())


DEPLOYMENT_GAPS = ("state_machines", "time_to_live", "lambda_versions", "definition_substitutions")


@pytest.fixture(scope="session")
def deployment_gaps(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cloud assembly with the stack above as "DeploymentGaps", and once more as
    "DeploymentGaps-<gap>" for each gap, to deploy with that gap's workaround suspended."""
    app = App(outdir=str(tmp_path_factory.mktemp("deployment-gaps")))
    for name in ("DeploymentGaps", *(f"DeploymentGaps-{gap.replace('_', '-')}" for gap in DEPLOYMENT_GAPS)):
        DeploymentGaps(app, name)
    DefinitionInS3(app, "DefinitionInS3")
    return Path(app.synth().directory)


@pytest.fixture(scope="session")
def gaps_deployed(emulator: LocalEmulator, deployment_gaps: Path) -> Deployment:
    """The stack, deployed with every workaround."""
    return emulator.deploy(deployment_gaps, "DeploymentGaps")


def deploy_without(emulator: LocalEmulator, assembly: Path, without: str) -> Deployment:
    """The stack's copy for the gap ``without``, deployed with that gap's workaround suspended."""
    with emulator.without_workaround(without):
        return emulator.deploy(assembly, f"DeploymentGaps-{without.replace('_', '-')}")


def stack_output(emulator: LocalEmulator, deployment: Deployment, name: str) -> str:
    stack = emulator.client("cloudformation").describe_stacks(StackName=deployment.stack_name)["Stacks"][0]
    return str(next(output["OutputValue"] for output in stack["Outputs"] if output["OutputKey"] == name))
