"""Gap: moto writes ``$$.State.EnteredTime`` as "2026-11-22T02:27:45.957484+00:00", and gives
``$$.Execution.StartTime`` as a datetime, which no JSON holds (an output that carries it fails to describe).

AWS writes both as "2026-11-22T02:27:45.957Z" (milliseconds, UTC, "Z"), the form of every timestamp in
the Context object (Step Functions' Context object reference).

Evidence: tests/emulator/gaps/test_entered_time.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..patches import Patch

from ..timestamps import aws_timestamp


def install(patch: Patch) -> None:
    from moto.stepfunctions.parser.asl.component.state import state
    from moto.stepfunctions.parser.backend import execution_worker

    state_data, execution_data = state.StateData, execution_worker.ExecutionData

    def aws_state_data(**fields: Any) -> Any:
        fields["EnteredTime"] = aws_timestamp(fields["EnteredTime"])
        return state_data(**fields)

    def aws_execution_data(**fields: Any) -> Any:
        started = fields["StartTime"]
        fields["StartTime"] = aws_timestamp(started if isinstance(started, str) else started.isoformat())
        return execution_data(**fields)

    patch(state, "StateData", aws_state_data)
    patch(execution_worker, "ExecutionData", aws_execution_data)
