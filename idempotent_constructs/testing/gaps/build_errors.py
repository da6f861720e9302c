"""Gap: moto's DynamoDB and AWS SDK tasks name every exception raised while they run after their service.

moto names it "DynamoDB.AmazonDynamoDBException" (with an empty cause), also a failure of building the
task's parameters: a JSONata expression in ``Arguments`` that selects nothing arrives as a DynamoDB
error, which a Retry on DynamoDB errors would retry.

AWS fails the state with the building error itself (States.QueryEvaluationError,
States.DataLimitExceeded). Such failures keep their own name here.

Evidence: tests/emulator/gaps/test_build_errors.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..patches import Patch


def install(patch: Patch) -> None:
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import FailureEventException
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_aws_sdk import (
        StateTaskServiceAwsSdk,
    )
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_dynamodb import (
        StateTaskServiceDynamoDB,
    )

    for service_task in (StateTaskServiceDynamoDB, StateTaskServiceAwsSdk):
        name_service_error = service_task._from_error

        def keep_failure_name(task: Any, env: Any, ex: Exception, _name: Callable[..., Any] = name_service_error) -> Any:
            return ex.failure_event if isinstance(ex, FailureEventException) else _name(task, env, ex)

        patch(service_task, "_from_error", keep_failure_name)
