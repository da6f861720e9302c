"""The workarounds of moto's gaps that are not a module of their own yet, installed and undone by one
patcher; each says the gap, what AWS does and why it never changes what is tested."""

from __future__ import annotations

import base64
import copy
import datetime as dt
import re
import threading
from collections.abc import Callable
from typing import Any

from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import FailureEventException

from .. import jsonata_engine as jsonata
from . import describe_execution, execution_end, parser_scopes, task_parameters
from .faults import Faults
from .lambdas import InProcessLambda


def binary_to_base64(value: Any) -> None:
    """Replace bytes inside a response, in place, by their base64 text."""
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in list(children):
        if isinstance(child, (bytes, bytearray)):
            value[key] = base64.b64encode(child).decode()
        else:
            binary_to_base64(child)


def timestamps_to_text(value: Any) -> None:
    """boto3 parses timestamps into datetimes; a state's JSON output carries them as ISO-8601 text."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else []
    for key, item in list(items):
        if isinstance(item, dt.datetime):
            value[key] = aws_timestamp(item.isoformat())
        else:
            timestamps_to_text(item)


def aws_timestamp(value: str) -> str:
    """``2026-11-22T02:27:45.957484+00:00`` (moto) -> ``2026-11-22T02:27:45.957Z`` (AWS)."""
    moment = dt.datetime.fromisoformat(value).astimezone(dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


_RFC3339 = re.compile(r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(\.\d+)?Z$")


def parse_rfc3339(value: str) -> dt.datetime | None:
    match = _RFC3339.match(value) if isinstance(value, str) else None
    if not match:
        return None
    fraction = float(match.group(2) or 0)
    return dt.datetime.strptime(match.group(1), "%Y-%m-%dT%H:%M:%S") + dt.timedelta(seconds=fraction)


_MODULES_USING_BOTO_CLIENT_FOR = (
    "state_task.lambda_eval_utils",
    "state_task.service.state_task_service_dynamodb",
    "state_task.service.state_task_service_aws_sdk",
    "state_task.service.state_task_service_sfn",
)


class Patches:
    """Installs and removes the workarounds; see each one's comment."""

    def __init__(self, lambdas: InProcessLambda) -> None:
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
            binary_to_base64(env.stack[-1])

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
            timestamps_to_text(response)

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
            fields["EnteredTime"] = aws_timestamp(fields["EnteredTime"])
            return state_data(**fields)

        self._set(state_module, "StateData", aws_state_data)

        # Gap: moto's Choice timestamp rules accept only whole seconds; AWS accepts RFC 3339 with
        # fractional seconds (as in $$.State.EnteredTime).
        self._set(is_operator.IsTimestamp, "string_to_timestamp", staticmethod(parse_rfc3339))

        jsonata.install(self._set)
        task_parameters.install(self._set)
        describe_execution.install(self._set)
        parser_scopes.install(self._set)
        execution_end.install(self._set)

    def remove(self) -> None:
        while self._undo:
            self._undo.pop()()
