"""A ministack server, run as a subprocess of its own virtual environment on a free loopback port,
and the few calls the scenarios make to it (the same ones ``idempotent_constructs.testing`` offers
on moto, so that the scenarios read ``Deployment`` and ``Execution`` as the tests do).

The server is stopped in every case: ``Ministack`` is a context manager that ends the server's whole
process group (its in-process Lambda workers too) on the way out, whatever happened inside.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config

from idempotent_constructs._readers.assembly import construct_paths, publish_file_assets
from idempotent_constructs.testing import Deployment, execution_history

from . import launcher_path

REGION = "us-east-1"
# What `cdk bootstrap` writes, and the synthesized templates' BootstrapVersion parameter reads.
BOOTSTRAP_VERSION_PARAMETER = "/cdk-bootstrap/hnb659fds/version"
_STARTUP_TIMEOUT = 60.0  # seconds
_DEPLOY_TIMEOUT = 300.0


class ServerFailed(RuntimeError):
    """The ministack server did not start, or a stack did not deploy; the message holds why."""


class Hold:
    """One held Task state of one execution on ministack, as ``LocalEmulator.hold`` holds one on moto."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @property
    def reached(self) -> bool:
        """Whether the execution has come to the state (and waits there, until released)."""
        return self.path.with_name(self.path.name + ".arrived").exists()

    def arrived(self, timeout: float = 60.0) -> None:
        """Wait until the execution waits at the state; raises ``TimeoutError`` past ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while not self.reached:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.path.name} was not reached within {timeout:.0f} s")
            time.sleep(0.05)

    def release(self) -> None:
        self.path.unlink(missing_ok=True)


def free_loopback_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Ministack:
    """``with Ministack(python) as server:`` starts ``python launcher.py`` (``python`` is the
    interpreter of ministack's own virtual environment) on 127.0.0.1 and a free port, and waits
    until it answers its health check. ``as_released=True`` runs ministack without the launcher's
    fixes (crosscheck/divergences.py lists them)."""

    def __init__(self, python: Path, *, as_released: bool = False) -> None:
        self.python = python
        self.as_released = as_released
        self.port = 0
        self.endpoint = ""
        self.workdir = Path()
        self.log_path = Path()
        self._process: subprocess.Popen[bytes] | None = None
        self._session = boto3.session.Session(aws_access_key_id="test", aws_secret_access_key="test", region_name=REGION)
        self._clients: dict[str, Any] = {}
        self._clients_lock = threading.Lock()
        self.account = ""

    # -- the server ------------------------------------------------------------------------------
    def __enter__(self) -> Ministack:
        self.workdir = Path(tempfile.mkdtemp(prefix="crosscheck-ministack-"))
        self.log_path = self.workdir / "ministack.log"
        self.holds.mkdir()
        self.port = free_loopback_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        environment = {
            **os.environ,
            "GATEWAY_PORT": str(self.port),
            "BIND_HOST": "127.0.0.1",
            "MINISTACK_HOST": "127.0.0.1",
            "MINISTACK_REGION": REGION,
            "TMPDIR": str(self.workdir),  # where ministack and its Lambda workers write scratch files
            "S3_DATA_DIR": str(self.workdir / "s3"),
            "CROSSCHECK_AS_RELEASED": "1" if self.as_released else "",
            "CROSSCHECK_HOLDS": str(self.holds),
            # The server's Lambda workers must not pick up this repository's virtual environment.
            "PYTHONPATH": "",
        }
        environment.pop("VIRTUAL_ENV", None)
        with self.log_path.open("wb") as log:
            self._process = subprocess.Popen(
                [str(self.python), str(launcher_path())],
                cwd=self.workdir,
                env=environment,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            self._wait_until_healthy()
            self.account = self.client("sts").get_caller_identity()["Account"]
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _wait_until_healthy(self) -> None:
        deadline = time.monotonic() + _STARTUP_TIMEOUT
        while time.monotonic() < deadline:
            assert self._process is not None
            if self._process.poll() is not None:
                raise ServerFailed(f"ministack exited with code {self._process.returncode}:\n{self.log_tail()}")
            with (
                contextlib.suppress(OSError),
                urllib.request.urlopen(f"{self.endpoint}/_ministack/health", timeout=2) as response,
            ):
                if response.status == 200:
                    return
            time.sleep(0.2)
        raise ServerFailed(f"ministack did not answer on {self.endpoint} within {_STARTUP_TIMEOUT:.0f} s:\n{self.log_tail()}")

    def __exit__(self, *exc_info: Any) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
        # Lambda workers of the server's process group that outlived it.
        if process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
        if self.workdir.name.startswith("crosscheck-ministack-"):
            shutil.rmtree(self.workdir, ignore_errors=True)

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    @property
    def holds(self) -> Path:
        """Where the launcher looks for holds (``hold``)."""
        return self.workdir / "holds"

    @contextlib.contextmanager
    def hold(self, execution_name: str, state: str) -> Iterator[Hold]:
        """The Task state ``state`` of the execution named ``execution_name`` waits before it runs until
        ``release()`` or the block's end (the launcher's ``holds_on_demand``)."""
        gate = Hold(self.holds / f"{execution_name}@{state}")
        gate.path.touch()
        try:
            yield gate
        finally:
            gate.release()

    # -- what the scenarios call (the emulator interface Deployment uses) -----------------------
    def client(self, service: str) -> Any:
        with self._clients_lock:
            if service not in self._clients:
                self._clients[service] = self._session.client(
                    service,
                    endpoint_url=self.endpoint,
                    config=Config(retries={"mode": "standard", "max_attempts": 5}, max_pool_connections=32),
                )
            return self._clients[service]

    def history(self, execution_arn: str) -> list[dict[str, Any]]:
        return execution_history(self.client("stepfunctions"), execution_arn)

    def deploy(self, assembly_dir: Path, stack_name: str) -> Deployment:
        """Deploy a stack of a cloud assembly as `cdk deploy` would into a bootstrapped account: publish
        its file assets (the template too) to the bootstrap bucket, then create the stack from the
        template's URL through ministack's CloudFormation, and wait until it is complete."""
        self.client("ssm").put_parameter(Name=BOOTSTRAP_VERSION_PARAMETER, Value="30", Type="String", Overwrite=True)
        template_url = publish_file_assets(self.client("s3"), assembly_dir, stack_name, account=self.account, region=REGION)
        cloudformation = self.client("cloudformation")
        cloudformation.create_stack(
            StackName=stack_name,
            TemplateURL=template_url,
            Capabilities=["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM", "CAPABILITY_AUTO_EXPAND"],
        )
        deadline = time.monotonic() + _DEPLOY_TIMEOUT
        while True:
            stack = cloudformation.describe_stacks(StackName=stack_name)["Stacks"][0]
            if not stack["StackStatus"].endswith("_IN_PROGRESS"):
                break
            if time.monotonic() > deadline:
                raise ServerFailed(f"{stack_name} still {stack['StackStatus']} after {_DEPLOY_TIMEOUT:.0f} s")
            time.sleep(0.5)
        if stack["StackStatus"] != "CREATE_COMPLETE":
            failures = [
                f"{event['LogicalResourceId']}: {event.get('ResourceStatusReason')}"
                for event in cloudformation.describe_stack_events(StackName=stack_name)["StackEvents"]
                if event["ResourceStatus"].endswith("_FAILED")
            ]
            raise ServerFailed(f"{stack_name} ended in {stack['StackStatus']}: {json.dumps(failures, indent=1)}")
        template = json.loads((assembly_dir / f"{stack_name}.template.json").read_text())
        return Deployment(self, stack_name, template, construct_paths(assembly_dir, stack_name))
