"""Gap: moto never checks a task's parameters against the payload limit once they are built, and it
measures a state's output and a task's result as JSON with a space after every separator and every
non-ASCII character escaped (``json.dumps``'s defaults): an input of 250 KiB of small fields, which AWS
accepts, fails every state it passes through with States.DataLimitExceeded.

AWS: "Maximum input or output size for a task, state, or execution: 262,144 bytes of data as a UTF-8
encoded string. This quota affects tasks (activity, Lambda function, or integrated service) ... and
input data when scheduling a task" (Step Functions quotas); States.DataLimitExceeded is reported "when,
after Parameters processing, the input of a state is larger than the payload size quota" and "is a
terminal error that cannot be caught by the States.ALL error type" (error handling). So a task whose
built ``Parameters`` or ``Arguments`` (an escaped JSON string of a big result, say) exceed the limit
fails before it calls anything, although the state's own input was small.

Evidence: moto calls the service anyway, and fails a state whose compact output fits
(tests/emulator/gaps/test_payload_limit.py). Here the built parameters, a state's output and a task's
result are measured as compact JSON in UTF-8 (a string as its own bytes), and a task over the limit fails
with States.DataLimitExceeded, as on AWS.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..patches import Patch

PAYLOAD_LIMIT_BYTES = 262_144


def payload_size(value: Any) -> int:
    """Bytes of ``value`` as compact JSON in UTF-8, as Step Functions counts a payload."""
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str).encode("utf-8", "surrogatepass"))


def install(patch: Patch) -> None:
    from moto.stepfunctions.parser.api import HistoryEventType, TaskFailedEventDetails
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
        FailureEvent,
        FailureEventException,
    )
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import StatesErrorName
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type import (
        StatesErrorNameType,
    )
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.state_task import StateTask
    from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails

    build = StateTask._eval_parameters

    def checked_parameters(task: Any, env: Any) -> dict[str, Any]:
        parameters: dict[str, Any] = build(task, env)
        if payload_size(parameters) <= PAYLOAD_LIMIT_BYTES:
            return parameters
        error = StatesErrorNameType.StatesStatesDataLimitExceeded
        cause = f"The state/task '{task.name}' has parameters with a size exceeding the maximum number of bytes service limit."
        raise FailureEventException(
            failure_event=FailureEvent(
                env=env,
                error_name=StatesErrorName(typ=error),
                event_type=HistoryEventType.TaskFailed,
                event_details=EventDetails(taskFailedEventDetails=TaskFailedEventDetails(error=error.to_name(), cause=cause)),
            )
        )

    patch(StateTask, "_eval_parameters", checked_parameters)

    from moto.stepfunctions.parser.asl.component.state import state
    from moto.stepfunctions.parser.asl.component.state.exec.state_task import state_task_lambda
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import state_task_service

    def within_quota(value: Any) -> bool:
        size = len(value.encode("utf-8", "surrogatepass")) if isinstance(value, str) else payload_size(value)
        return size <= PAYLOAD_LIMIT_BYTES

    for module in (state, state_task_lambda, state_task_service):
        patch(module, "is_within_size_quota", within_quota)
