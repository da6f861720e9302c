"""Gap: when a branch of a Parallel state, or an iteration of a Map state, fails with one of Step
Functions' own errors (States.*), moto re-raises it from the Parallel or the Map as a custom error name,
which it then rejects ("States." is reserved), so the execution fails with States.Runtime.

AWS propagates the branch's or the iteration's error from the state under its own name, where a Catch
on the Parallel or the Map can catch it ("If any iteration fails, the Map state fails", with that
iteration's error: Step Functions developer guide, "Map state").

Evidence: tests/emulator/gaps/test_parallel_errors.py, a branch and an iteration failing with
States.QueryEvaluationError.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..patches import Patch


def install(patch: Patch) -> None:
    from moto.stepfunctions.parser.asl.component.common.error_name.custom_error_name import CustomErrorName
    from moto.stepfunctions.parser.asl.component.common.error_name.error_name import ErrorName
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration import iteration_worker
    from moto.stepfunctions.parser.asl.component.state.exec.state_parallel import branches_decl

    class PropagatedErrorName(ErrorName):  # type: ignore[misc]  # moto's, seen as Any
        pass

    def branch_error_name(error_name: str | None) -> ErrorName:
        if error_name is not None and error_name.startswith("States."):
            return PropagatedErrorName(error_name=error_name)
        return CustomErrorName(error_name)

    patch(branches_decl, "CustomErrorName", branch_error_name)
    patch(iteration_worker, "CustomErrorName", branch_error_name)
