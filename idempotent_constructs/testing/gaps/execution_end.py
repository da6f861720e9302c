"""Gap: moto marks an execution ended before it records how it ended.

``BaseExecutionWorkerCommunication._reflect_execution_status`` sets the execution's status to
``SUCCEEDED`` (or ``FAILED``) first and its output (or error and cause) after: a DescribeExecution in
between sees a succeeded execution without output (``null``), or a failed one without its error. The
larger the output, the longer that window (observed with a 110 KiB output). AWS reports an ended
execution whole: a ``SUCCEEDED`` execution described with its data always carries its output. Here
the outcome is recorded first and the status last.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..patches import Patch


def install(patch: Patch) -> None:
    from moto.stepfunctions.parser.api import ExecutionStatus
    from moto.stepfunctions.parser.asl.eval.program_state import (
        ProgramEnded,
        ProgramError,
        ProgramStopped,
        ProgramTimedOut,
    )
    from moto.stepfunctions.parser.backend.execution import BaseExecutionWorkerCommunication

    def reflect_execution_status(communication: Any) -> None:
        execution = communication.execution
        ended = execution.exec_worker.env.program_state()
        execution.stop_date = datetime.datetime.now(tz=datetime.UTC)
        if isinstance(ended, ProgramEnded):
            execution.output = execution.exec_worker.env.states.get_input()
            status = ExecutionStatus.SUCCEEDED
        elif isinstance(ended, ProgramStopped):
            status = ExecutionStatus.ABORTED
        elif isinstance(ended, ProgramError):
            execution.error = ended.error.get("error")
            execution.cause = ended.error.get("cause")
            status = ExecutionStatus.FAILED
        elif isinstance(ended, ProgramTimedOut):
            status = ExecutionStatus.TIMED_OUT
        else:
            raise RuntimeWarning(f"Execution ended with unsupported ProgramState type '{type(ended)}'.")
        execution.exec_status = status

    patch(BaseExecutionWorkerCommunication, "_reflect_execution_status", reflect_execution_status)
