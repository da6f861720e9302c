"""The real-AWS suite: deploy the example stack with `cdk deploy` into the account and region of your
AWS credentials, run the demo's scenarios against real Step Functions, Lambda and DynamoDB, destroy.

Opt in: ``./dev test tests/aws --aws``. Without ``--aws`` (``./dev test``, CI) every test is
skipped with that reason, so a developer whose shell holds credentials never deploys anything by
accident; with it but without credentials (or a region, or a CDK bootstrap) every test is skipped
with the reason what is missing.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from idempotent_constructs.lambda_src import schema
from idempotent_constructs.testing import Execution, wait_for_execution
from tests.aws.app import STACK_NAME_CONTEXT
from tests.conftest import NODE_BIN, ROOT

NO_CREDENTIALS = (
    "no AWS credentials: set AWS_PROFILE or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY (and AWS_REGION) to run "
    "the real-AWS suite; it deploys and destroys the example stack in that account"
)
STACK_PREFIX = "IdempotentOrders-it-"
# The example stack keeps these on stack deletion (DeletionPolicy Retain); the suite deletes them after
# `cdk destroy`, so that a run leaves nothing behind. Any other retained type fails the teardown.
_DELETERS = {
    "AWS::DynamoDB::Table": ("dynamodb", "delete_table", "TableName"),
    "AWS::Logs::LogGroup": ("logs", "delete_log_group", "logGroupName"),
}
_CDK_TIMEOUT = 30 * 60  # seconds; a first deploy takes about 2-4 minutes, a destroy about 1-2
OPT_IN = (
    "real-AWS suite not asked for: it deploys the example stack to the account of your AWS credentials "
    "and destroys it; run `./dev test tests/aws --aws` (docs/guides/real-aws.md)"
)


# --- selection --------------------------------------------------------------------------------------
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Without --aws the suite is skipped, with its reason shown (-ra), even when the shell holds
    # credentials: no -m expression or test selection deploys anything by accident.
    if not config.getoption("aws"):
        for item in items:
            if item.get_closest_marker("aws"):
                item.add_marker(pytest.mark.skip(reason=OPT_IN))


# --- preconditions: each missing one skips the suite with its reason -------------------------------
def _session_or_skip() -> boto3.Session:
    """A boto3 session with credentials and a region, found without calling AWS. (Like every AWS
    tool, botocore's credential chain ends by asking the EC2 instance metadata endpoint, a local
    address, at most a second or two; set AWS_EC2_METADATA_DISABLED=true to skip even that.)"""
    try:
        session = boto3.Session()
        credentials = session.get_credentials()
    except BotoCoreError as exc:  # e.g. AWS_PROFILE names a profile that does not exist
        pytest.skip(f"AWS credentials could not be loaded ({exc}); {NO_CREDENTIALS}")
    if credentials is None:
        pytest.skip(NO_CREDENTIALS)
    # boto3 reads AWS_DEFAULT_REGION and the profile, not AWS_REGION, which the CDK CLI reads first.
    region = os.environ.get("AWS_REGION") or session.region_name
    if not region:
        pytest.skip(
            "no AWS region: set AWS_REGION (or a region in your AWS profile) to run the real-AWS suite; "
            "it deploys and destroys the example stack in that region"
        )
    return boto3.Session(region_name=region)


def _account_or_skip(session: boto3.Session) -> str:
    sts = session.client("sts", config=Config(connect_timeout=5, read_timeout=10, retries={"max_attempts": 2}))
    try:
        account = sts.get_caller_identity()["Account"]
    except (BotoCoreError, ClientError) as exc:
        pytest.skip(f"AWS credentials were found, but checking them failed (sts get-caller-identity: {exc})")
    if account == "123456789012":
        pytest.skip("the AWS credentials are moto's (account 123456789012), not a real account's")
    return account


def _bootstrapped_or_skip(session: boto3.Session, account: str) -> None:
    """`cdk deploy` publishes the Lambda code to the CDK bootstrap bucket; bootstrapping creates
    lasting resources (the CDKToolkit stack), which this suite will not do on its own."""
    ssm = session.client("ssm")
    try:
        ssm.get_parameter(Name="/cdk-bootstrap/hnb659fds/version")
    except ClientError as exc:
        if exc.response["Error"]["Code"] == "ParameterNotFound":
            pytest.skip(
                f"aws://{account}/{session.region_name} is not bootstrapped for the CDK: run "
                f"`cdk bootstrap aws://{account}/{session.region_name}` once (it creates the CDKToolkit "
                "stack, which this suite leaves alone), then run the suite again"
            )
        # Not allowed to read the parameter, say: `cdk deploy` will tell.
    except BotoCoreError:
        pass


# --- the deployed stack ---------------------------------------------------------------------------
class AwsStack:
    """The example stack deployed to real AWS under a unique name, and the few calls the tests need
    (the emulator's ``Deployment`` offers the same ones on moto)."""

    def __init__(self, session: boto3.Session, account: str, workdir: Path) -> None:
        self.name = f"{STACK_PREFIX}{uuid.uuid4().hex[:8]}"
        self.account = account
        self.region = session.region_name
        self.assembly = workdir / "cdk.out"  # not the repository's cdk.out, which others may be using
        config = Config(retries={"mode": "standard", "max_attempts": 10})
        self.cloudformation = session.client("cloudformation", config=config)
        self.stepfunctions = session.client("stepfunctions", config=config)
        self.dynamodb = session.client("dynamodb", config=config)
        self.logs = session.client("logs", config=config)
        # Frozen now: the CLI deploys with exactly the credentials and region the tests use.
        self.environment = {
            **os.environ,
            "PATH": os.pathsep.join([str(Path(sys.executable).parent), str(NODE_BIN), os.environ.get("PATH", "")]),
            "AWS_REGION": self.region,
            "AWS_DEFAULT_REGION": self.region,
            "CDK_DISABLE_VERSION_CHECK": "1",
        }
        self.state_machine_arn = ""
        self.table_name = ""

    # -- cdk -------------------------------------------------------------------------------------
    def _cdk(self, *arguments: str) -> int:
        """Run the CDK CLI on tests/aws/app.py; its output goes to the terminal (`-s`) or, captured
        by pytest, into the report of a failing test."""
        command = [
            str(NODE_BIN / "cdk"),
            *arguments,
            "--app",
            f"{shlex.quote(sys.executable)} -m tests.aws.app",
            "--context",
            f"{STACK_NAME_CONTEXT}={self.name}",
            "--output",
            str(self.assembly),
        ]
        print(f"$ {shlex.join(command)}", flush=True)
        return subprocess.run(command, cwd=ROOT, env=self.environment, timeout=_CDK_TIMEOUT).returncode

    def deploy(self) -> None:
        code = self._cdk("deploy", self.name, "--require-approval", "never")
        if code != 0:
            raise RuntimeError(f"`cdk deploy {self.name}` failed with exit code {code} (its output is above)")
        resources = self._resources()
        machines = [
            physical
            for logical, (kind, physical) in resources.items()
            if kind == "AWS::StepFunctions::StateMachine" and logical.startswith("Orders")
        ]
        tables = [physical for kind, physical in resources.values() if kind == "AWS::DynamoDB::Table"]
        if len(machines) != 1 or len(tables) != 1:
            raise RuntimeError(f"expected one Orders state machine and one table in {self.name}, found {resources}")
        self.state_machine_arn, self.table_name = machines[0], tables[0]

    def _resources(self) -> dict[str, tuple[str, str]]:
        """logical id -> (type, physical id) of every resource the stack has (or kept), from CloudFormation."""
        paginator = self.cloudformation.get_paginator("list_stack_resources")
        return {
            summary["LogicalResourceId"]: (summary["ResourceType"], summary.get("PhysicalResourceId", ""))
            for page in paginator.paginate(StackName=self.name)
            for summary in page["StackResourceSummaries"]
        }

    def _retained(self) -> list[tuple[str, str]]:
        """(type, physical id) of the resources the stack keeps when it is deleted."""
        template_path = self.assembly / f"{self.name}.template.json"
        if not template_path.exists():
            return []  # never synthesized, so never deployed
        template = json.loads(template_path.read_text())["Resources"]
        try:
            resources = self._resources()
        except ClientError:
            return []  # the stack does not exist: nothing was created
        return [
            (kind, physical)
            for logical, (kind, physical) in resources.items()
            if physical and template.get(logical, {}).get("DeletionPolicy") in ("Retain", "RetainExceptOnCreate")
        ]

    def _stack_exists(self) -> bool:
        try:
            stacks = self.cloudformation.describe_stacks(StackName=self.name)["Stacks"]
        except ClientError:
            return False
        return any(stack["StackStatus"] != "DELETE_COMPLETE" for stack in stacks)

    def destroy(self) -> None:
        """`cdk destroy --force`, then delete what the stack retains (the idempotency table and the log
        groups). Runs even when the deploy or a test failed."""
        retained = self._retained()
        # A deploy that failed before CloudFormation started leaves no stack to destroy.
        code = self._cdk("destroy", self.name, "--force") if self._stack_exists() else 0
        if code != 0 or self._stack_exists():
            raise RuntimeError(
                f"`cdk destroy {self.name}` failed (exit code {code}): delete the stack {self.name} in "
                f"aws://{self.account}/{self.region} by hand, then these retained resources: {retained}"
            )
        left: list[str] = []
        for kind, physical in retained:
            if kind == "AWS::Lambda::Version":
                continue  # deleted by Lambda with its function, which the stack did not retain
            # Only what this run's stack created: CloudFormation names it after the stack.
            if kind not in _DELETERS or not physical.startswith(self.name):
                left.append(f"{kind} {physical}")
                continue
            service, operation, parameter = _DELETERS[kind]
            client = getattr(self, service)
            try:
                if kind == "AWS::DynamoDB::Table":  # the table is protected from deletion (IdempotencyTable)
                    client.update_table(TableName=physical, DeletionProtectionEnabled=False)
                getattr(client, operation)(**{parameter: physical})
                print(f"deleted retained {kind} {physical}", flush=True)
            except client.exceptions.ResourceNotFoundException:
                pass
        if left:
            raise RuntimeError(f"{self.name} is destroyed, but these retained resources are left: {left}")

    # -- executions ------------------------------------------------------------------------------
    def start(self, payload: Any, name: str) -> str:
        return self.stepfunctions.start_execution(stateMachineArn=self.state_machine_arn, input=json.dumps(payload), name=name)[
            "executionArn"
        ]

    def wait(self, execution_arn: str, timeout: float = 300.0) -> Execution:
        return wait_for_execution(
            self.stepfunctions, execution_arn, history=self.history, timeout=timeout, pause=0.5, max_pause=3.0
        )

    def run(self, payload: Any, name: str) -> Execution:
        return self.wait(self.start(payload, name))

    def history(self, execution_arn: str) -> list[dict[str, Any]]:
        paginator = self.stepfunctions.get_paginator("get_execution_history")
        return [event for page in paginator.paginate(executionArn=execution_arn) for event in page["events"]]

    def records_of(self, execution: Execution) -> list[dict[str, Any]]:
        """The idempotency records the execution holds or finished (the workflow's and the charge
        guard's), read with a consistent scan of the real table."""
        paginator = self.dynamodb.get_paginator("scan")
        return [
            item
            for page in paginator.paginate(TableName=self.table_name, ConsistentRead=True)
            for item in page["Items"]
            if schema.owned_by(item.get(schema.OWNER, {}).get("S", ""), execution.arn)
        ]


@pytest.fixture(scope="session")
def aws_stack(request: pytest.FixtureRequest, node_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> AwsStack:
    """The example stack, deployed once for the suite under a unique name and always destroyed at the
    end, together with the resources it retains by design (the idempotency table, RETAIN so records
    survive a stack deletion, and its log groups): the account is left as it was found, apart from
    the asset files `cdk deploy` uploads to the CDK bootstrap bucket (as every deploy does)."""
    if not request.config.getoption("aws"):  # also for a test here that lacks the aws marker
        pytest.skip(OPT_IN)
    if any(item.get_closest_marker("emulator") for item in request.session.items):
        pytest.skip(
            "the real-AWS suite runs on its own (`./dev test tests/aws --aws`): the emulator suite in the same session "
            "replaces AWS with moto for the whole session"
        )
    session = _session_or_skip()
    account = _account_or_skip(session)
    _bootstrapped_or_skip(session, account)
    stack = AwsStack(session, account, tmp_path_factory.mktemp("aws"))
    request.addfinalizer(stack.destroy)
    stack.deploy()
    return stack


@pytest.fixture
def run_id() -> str:
    """Distinct execution names and order ids for each test, even against a reused table."""
    return uuid.uuid4().hex[:8]
