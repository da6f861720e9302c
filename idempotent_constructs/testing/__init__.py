"""Run synthesized stacks on an embedded local AWS emulator (moto): no AWS account, no Docker.

    from idempotent_constructs.testing import LocalEmulator

    with LocalEmulator() as emulator:
        deployment = emulator.deploy_stack(stack)           # or emulator.deploy("cdk.out", "MyStack")
        execution = deployment.run("Orders", {"order": {"id": 1}})
        assert execution.status == "SUCCEEDED"

Needs the ``testing`` extra (moto, boto3). Every gap of moto 5.2.x that matters here is worked around in
this module, and only here; each workaround says why and never changes what is being tested.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import datetime as dt
import hashlib
import importlib
import io
import json
import logging
import os
import re
import sys
import tempfile
import threading
import time
import traceback
import types
import uuid
import warnings
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import boto3
from moto import mock_aws
from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import FailureEventException

from .. import jsonata_engine as jsonata
from ..assembly import ACCOUNT as ACCOUNT
from ..assembly import REGION as REGION
from ..assembly import construct_paths, publish_file_assets
from ..assembly import state_machine_definitions as state_machine_definitions
from ..lambda_src import schema
from . import describe_execution, execution_end, parser_scopes, task_parameters


# ---------------------------------------------------------------------------------------------------
# moto gaps
# ---------------------------------------------------------------------------------------------------
class _InProcessLambda:
    """Gap: moto runs Lambda functions in Docker, which is not available here.

    Instead the handler named by the function is imported from the function's deployed code (the
    synthesized asset, as uploaded by CloudFormation) and called in this process, imported as Lambda
    imports it (a top-level module) but kept apart from other bundles' modules of the same name.
    Functions that have environment variables are invoked one at a time, since ``os.environ`` is
    shared by the whole process.
    """

    def __init__(self) -> None:
        # What each function printed, by function name: Lambda sends it to the function's log group.
        self.logs: dict[str, list[str]] = {}
        self._root = Path(tempfile.mkdtemp(prefix="idempotent-constructs-lambda-"))
        self._modules: dict[tuple[str, str], types.ModuleType] = {}
        self._lock = threading.Lock()
        self._environment_lock = threading.Lock()

    def _module(self, function: Any) -> types.ModuleType:
        code = function.code_bytes
        digest = hashlib.sha256(code).hexdigest()[:16]
        module_name = function.handler.rpartition(".")[0].replace("/", ".")
        with self._lock:
            cached = self._modules.get((digest, module_name))
            if cached is not None:
                return cached
            target = self._root / digest
            if not target.exists():
                with zipfile.ZipFile(io.BytesIO(code)) as archive:
                    archive.extractall(target)
            with self._environment(function):
                module = _import_isolated(target, module_name)
            self._modules[(digest, module_name)] = module
            return module

    @contextlib.contextmanager
    def _environment(self, function: Any) -> Iterator[None]:
        variables = dict(function.environment_vars or {})
        if not variables:
            yield
            return
        with self._environment_lock:
            saved = {name: os.environ.get(name) for name in variables}
            os.environ.update({name: str(value) for name, value in variables.items()})
            try:
                yield
            finally:
                for name, value in saved.items():
                    if value is None:
                        os.environ.pop(name, None)
                    else:
                        os.environ[name] = value

    def invoke(self, function: Any, event: Any) -> tuple[str, bool, str]:
        handler = getattr(self._module(function), function.handler.rpartition(".")[2])
        context = types.SimpleNamespace(
            function_name=function.function_name,
            invoked_function_arn=function.function_arn,
            memory_limit_in_mb=function.memory_size,
            aws_request_id=str(uuid.uuid4()),
            get_remaining_time_in_millis=lambda: int(function.timeout) * 1000,
        )
        with self._environment(function), _FunctionOutput.captured() as printed:
            try:
                result = handler(event, context)
            except Exception as error:  # reported to the caller like Lambda does
                payload = {
                    "errorMessage": str(error),
                    "errorType": type(error).__name__,
                    "stackTrace": traceback.format_tb(error.__traceback__),
                }
                return json.dumps(payload), True, ""
            finally:
                self.logs.setdefault(function.function_name, []).extend(printed.getvalue().splitlines())
        return json.dumps(result), False, ""


class _FunctionOutput(io.TextIOBase):
    """Stands in for ``sys.stdout`` while functions run: what a function prints goes to its own log
    (Lambda sends it to the function's log group), not to the terminal; anything printed by another
    thread meanwhile still goes where it went. Installed on each invocation, since test runners swap
    ``sys.stdout`` between tests."""

    _lock = threading.Lock()
    _local = threading.local()

    def __init__(self, real: Any) -> None:
        self.real = real

    def _target(self) -> Any:
        return getattr(self._local, "buffer", None) or self.real

    def write(self, text: str) -> int:
        return int(self._target().write(text))

    def flush(self) -> None:
        self._target().flush()

    @classmethod
    @contextlib.contextmanager
    def captured(cls) -> Iterator[io.StringIO]:
        with cls._lock:
            if not isinstance(sys.stdout, cls):
                sys.stdout = cls(sys.stdout)
        cls._local.buffer = io.StringIO()
        try:
            yield cls._local.buffer
        finally:
            cls._local.buffer = None


def _import_isolated(root: Path, module_name: str) -> types.ModuleType:
    """Import ``module_name`` the way Lambda does (top level, ``root`` first on ``sys.path``), then
    take the modules it loaded from ``root`` out of ``sys.modules`` again, so that another bundle's
    module of the same name (every other ``index.py``) gets its own copy. The imported modules keep
    references to each other, so the handler works as it would in Lambda."""
    own_names = {path.stem for path in root.iterdir() if path.suffix == ".py" or path.is_dir()}
    shadowed = {name: sys.modules.pop(name) for name in list(sys.modules) if name.split(".")[0] in own_names}
    sys.path.insert(0, str(root))
    try:
        return importlib.import_module(module_name)
    finally:
        sys.path.remove(str(root))
        for name in [name for name in sys.modules if name.split(".")[0] in own_names]:
            del sys.modules[name]
        sys.modules.update(shadowed)


def _binary_to_base64(value: Any) -> None:
    """Replace bytes inside a response, in place, by their base64 text."""
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in list(children):
        if isinstance(child, (bytes, bytearray)):
            value[key] = base64.b64encode(child).decode()
        else:
            _binary_to_base64(child)


def _timestamps_to_text(value: Any) -> None:
    """boto3 parses timestamps into datetimes; a state's JSON output carries them as ISO-8601 text."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else []
    for key, item in list(items):
        if isinstance(item, dt.datetime):
            value[key] = _aws_timestamp(item.isoformat())
        else:
            _timestamps_to_text(item)


def _aws_timestamp(value: str) -> str:
    """``2026-11-22T02:27:45.957484+00:00`` (moto) -> ``2026-11-22T02:27:45.957Z`` (AWS)."""
    moment = dt.datetime.fromisoformat(value).astimezone(dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


_RFC3339 = re.compile(r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(\.\d+)?Z$")


def _parse_rfc3339(value: str) -> dt.datetime | None:
    match = _RFC3339.match(value) if isinstance(value, str) else None
    if not match:
        return None
    fraction = float(match.group(2) or 0)
    return dt.datetime.strptime(match.group(1), "%Y-%m-%dT%H:%M:%S") + dt.timedelta(seconds=fraction)


@dataclass
class Faults:
    """Transient failures to inject, as fractions of calls (0.0 to 1.0).

    ``dynamodb``: item reads and writes (GetItem, PutItem, UpdateItem, DeleteItem) fail with
    ``ProvisionedThroughputExceededException``, as DynamoDB does when it throttles. Scans, which the
    tests use to read the table, are never failed.
    ``lambda_invocations``: invocations fail with ``TooManyRequestsException`` or
    ``ServiceException``, as the Lambda service does under load.
    """

    dynamodb: float = 0.0
    lambda_invocations: float = 0.0
    seed: int | None = None
    injected: dict[str, int] = field(default_factory=lambda: {"dynamodb": 0, "lambda": 0})

    def __post_init__(self) -> None:
        import random

        for name in ("dynamodb", "lambda_invocations"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"Faults.{name} must be a fraction from 0.0 to 1.0, got {getattr(self, name)!r}")
        self._random = random.Random(self.seed)
        self._lock = threading.Lock()

    def hit(self, kind: str) -> bool:
        rate = self.dynamodb if kind == "dynamodb" else self.lambda_invocations
        with self._lock:
            if rate and self._random.random() < rate:
                self.injected[kind] += 1
                return True
        return False

    def choice(self, options: list[str]) -> str:
        with self._lock:
            return self._random.choice(options)


_MODULES_USING_BOTO_CLIENT_FOR = (
    "state_task.lambda_eval_utils",
    "state_task.service.state_task_service_dynamodb",
    "state_task.service.state_task_service_aws_sdk",
    "state_task.service.state_task_service_sfn",
)


class _Patches:
    """Installs and removes the workarounds; see each one's comment."""

    def __init__(self, lambdas: _InProcessLambda) -> None:
        self._lambdas = lambdas
        self._undo: list[Callable[[], None]] = []
        self.faults = Faults()

    def _set(self, owner: Any, name: str, value: Any) -> None:
        original = getattr(owner, name)
        setattr(owner, name, value)
        self._undo.append(lambda: setattr(owner, name, original))

    def install(self) -> None:
        from moto.awslambda import models as lambda_models
        from moto.awslambda.exceptions import LambdaClientError
        from moto.dynamodb import models as dynamodb_models
        from moto.dynamodb import responses as dynamodb_responses
        from moto.dynamodb.exceptions import DynamodbException
        from moto.stepfunctions.parser.asl.component.common.error_name.custom_error_name import CustomErrorName
        from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import FailureEvent
        from moto.stepfunctions.parser.asl.component.state import state as state_module
        from moto.stepfunctions.parser.asl.component.state.choice.comparison.operator.implementations import (
            is_operator,
        )
        from moto.stepfunctions.parser.asl.component.state.exec.state_task.state_task_lambda import StateTaskLambda

        lambdas, patches = self._lambdas, self

        def invoke(function: Any, event: Any = None) -> tuple[str, bool, str]:
            if patches.faults.hit("lambda"):
                code = patches.faults.choice(["TooManyRequestsException", "ServiceException"])
                raise LambdaClientError(code, "injected by idempotent_constructs.testing.Faults")
            return lambdas.invoke(function, event if event is not None else {})

        self._set(lambda_models.LambdaFunction, "_invoke_lambda", invoke)

        # Gap: when the Lambda service itself fails a call (throttling, 5xx), moto names the error
        # "Exception"; Step Functions names it "Lambda.<error code>", which is what Retry rules match.
        original_from_error = StateTaskLambda._from_error

        def lambda_service_error(task: Any, env: Any, ex: Exception) -> Any:
            event = original_from_error(task, env, ex)
            code = getattr(ex, "response", {}).get("Error", {}).get("Code")
            if code and not isinstance(ex, FailureEventException):
                name = f"Lambda.{code}"
                details = event.event_details["lambdaFunctionFailedEventDetails"]
                details["error"] = name
                return FailureEvent(
                    env=env, error_name=CustomErrorName(name), event_type=event.event_type, event_details=event.event_details
                )
            return event

        self._set(StateTaskLambda, "_from_error", lambda_service_error)

        # Speed, not semantics: moto's interpreter builds a new boto3 client for every task it runs,
        # which under many concurrent executions costs seconds of CPU per call; reuse one client per
        # service and region (boto3 clients are thread-safe; retries stay disabled as moto set them).
        import importlib as _importlib

        from moto.stepfunctions.parser.asl.utils import boto_client as boto_client_module

        make_client = boto_client_module.boto_client_for
        clients: dict[tuple[str, str], Any] = {}
        clients_lock = threading.Lock()

        def cached_client(region: str, service: str, state_credentials: Any = None) -> Any:
            with clients_lock:
                if (region, service) not in clients:
                    clients[(region, service)] = make_client(region=region, service=service)
                return clients[(region, service)]

        for module_name in _MODULES_USING_BOTO_CLIENT_FOR:
            module = _importlib.import_module(f"moto.stepfunctions.parser.asl.component.state.exec.{module_name}")
            self._set(module, "boto_client_for", cached_client)

        # Gap: when a branch of a Parallel fails with one of Step Functions' own errors (States.*),
        # moto re-raises it from the Parallel as a custom error name, which it then rejects, so the
        # execution fails with States.Runtime; AWS propagates the original error, catchable.
        from moto.stepfunctions.parser.asl.component.common.error_name.error_name import ErrorName
        from moto.stepfunctions.parser.asl.component.state.exec.state_parallel import branches_decl

        class _PropagatedErrorName(ErrorName):  # type: ignore[misc]  # moto's, seen as Any
            pass

        def branch_error_name(error_name: str | None) -> ErrorName:
            if error_name is not None and error_name.startswith("States."):
                return _PropagatedErrorName(error_name=error_name)
            return CustomErrorName(error_name)

        self._set(branches_decl, "CustomErrorName", branch_error_name)

        # Gap: moto's States.ALL catches everything; on AWS it does not catch States.DataLimitExceeded
        # (a state's input or output over the 256 KiB payload limit, which moto does detect) nor
        # States.Runtime, which "always causes the execution to fail". A catcher naming
        # States.DataLimitExceeded explicitly still matches; nothing catches States.Runtime.
        from moto.stepfunctions.parser.asl.component.common.error_name.error_equals_decl import ErrorEqualsDecl

        original_error_equals = ErrorEqualsDecl._eval_body
        terminal = {"States.DataLimitExceeded", "States.Runtime"}

        def error_equals(decl: Any, env: Any) -> None:
            error_name = env.stack[-1]
            name = getattr(error_name, "error_name", None)
            explicit = name != "States.Runtime" and any(getattr(n, "error_name", None) == name for n in decl.error_names)
            if name in terminal and not explicit:
                env.stack.pop()
                env.stack.append(False)
                return
            original_error_equals(decl, env)

        self._set(ErrorEqualsDecl, "_eval_body", error_equals)

        # Gap: moto's DynamoDB integration hands binary attributes (B) to the state as Python bytes,
        # which end up as "b'...'" text; Step Functions hands them over base64-encoded, as in the API.
        from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_dynamodb import (
            StateTaskServiceDynamoDB,
        )

        original_dynamodb_task = StateTaskServiceDynamoDB._eval_service_task

        def dynamodb_task(task: Any, env: Any, *args: Any, **kwargs: Any) -> None:
            original_dynamodb_task(task, env, *args, **kwargs)
            _binary_to_base64(env.stack[-1])

        self._set(StateTaskServiceDynamoDB, "_eval_service_task", dynamodb_task)

        # Gap: moto's AWS SDK integrations ("arn:aws:states:::aws-sdk:...") pass the state's
        # PascalCase parameters to boto3 unchanged (which rejects them) and return boto3's camelCase
        # response. Step Functions takes and returns the API's PascalCase names; convert both ways
        # with the service model, as moto's own helpers for this do.
        from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_aws_sdk import (
            StateTaskServiceAwsSdk,
        )

        def operation(task: Any) -> Any:
            import botocore.session

            service = botocore.session.get_session().get_service_model(task._get_boto_service_name())
            action = task.resource.api_action
            return service.operation_model(action[0].upper() + action[1:])

        def normalise_parameters(task: Any, parameters: dict[str, Any], *args: Any, **kwargs: Any) -> None:
            task._to_boto_request(parameters, operation(task).input_shape)

        def normalise_response(task: Any, response: Any, *args: Any, **kwargs: Any) -> None:
            task._from_boto_response(response, operation(task).output_shape)
            _timestamps_to_text(response)

        self._set(StateTaskServiceAwsSdk, "_normalise_parameters", normalise_parameters)
        self._set(StateTaskServiceAwsSdk, "_normalise_response", normalise_response)

        # Gap: moto's AWS::Lambda::Version has no physical id, so a Ref to it (the qualified ARN that
        # the CDK's `function.current_version` produces) resolves to a Python object.
        def create_version(
            cls: Any, /, resource_name: str, cloudformation_json: dict[str, Any], account_id: str, region_name: str, **kwargs: Any
        ) -> Any:
            backend = lambda_models.lambda_backends[account_id][region_name]
            published = backend.publish_version(cloudformation_json["Properties"]["FunctionName"])
            version = lambda_models.LambdaVersion({"Version": published.version})
            version.physical_resource_id = (
                f"arn:aws:lambda:{region_name}:{account_id}:function:{published.function_name}:{published.version}"
            )
            return version

        self._set(lambda_models.LambdaVersion, "create_from_cloudformation_json", classmethod(create_version))

        # Gap: moto's DynamoDB checks a condition and then writes without a lock, so two concurrent
        # conditional writes can both succeed, and it updates items in place, so a read during an
        # update can see half of it. Real DynamoDB makes each write atomic and each read consistent:
        # serialize them, and hand reads a copy.
        lock = threading.RLock()
        backend = dynamodb_models.DynamoDBBackend
        item_operations = ("get_item", "put_item", "update_item", "delete_item", "transact_write_items")
        for name in item_operations:
            original = getattr(backend, name)

            def serialized(*args: Any, _original: Callable[..., Any] = original, **kwargs: Any) -> Any:
                with lock:
                    return copy.deepcopy(_original(*args, **kwargs))

            self._set(backend, name, serialized)

        # Faults.dynamodb fails a share of API requests. Drawn per request, not per backend call:
        # moto's UpdateItem reads the item first (two backend calls), which would fail it at 51% for
        # a 30% rate and, 11 times in a row, exhaust a state's 10 retries about once in 40 runs.
        for name in item_operations:
            original = getattr(dynamodb_responses.DynamoHandler, name)

            def faulty(handler: Any, _original: Callable[..., Any] = original) -> Any:
                if patches.faults.hit("dynamodb"):
                    raise DynamodbException(
                        "ProvisionedThroughputExceededException", "injected by idempotent_constructs.testing.Faults"
                    )
                return _original(handler)

            self._set(dynamodb_responses.DynamoHandler, name, faulty)

        # Gap: moto writes $$.State.EnteredTime as 2026-11-22T02:27:45.957484+00:00; AWS writes
        # 2026-11-22T02:27:45.957Z. Give states the AWS form.
        state_data = state_module.StateData

        def aws_state_data(**fields: Any) -> Any:
            fields["EnteredTime"] = _aws_timestamp(fields["EnteredTime"])
            return state_data(**fields)

        self._set(state_module, "StateData", aws_state_data)

        # Gap: moto's Choice timestamp rules accept only whole seconds; AWS accepts RFC 3339 with
        # fractional seconds (as in $$.State.EnteredTime).
        self._set(is_operator.IsTimestamp, "string_to_timestamp", staticmethod(_parse_rfc3339))

        jsonata.install(self._set)
        task_parameters.install(self._set)
        describe_execution.install(self._set)
        parser_scopes.install(self._set)
        execution_end.install(self._set)

    def remove(self) -> None:
        while self._undo:
            self._undo.pop()()


class _StatusChangeEvents:
    """Gap: moto neither emits Step Functions' "Execution Status Change" events nor delivers
    EventBridge events to Lambda targets. This does both, the way EventBridge does: when an
    execution ends, an event in the AWS shape goes to every rule whose pattern (matched by moto's
    own matcher) accepts it, and each Lambda target of such a rule is invoked with it,
    asynchronously, moments later."""

    def __init__(self, emulator: LocalEmulator) -> None:
        import queue

        self._emulator = emulator
        self._ended: queue.Queue[str | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._dropping = threading.Event()

    def install(self, patches: _Patches) -> None:
        from moto.stepfunctions.parser.backend.execution import BaseExecutionWorkerCommunication

        original = BaseExecutionWorkerCommunication.terminated
        ended = self._ended

        def terminated(communication: Any) -> None:
            original(communication)
            ended.put(communication.execution.exec_arn)

        patches._set(BaseExecutionWorkerCommunication, "terminated", terminated)
        self._thread = threading.Thread(target=self._run, name="status-change-events", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._ended.put(None)
        if self._thread is not None:
            self._thread.join(timeout=5)

    @contextlib.contextmanager
    def dropped(self) -> Iterator[None]:
        """Events of executions that end while the block runs are lost, as if EventBridge never
        delivered them (to test what happens without them)."""
        self._dropping.set()
        try:
            yield
        finally:
            self._ended.join()
            self._dropping.clear()

    def _run(self) -> None:
        while (execution_arn := self._ended.get()) is not None:
            try:
                client = self._emulator.client("stepfunctions")
                # AWS sends status-change events for Standard executions only.
                if not self._dropping.is_set() and not is_express(client, execution_arn):
                    self._deliver(client.describe_execution(executionArn=execution_arn))
            except Exception:  # a delivery that fails is lost, as a Lambda target's would be
                logging.getLogger(__name__).debug("event for %s not delivered", execution_arn, exc_info=True)
            finally:
                self._ended.task_done()
        self._ended.task_done()

    def _deliver(self, execution: dict[str, Any]) -> None:
        from moto.events.models import EventPattern

        event = {
            "version": "0",
            "id": str(uuid.uuid4()),
            "detail-type": "Step Functions Execution Status Change",
            "source": "aws.states",
            "account": ACCOUNT,
            "time": _aws_timestamp(execution["stopDate"].isoformat()),
            "region": self._emulator.region,
            "resources": [execution["executionArn"]],
            "detail": {
                "executionArn": execution["executionArn"],
                "stateMachineArn": execution["stateMachineArn"],
                "name": execution["name"],
                "status": execution["status"],
                "startDate": int(execution["startDate"].timestamp() * 1000),
                "stopDate": int(execution["stopDate"].timestamp() * 1000),
                "input": execution.get("input"),
                "output": execution.get("output"),
                "redriveCount": execution.get("redriveCount", 0),
            },
        }
        events, lambdas = self._emulator.client("events"), self._emulator.client("lambda")
        for rule in events.list_rules()["Rules"]:
            if not rule.get("EventPattern") or not EventPattern.load(rule["EventPattern"]).matches_event(event):
                continue
            for target in events.list_targets_by_rule(Rule=rule["Name"])["Targets"]:
                if ":lambda:" in target["Arn"]:
                    lambdas.invoke(FunctionName=target["Arn"], Payload=json.dumps(event).encode())


# ---------------------------------------------------------------------------------------------------
# deployments and executions
# ---------------------------------------------------------------------------------------------------
class ExpressHistoryUnavailable(LookupError):
    """AWS keeps no execution history for Express workflows (GetExecutionHistory is "not supported by
    EXPRESS state machines"): assert on what a caller sees instead, the output, error, or the table."""


_EXPRESS: dict[str, bool] = {}  # by state machine ARN, for one emulator: a state machine's type never changes


def is_express(client: Any, execution_arn: str, state_machine_arn: str | None = None) -> bool:
    """Whether the execution belongs to an Express state machine (moto's ARNs do not tell);
    ``state_machine_arn``, when the caller has described the execution already."""
    state_machine = state_machine_arn or client.describe_execution(executionArn=execution_arn)["stateMachineArn"]
    if state_machine not in _EXPRESS:
        _EXPRESS[state_machine] = client.describe_state_machine(stateMachineArn=state_machine)["type"] == "EXPRESS"
    return _EXPRESS[state_machine]


def execution_history(client: Any, execution_arn: str) -> list[dict[str, Any]]:
    """Every history event of an execution, oldest first, read with ``client`` (a Step Functions
    client). Raises ``ExpressHistoryUnavailable`` for an Express execution, whose history AWS does not
    keep (moto would give it)."""
    if is_express(client, execution_arn):
        raise ExpressHistoryUnavailable(f"{execution_arn} is an Express execution: AWS keeps no history for it")
    events: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"executionArn": execution_arn, "maxResults": 1000}
    while True:
        page = client.get_execution_history(**kwargs)
        events.extend(page["events"])
        if not page.get("nextToken"):
            return events
        kwargs["nextToken"] = page["nextToken"]


@dataclass
class Execution:
    """A finished execution: status, parsed output, error and cause, and its history events (none
    for an Express execution: reading them raises ``ExpressHistoryUnavailable``, as AWS keeps none)."""

    arn: str
    status: str
    input: Any
    output: Any = None
    error: str | None = None
    cause: str | None = None
    history: list[dict[str, Any]] = field(default_factory=list)

    express: bool = False

    def _events(self) -> list[dict[str, Any]]:
        if self.express:
            raise ExpressHistoryUnavailable(f"{self.arn} is an Express execution: AWS keeps no history for it")
        return self.history

    def entered_states(self) -> list[str]:
        """Names of the states entered, in order."""
        self._events()
        return [event["stateEnteredEventDetails"]["name"] for event in self.history if "stateEnteredEventDetails" in event]

    def lambda_invocations(self) -> int:
        """Lambda invocations that were scheduled (attempts included)."""
        self._events()
        return sum(1 for event in self.history if event["type"] == "LambdaFunctionScheduled") + sum(
            1
            for event in self.history
            if event["type"] == "TaskScheduled" and event["taskScheduledEventDetails"]["resourceType"] == "lambda"
        )


def wait_for_execution(
    client: Any,
    execution_arn: str,
    *,
    history: Callable[[str], list[dict[str, Any]]],
    timeout: float,
    pause: float = 0.05,
    max_pause: float = 0.5,
) -> Execution:
    """Poll ``describe_execution`` (backing off from ``pause`` to ``max_pause``) until the execution
    ends; return it with its ``history``. Works against the emulator and against AWS."""
    deadline = time.monotonic() + timeout
    while True:
        described = client.describe_execution(executionArn=execution_arn)
        if described["status"] in schema.EXECUTION_ENDED:
            break
        if time.monotonic() > deadline:
            raise TimeoutError(f"{execution_arn} still {described['status']} after {timeout} s")
        time.sleep(pause)
        pause = min(pause * 1.5, max_pause)
    output = described.get("output")
    # The outcome of an Express execution is what StartSyncExecution would return (moto has none).
    express = is_express(client, execution_arn, described["stateMachineArn"])
    return Execution(
        arn=execution_arn,
        status=described["status"],
        input=json.loads(described["input"]),
        output=json.loads(output) if output is not None else None,
        error=described.get("error"),
        cause=described.get("cause"),
        history=[] if express else history(execution_arn),
        express=express,
    )


class Emulator(Protocol):
    """What a ``Deployment`` needs of the emulator it was deployed to: ``LocalEmulator`` (moto), or the
    cross-check's ministack server."""

    def client(self, service: str) -> Any: ...

    def history(self, execution_arn: str) -> list[dict[str, Any]]: ...


class Deployment:
    """A stack deployed into an emulator."""

    def __init__(self, emulator: Emulator, stack_name: str, template: dict[str, Any], paths: dict[str, str]) -> None:
        self.emulator = emulator
        self.stack_name = stack_name
        self.template = template
        self.paths = paths  # logical id -> construct path
        pages = emulator.client("cloudformation").get_paginator("list_stack_resources").paginate(StackName=stack_name)
        self.resources = {
            resource["LogicalResourceId"]: resource["PhysicalResourceId"]
            for page in pages
            for resource in page["StackResourceSummaries"]
        }

    def _logical_ids(self, resource_type: str) -> list[str]:
        return [logical_id for logical_id, resource in self.template["Resources"].items() if resource["Type"] == resource_type]

    def physical_id(self, resource_type: str, name: str = "") -> str:
        """The physical id of the one resource of ``resource_type`` whose construct path contains
        ``name`` as whole segments ("Orders" finds "Stack/Orders/StateMachine/Resource")."""
        matches = [
            logical_id
            for logical_id in self._logical_ids(resource_type)
            if f"/{name}/" in f"/{self._path(logical_id)}/" or not name
        ]
        if len(matches) != 1:
            raise LookupError(f"expected one {resource_type} matching {name!r}, found {matches}")
        return str(self.resources[matches[0]])

    def _path(self, logical_id: str) -> str:
        return self.paths.get(logical_id, logical_id)

    def state_machine_arn(self, name: str = "") -> str:
        return self.physical_id("AWS::StepFunctions::StateMachine", name)

    def table_name(self, name: str = "") -> str:
        return self.physical_id("AWS::DynamoDB::Table", name)

    def start(self, state_machine: str, payload: Any, name: str | None = None) -> str:
        """Start an execution; returns its ARN. ``state_machine`` is an ARN or a construct path part."""
        arn = state_machine if state_machine.startswith("arn:") else self.state_machine_arn(state_machine)
        # Gap: moto reuses a default execution name, so a second unnamed start collides: always name.
        response = self.emulator.client("stepfunctions").start_execution(
            stateMachineArn=arn, input=json.dumps(payload), name=name or uuid.uuid4().hex
        )
        return str(response["executionArn"])

    def wait(self, execution_arn: str, timeout: float = 120.0) -> Execution:
        """Wait until the execution has finished and return it with its history."""
        # Back off from 50 ms: every call goes through the emulator, and many waiting callers would
        # otherwise take the CPU from the executions they wait for.
        return wait_for_execution(self.emulator.client("stepfunctions"), execution_arn, history=self.history, timeout=timeout)

    def wait_for_state(self, execution_arn: str, state_name: str, timeout: float = 60.0) -> None:
        """Wait until a running execution has entered the state named ``state_name``."""
        deadline = time.monotonic() + timeout
        while not any(
            event.get("stateEnteredEventDetails", {}).get("name") == state_name for event in self.history(execution_arn)
        ):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{execution_arn} did not enter {state_name} within {timeout} s")
            time.sleep(0.1)

    def run(self, state_machine: str, payload: Any, name: str | None = None, timeout: float = 120.0) -> Execution:
        """Start an execution and wait for it."""
        return self.wait(self.start(state_machine, payload, name), timeout)

    def history(self, execution_arn: str) -> list[dict[str, Any]]:
        return self.emulator.history(execution_arn)

    def records_of(self, execution: Execution | str, table: str = "") -> dict[str, dict[str, Any]]:
        """The idempotency records an execution (or its ARN) holds or finished, by id."""
        arn = execution if isinstance(execution, str) else execution.arn
        return {
            item[schema.ID]["S"]: item
            for item in self.items(table)
            if schema.owned_by(item.get(schema.OWNER, {}).get("S", ""), arn)
        }

    def items(self, table: str = "") -> list[dict[str, Any]]:
        """Every item of a table of this stack, in DynamoDB JSON."""
        client = self.emulator.client("dynamodb")
        paginator = client.get_paginator("scan")
        name = self.table_name(table)
        return [item for page in paginator.paginate(TableName=name, ConsistentRead=True) for item in page["Items"]]


class LocalEmulator:
    """The embedded emulator: moto with its Step Functions interpreter, plus the workarounds above."""

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
        self.status_change_events = _StatusChangeEvents(self)
        self.lambdas = _InProcessLambda()
        self._patches = _Patches(self.lambdas)
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
        _EXPRESS.clear()  # a fresh emulator may reuse an ARN for a state machine of the other type
        self._patches.install()
        self.status_change_events.install(self._patches)
        return self

    def __exit__(self, *exc_info: Any) -> None:
        if isinstance(sys.stdout, _FunctionOutput):
            sys.stdout = sys.stdout.real
        self._patches.remove()
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

    def history(self, execution_arn: str) -> list[dict[str, Any]]:
        """Every history event of an execution, oldest first. Raises ``ExpressHistoryUnavailable``
        for an Express execution, whose history AWS does not keep (moto would give it)."""
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
        previous, self._patches.faults = self._patches.faults, faults
        try:
            yield faults
        finally:
            self._patches.faults = previous

    def deploy_stack(self, stack: Any) -> Deployment:
        """Synthesize the app that holds ``stack`` (an ``aws_cdk.Stack``) and deploy the stack."""
        assembly = stack.node.root.synth()
        return self.deploy(assembly.directory, stack.artifact_id)

    def deploy(self, assembly_dir: str | Path, stack_name: str) -> Deployment:
        """Deploy a stack from a cloud assembly directory (``cdk.out``): upload its file assets,
        create it with CloudFormation and wait until it is complete."""
        assembly_dir = Path(assembly_dir)
        template = json.loads((assembly_dir / f"{stack_name}.template.json").read_text())
        publish_file_assets(self.client("s3"), assembly_dir, stack_name, account=ACCOUNT, region=self.region)
        cloudformation = self.client("cloudformation")
        with warnings.catch_warnings():
            # Gap: moto's CloudFormation skips resource types it does not implement, with a warning
            # each (here the TLS-only policies of a bucket and a queue, which the emulator cannot enforce;
            # Lambda's asynchronous-invocation settings, which in-process calls do not use; an alarm).
            warnings.filterwarnings("ignore", message="Tried to parse AWS::", category=UserWarning)
            cloudformation.create_stack(
                StackName=stack_name,
                TemplateBody=json.dumps(_without_bootstrap_checks(template)),
                Capabilities=["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM"],
            )
            status = cloudformation.describe_stacks(StackName=stack_name)["Stacks"][0]["StackStatus"]
            if status != "CREATE_COMPLETE":
                raise RuntimeError(f"stack {stack_name} ended in {status}")
            deployment = Deployment(self, stack_name, template, construct_paths(assembly_dir, stack_name))
        self._register_state_machines(deployment)
        self._enable_time_to_live(deployment)
        return deployment

    def _enable_time_to_live(self, deployment: Deployment) -> None:
        """Gap: moto's CloudFormation ignores a table's TimeToLiveSpecification; set it as AWS would
        (moto never deletes expired items either way; tools read the setting)."""
        for logical_id, resource in deployment.template.get("Resources", {}).items():
            specification = resource.get("Properties", {}).get("TimeToLiveSpecification")
            if resource.get("Type") == "AWS::DynamoDB::Table" and specification and specification.get("Enabled"):
                self.client("dynamodb").update_time_to_live(
                    TableName=deployment.resources[logical_id],
                    TimeToLiveSpecification={"Enabled": True, "AttributeName": specification["AttributeName"]},
                )

    def _register_state_machines(self, deployment: Deployment) -> None:
        """Gap: CloudFormation creates state machines in moto's plain Step Functions backend, which
        cannot execute them; create each again, same name and ARN, in the interpreter's backend."""
        from moto.stepfunctions.models import stepfunctions_backends
        from moto.stepfunctions.parser.models import stepfunctions_parser_backends

        plain = stepfunctions_backends[ACCOUNT][self.region]
        interpreter = stepfunctions_parser_backends[ACCOUNT][self.region]
        for logical_id in deployment._logical_ids("AWS::StepFunctions::StateMachine"):
            arn = deployment.resources[logical_id]
            created = plain.describe_state_machine(arn)
            properties = deployment.template["Resources"][logical_id]["Properties"]
            with contextlib.suppress(Exception):
                interpreter.delete_state_machine(arn)
            interpreter.create_state_machine(
                name=created.name,
                definition=created.definition,
                roleArn=created.roleArn,
                sm_type=properties.get("StateMachineType", "STANDARD"),
            )


def item_size(item: dict[str, Any]) -> int:
    """Bytes of a DynamoDB item (in DynamoDB JSON, binary values as bytes or base64 text), by
    DynamoDB's published rules: attribute names plus values; strings and binary by their byte length,
    numbers one byte per two significant digits plus one, lists and maps 3 bytes plus one per element
    (an approximation; the records use S, N and B only, which are exact). moto reports no real
    consumed capacity, so write units are computed from this."""

    def value_size(value: dict[str, Any]) -> int:
        ((kind, content),) = value.items()
        if kind == "S":
            return len(content.encode())
        if kind == "B":
            return len(content) if isinstance(content, bytes) else len(base64.b64decode(content))
        if kind == "N":
            digits = content.lstrip("-").replace(".", "").lstrip("0").rstrip("0") or "0"
            return -(-len(digits) // 2) + 1 + int(content.startswith("-"))
        if kind in ("BOOL", "NULL"):
            return 1
        if kind == "L":
            return 3 + sum(value_size(element) + 1 for element in content)
        if kind == "M":
            return 3 + sum(len(name.encode()) + value_size(element) + 1 for name, element in content.items())
        return sum(len(str(element).encode()) for element in content)  # sets

    return sum(len(name.encode()) + value_size(value) for name, value in item.items())


def write_units(item: dict[str, Any]) -> int:
    """On-demand write request units of writing ``item``: one per started KiB."""
    return -(-item_size(item) // 1024)


def _without_bootstrap_checks(template: dict[str, Any]) -> dict[str, Any]:
    """The CDK adds a bootstrap-version rule and an analytics resource meant for a real account."""
    template = json.loads(json.dumps(template))
    template.pop("Rules", None)
    template.get("Parameters", {}).pop("BootstrapVersion", None)
    if not template.get("Parameters"):
        template.pop("Parameters", None)
    template["Resources"].pop("CDKMetadata", None)
    template.get("Conditions", {}).pop("CDKMetadataAvailable", None)
    if not template.get("Conditions"):
        template.pop("Conditions", None)
    return template
