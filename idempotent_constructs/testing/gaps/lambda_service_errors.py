"""Gap: when the Lambda service itself fails an invocation (throttling, a 5xx), moto names the error of a
task whose resource is the function's ARN (as ``LambdaInvoke(payload_response_only=True)`` writes it)
"Exception". (Its "arn:aws:states:::lambda:invoke" integration names them right.)

AWS names it after the service's error code, "Lambda.<code>" ("Lambda.TooManyRequestsException",
"Lambda.ServiceException"), which is what the Retry rules the CDK adds to a Lambda task match.

Evidence: tests/emulator/gaps/test_lambda_service_errors.py, a throttled invocation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..patches import Patch


def install(patch: Patch) -> None:
    from moto.stepfunctions.parser.asl.component.common.error_name.custom_error_name import CustomErrorName
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import FailureEvent, FailureEventException
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.state_task_lambda import StateTaskLambda

    original_from_error = StateTaskLambda._from_error

    def lambda_service_error(task: Any, env: Any, ex: Exception) -> Any:
        event = original_from_error(task, env, ex)
        code = getattr(ex, "response", {}).get("Error", {}).get("Code")
        if not code or isinstance(ex, FailureEventException):
            return event
        name = f"Lambda.{code}"
        event.event_details["lambdaFunctionFailedEventDetails"]["error"] = name
        return FailureEvent(
            env=env, error_name=CustomErrorName(name), event_type=event.event_type, event_details=event.event_details
        )

    patch(StateTaskLambda, "_from_error", lambda_service_error)
