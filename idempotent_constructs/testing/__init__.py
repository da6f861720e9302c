"""Run synthesized stacks on an embedded local AWS emulator (moto): no AWS account, no Docker.

    from idempotent_constructs.testing import LocalEmulator

    with LocalEmulator() as emulator:
        deployment = emulator.deploy_stack(stack)           # or emulator.deploy("cdk.out", "MyStack")
        execution = deployment.run("Orders", {"order": {"id": 1}})
        assert execution.status == "SUCCEEDED"

Needs the ``testing`` extra (moto, boto3). Every gap of moto 5.2.x that matters here is worked around in
a module of ``testing.gaps``, and only there; each says why and never changes what is being tested.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import boto3
from moto import mock_aws

from .._readers.assembly import (
    ACCOUNT,
    REGION,
    construct_paths,
    publish_file_assets,
    state_machine_definitions,
    without_bootstrap_checks,
)
from .._synth.quotas import TEMPLATE_MAX_BYTES
from ..errors import TemplateTooLarge
from . import faults as fault_injection
from . import gaps, parse_once, unmodelled
from .events import StatusChangeEvents
from .faults import Faults
from .holds import Hold, Holds
from .items import item_size, write_units
from .lambdas import FunctionOutput, InProcessLambda
from .package import package
from .patches import Patches
from .quota_findings import QuotaFinding, quota_findings
from .runs import (
    EXPRESS,
    Deployment,
    Emulator,
    Execution,
    execution_history,
    is_express,
    wait_for_execution,
)
from .snapshots import stable_template

__all__ = [
    "ACCOUNT",
    "REGION",
    "TEMPLATE_MAX_BYTES",
    "Deployment",
    "Emulator",
    "Execution",
    "Faults",
    "Hold",
    "LocalEmulator",
    "QuotaFinding",
    "TemplateTooLarge",
    "execution_history",
    "is_express",
    "item_size",
    "quota_findings",
    "stable_template",
    "state_machine_definitions",
    "wait_for_execution",
    "write_units",
]


class LocalEmulator:
    """The embedded emulator: moto with its Step Functions interpreter, plus the workarounds above."""

    _running: ClassVar[list[LocalEmulator]] = []  # entered and not exited yet, oldest first

    @classmethod
    def running(cls) -> list[LocalEmulator]:
        """The emulators entered (``with LocalEmulator() ...``) and not exited yet."""
        return list(cls._running)

    def __init__(self, region: str = REGION, *, interpreter_logs: bool = False) -> None:
        """
        :param region: the emulated region. Default: us-east-1.
        :param interpreter_logs: keep moto's Step Functions interpreter logs, which print every
            failed state with its whole parse tree. Default: off; failures are in each execution's
            history and in ``Execution.error`` / ``Execution.cause``.
        """
        self.region = region
        self._interpreter_logger = None if interpreter_logs else logging.getLogger("moto.stepfunctions.parser")
        self._interpreter_log_level = logging.NOTSET
        self.status_change_events = StatusChangeEvents(self)
        self.lambdas = InProcessLambda()
        self._patches = Patches()
        self._faults = Faults()
        self._holds = Holds()
        self._skipped_deploy_steps: set[str] = set()
        self._mock = mock_aws(config={"stepfunctions": {"execute_state_machine": True}})
        self._saved_environment: dict[str, str | None] = {}

    def __enter__(self) -> LocalEmulator:
        for name, value in {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_SESSION_TOKEN": "testing",
            "AWS_DEFAULT_REGION": self.region,
            "AWS_REGION": self.region,
        }.items():
            self._saved_environment[name] = os.environ.get(name)
            os.environ[name] = value
        if self._interpreter_logger is not None:
            self._interpreter_log_level = self._interpreter_logger.level
            self._interpreter_logger.setLevel(logging.CRITICAL)
        self._mock.start()
        EXPRESS.clear()  # a fresh emulator may reuse an ARN for a state machine of the other type
        for name, install in gaps.INSTALLERS.items():
            self._patches.install(name, install)
        self._patches.install("harness.parse_once", parse_once.install)
        self._patches.install("harness.unmodelled", unmodelled.install)
        self._patches.install("harness.lambdas", self.lambdas.install)
        self._patches.install("harness.faults", lambda patch: fault_injection.install(patch, lambda: self._faults))
        self._patches.install("harness.holds", self._holds.install)
        self._patches.install("harness.status_change_events", self.status_change_events.install)
        self.status_change_events.start()
        LocalEmulator._running.append(self)
        return self

    def __exit__(self, *exc_info: Any) -> None:
        if self in LocalEmulator._running:
            LocalEmulator._running.remove(self)
        if isinstance(sys.stdout, FunctionOutput):
            sys.stdout = sys.stdout.real
        self._patches.remove()
        gaps.custom_resources.close()  # the custom resources' response listener
        self.status_change_events.stop()
        self._mock.stop()
        if self._interpreter_logger is not None:
            self._interpreter_logger.setLevel(self._interpreter_log_level)
        for name, value in self._saved_environment.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value

    def client(self, service: str) -> Any:
        return boto3.client(service, region_name=self.region)

    def settle(self, timeout: float = 30.0) -> None:
        """Wait until what ended executions set off has run: each one's status-change event delivered
        and the Lambda functions it targets returned. Call it before a test's call ends, so that
        nothing it started still runs in the next test (and prints there): the pytest plugin
        ``idempotent_constructs.testing.pytest_plugin`` does. Raises ``TimeoutError`` past ``timeout``
        seconds."""
        self.status_change_events.settle(timeout)

    def history(self, execution_arn: str) -> list[dict[str, Any]]:
        """Every history event of an execution, oldest first (of an Express one, the emulator's own record:
        AWS keeps none)."""
        return execution_history(self.client("stepfunctions"), execution_arn)

    def run_definition(self, definition: dict[str, Any], payload: Any, timeout: float = 60.0) -> Execution:
        """Create a Standard state machine from an Amazon States Language ``definition``, run it once
        with ``payload`` and return the finished execution: a way to try a few states alone."""
        client = self.client("stepfunctions")
        name = f"definition-{uuid.uuid4().hex[:12]}"
        arn = client.create_state_machine(
            name=name, definition=json.dumps(definition), roleArn=f"arn:aws:iam::{ACCOUNT}:role/{name}"
        )["stateMachineArn"]
        execution = client.start_execution(stateMachineArn=arn, name=name, input=json.dumps(payload))["executionArn"]
        return wait_for_execution(client, execution, history=self.history, timeout=timeout)

    @contextlib.contextmanager
    def faults(self, faults: Faults) -> Iterator[Faults]:
        """Inject transient failures while the block runs; ``faults.injected`` counts them."""
        previous, self._faults = self._faults, faults
        try:
            yield faults
        finally:
            self._faults = previous

    @contextlib.contextmanager
    def hold(self, state: str, *, state_machine: str | None = None) -> Iterator[Hold]:
        """Executions that reach the state named ``state`` (of the state machine ``state_machine``, a name
        or an ARN; of any, by default) wait before entering it until the test calls ``release()`` or the
        block ends: ``with emulator.hold("ChargePayment") as gate:`` start the first run, ``gate.arrived()``
        (it now holds the key, its body not yet run), start the duplicate, ``gate.release()``.
        Deterministic on a loaded machine, where a slow body is a race."""
        gate = Hold(state, state_machine.split(":")[-1] if state_machine else None)
        self._holds.add(gate)
        try:
            yield gate
        finally:
            self._holds.remove(gate)

    @contextlib.contextmanager
    def without_workaround(self, name: str) -> Iterator[None]:
        """moto as released for one gap while the block runs: the workaround ``name`` (a module of
        ``idempotent_constructs.testing.gaps``) is suspended, to see whether moto still needs it."""
        if name in gaps.AFTER_DEPLOY:
            self._skipped_deploy_steps.add(name)
            try:
                yield
            finally:
                self._skipped_deploy_steps.discard(name)
            return
        if name not in gaps.INSTALLERS:
            raise ValueError(f"no workaround {name!r}: one of {', '.join(sorted({*gaps.INSTALLERS, *gaps.AFTER_DEPLOY}))}")
        with self._patches.suspended(name):
            yield

    def deploy_stack(self, stack: Any) -> Deployment:
        """Synthesize the app that holds ``stack`` (an ``aws_cdk.Stack``) and deploy the stack."""
        assembly = stack.node.root.synth()
        return self.deploy(assembly.directory, stack.artifact_id)

    def deploy(self, assembly_dir: str | Path, stack_name: str) -> Deployment:
        """Deploy a stack from a cloud assembly directory (``cdk.out``): upload its file assets,
        create it with CloudFormation and wait until it is complete."""
        return self._from_assembly(Path(assembly_dir), stack_name, update=False)

    def update_stack(self, stack: Any) -> Deployment:
        """Synthesize the app that holds ``stack`` and update the deployed stack of its name to it."""
        assembly = stack.node.root.synth()
        return self.update(assembly.directory, stack.artifact_id)

    def update(self, assembly_dir: str | Path, stack_name: str) -> Deployment:
        """Update a deployed stack to a cloud assembly's template as ``cdk deploy`` does (assets uploaded,
        then UpdateStack), while executions run: as on AWS, each one started before goes on with the
        definition it started with, and a resource the new template leaves out is deleted unless its
        ``DeletionPolicy`` keeps it (``gaps.stack_updates``)."""
        return self._from_assembly(Path(assembly_dir), stack_name, update=True)

    def _from_assembly(self, assembly_dir: Path, stack_name: str, *, update: bool) -> Deployment:
        template_file = assembly_dir / f"{stack_name}.template.json"
        # cdk deploy uploads the template to S3, whose TemplateURL CloudFormation refuses past 1,000,000
        # bytes ("Template may not exceed 1000000 bytes in size."); moto creates the stack whatever its size.
        if template_file.stat().st_size > TEMPLATE_MAX_BYTES:
            raise TemplateTooLarge(
                f"{stack_name}: the template has {template_file.stat().st_size:,} bytes, and CloudFormation refuses "
                f"one over {TEMPLATE_MAX_BYTES:,} (Template may not exceed {TEMPLATE_MAX_BYTES} bytes in size.): "
                "split the stack, or store large definitions as assets"
            )
        template = json.loads(template_file.read_text())
        publish_file_assets(self.client("s3"), assembly_dir, stack_name, account=ACCOUNT, region=self.region)
        paths = construct_paths(assembly_dir, stack_name)
        return self._create(stack_name, template, without_bootstrap_checks(template), paths, update=update)

    def deploy_template(self, template_file: str | Path, stack_name: str, parameters: dict[str, str] | None = None) -> Deployment:
        """Deploy a CloudFormation template whose functions' code and definitions are local paths beside
        it (``idempotent-constructs wrap`` writes one) as ``aws cloudformation package`` and ``deploy``
        would: upload them, then create the stack with ``parameters`` (its parameters' values)."""
        template_file = Path(template_file)
        template = json.loads(template_file.read_text())
        if "Transform" in template:
            raise ValueError(
                f"{template_file} is a SAM template: translate it first (samtranslator), as CloudFormation would; "
                "moto runs no transform"
            )
        packaged = package(self.client("s3"), template, template_file.parent)
        return self._create(stack_name, template, packaged, {}, parameters or {})

    def _create(
        self,
        stack_name: str,
        template: dict[str, Any],
        body: dict[str, Any],
        paths: dict[str, str],
        parameters: dict[str, str] | None = None,
        *,
        update: bool = False,
    ) -> Deployment:
        cloudformation = self.client("cloudformation")
        with unmodelled.recorded() as skipped:  # gap: resource types moto does not model (unmodelled.py)
            (cloudformation.update_stack if update else cloudformation.create_stack)(
                StackName=stack_name,
                TemplateBody=json.dumps(body),
                Parameters=[{"ParameterKey": key, "ParameterValue": value} for key, value in (parameters or {}).items()],
                Capabilities=["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM"],
            )
            status = cloudformation.describe_stacks(StackName=stack_name)["Stacks"][0]["StackStatus"]
            if status != ("UPDATE_COMPLETE" if update else "CREATE_COMPLETE"):
                reason = gaps.custom_resources.why(stack_name, ACCOUNT, self.region)
                raise RuntimeError(f"stack {stack_name} ended in {status}: {reason}")
            deployment = Deployment(self, stack_name, template, paths)
        deployment.unmodelled = tuple(sorted(skipped))
        for name, after_deploy in gaps.AFTER_DEPLOY.items():
            if name not in self._skipped_deploy_steps:
                after_deploy(deployment, account=ACCOUNT, region=self.region, update=update)
        return deployment
