"""Gap: moto has no StartSyncExecution, the call that starts an Express execution and returns once it ends.

AWS (API reference, StartSyncExecution): it starts an execution of an Express state machine and answers when the
execution ends, with its ``executionArn``, ``stateMachineArn``, ``name``, ``startDate``, ``stopDate``, ``status``
(``SUCCEEDED``, ``FAILED`` or ``TIMED_OUT``), ``input``, the ``output`` of a success and the ``error`` and
``cause`` of a failure; a Standard state machine is refused with ``StateMachineTypeNotSupported``. (The SDKs
send it to the host ``sync-states.<region>.amazonaws.com``, which ``gaps.endpoints`` routes.) A starter function (a Lambda function behind an event source mapping, ``testing.delivery``)
calls it to hand a batch to an Express workflow and return the workflow's partial batch response.

Here the call starts the execution as StartExecution does and waits for its end (at most the 5 minutes an
Express execution may run).
"""

from __future__ import annotations

import json
import time
import uuid
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..patches import Patch

_LONGEST_SECONDS = 300  # an Express execution's longest run


def install(patch: Patch) -> None:
    from moto.core.exceptions import AWSError
    from moto.stepfunctions.responses import StepFunctionResponse

    class StateMachineTypeNotSupported(AWSError):  # type: ignore[misc]  # moto's, seen as Any
        TYPE = "StateMachineTypeNotSupported"
        STATUS = 400

    def start_sync_execution(response: Any) -> Any:
        from moto.core.responses import ActionResult

        backend = response.stepfunction_backend
        arn = response._get_param("stateMachineArn")
        if backend.describe_state_machine(arn).type != "EXPRESS":
            raise StateMachineTypeNotSupported("This operation is not supported by this type of state machine")
        name = response._get_param("name") or uuid.uuid4().hex
        started = backend.start_execution(arn, name, response._get_param("input", if_none="{}"))
        deadline = time.monotonic() + _LONGEST_SECONDS
        execution = backend.describe_execution(started.execution_arn)
        while str(getattr(execution.status, "value", execution.status)) == "RUNNING" and time.monotonic() < deadline:
            time.sleep(0.02)
            execution = backend.describe_execution(started.execution_arn)
        status = str(getattr(execution.status, "value", execution.status))
        answer: dict[str, Any] = {
            "executionArn": started.execution_arn,
            "stateMachineArn": arn,
            "name": name,
            "startDate": execution.start_date,
            "stopDate": execution.stop_date,
            "status": "TIMED_OUT" if status == "RUNNING" else status,
            "input": execution.execution_input,
        }
        if status == "SUCCEEDED":
            output = execution.output
            answer["output"] = output if isinstance(output, str) or output is None else json.dumps(output)
        for field in ("error", "cause"):
            if getattr(execution, field, None) is not None:
                answer[field] = getattr(execution, field)
        return ActionResult(answer)

    patch(StepFunctionResponse, "start_sync_execution", start_sync_execution)
