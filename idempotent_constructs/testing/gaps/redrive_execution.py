"""Gap: moto has no RedriveExecution: a failed, aborted or timed-out execution cannot go on from where it stopped.

AWS ("Restarting state machine executions with redrive",
https://docs.aws.amazon.com/step-functions/latest/dg/redrive-executions.html): a redrive "continues the failed
execution from the unsuccessful step and uses the same input", with the "same state machine definition and execution
ARN"; successful steps "are not rerun"; the state machine's timeout "is reset"; a Fail state is reentered and "fails
again"; "the retry attempt count ... is reset to 0". Only an execution that is not ``SUCCEEDED``, within "the
redrivable period of 14 days" from its end, with fewer than 24,999 history events; RedriveExecution (API reference)
"is not supported by EXPRESS state machines", answers ``redriveDate``, and a ``clientToken`` gets "idempotent
responses for the last 10 client tokens ... valid for up to 15 minutes". DescribeExecution (API reference) gains
``redriveCount`` (0 before any), ``redriveDate``, ``redriveStatus`` (``NOT_REDRIVABLE`` "if calling the
RedriveExecution API action would return the ExecutionNotRedrivable error") and ``redriveStatusReason`` ("Execution
is RUNNING and cannot be redriven", "Execution is SUCCEEDED and cannot be redriven", "Execution redrivable period
exceeded", "Execution history event limit exceeded"); the history an ``ExecutionRedriven`` event with its
``redriveCount``. The Context object's ``Execution.RedriveCount`` "is 0, if you've not yet redriven an execution",
``RedriveTime`` "is only available if you've redriven"
(https://docs.aws.amazon.com/step-functions/latest/dg/input-output-contextobject.html). A status-change event's
detail "provides the same information as the DescribeExecution API", its status that "at the time the event was
sent" (https://docs.aws.amazon.com/step-functions/latest/dg/cw-events.html): a redrive sends one saying RUNNING.

Here each state a run enters is noted with its input and variables, by where the run is (the top level; a branch or
an iteration: ``gaps.redrive_iterations``). A redrive appends the event, sets the execution running (no stop date,
error or cause) and resumes at the top-level state entered last, with that input and those variables; retries and
timeouts start again; ``testing.events`` sends the RUNNING event. Not documented, so chosen here: the variables (as
the resumed state had them on entry), and the refusal of an Express execution (``ExecutionNotRedrivable`` with the
API reference's sentence; the other refusals' messages are the reasons above). The 14 days are judged by the wall
clock against ``stopDate``. Not modelled: ListExecutions' redrive fields, the one-year and November-2023 limits.

The choices AWS's pages leave open that a real run can tell (variables kept, a new ``EnteredTime``, the first
``StartTime``) are asked of an account by ``idempotent-constructs probe --redrive`` (``runtime/redrive_probe.py``),
which passes on this emulator by construction and has not yet been run on AWS by the project.

Evidence: tests/emulator/gaps/test_redrive_execution.py.
"""

from __future__ import annotations

import collections
import copy
import datetime
import sys
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..timestamps import aws_timestamp

if TYPE_CHECKING:
    from ..patches import Patch

REDRIVABLE_PERIOD = datetime.timedelta(days=14)
HISTORY_LIMIT = 24_999
TOKENS_KEPT, TOKEN_LIFETIME = 10, datetime.timedelta(minutes=15)
REASONS = {
    "RUNNING": "Execution is RUNNING and cannot be redriven",
    "SUCCEEDED": "Execution is SUCCEEDED and cannot be redriven",
}
EXPRESS_REFUSED = "This API action is not supported by EXPRESS state machines."
# On an interpreter Environment: where its program runs (() the top level; + (state, branch or item index) for
# a Parallel branch or a Map iteration), and whether that run resumes where the last attempt left it.
_PATH, _RESUME = "_redrive_path", "_redrive_resume"
_LOCK = threading.Lock()  # one redrive at a time: two could both find the execution ended


def described(execution: Any) -> dict[str, Any]:
    """DescribeExecution's redrive fields of an execution (``gaps.describe_execution`` adds them); none while
    this workaround is suspended."""
    return {}


@dataclass
class Entered:
    """The state a run entered last, with its input and variables as they were."""

    state: str
    input: Any
    variables: tuple[dict[str, Any], dict[str, Any]]


@dataclass
class Ended:
    """A branch or an iteration that succeeded, with its output."""

    output: Any


class Notes:
    """What an execution's attempts left, by path; on its event manager, which its frames and attempts share."""

    def __init__(self) -> None:
        self.by_path: dict[tuple[Any, ...], Entered | Ended] = {}
        self.lock = threading.Lock()
        self.rerun_all = False  # the last attempt failed on States.DataLimitExceeded
        self.resumed: set[tuple[Any, ...]] = set()  # the Parallel and Map states this attempt resumed

    def note(self, path: tuple[Any, ...], noted: Entered | Ended) -> None:
        with self.lock:
            self.by_path[path] = noted

    def forget_below(self, path: tuple[Any, ...]) -> None:
        with self.lock:
            for key in [key for key in self.by_path if len(key) > len(path) and key[: len(path)] == path]:
                del self.by_path[key]


def notes_of(env: Any) -> Notes:
    kept: dict[str, Any] = env.event_manager.__dict__
    notes: Notes | None = kept.get("_redrive_notes")
    return notes if notes is not None else kept.setdefault("_redrive_notes", Notes())


def _status(execution: Any) -> str:
    return str(getattr(execution.exec_status, "value", execution.exec_status))


def _express(execution: Any) -> bool:
    return getattr(execution.state_machine, "type", "STANDARD") == "EXPRESS"  # moto's sm_type always says STANDARD


def not_redrivable(execution: Any) -> str | None:
    """Why the execution cannot be redriven now (AWS's redriveStatusReason), or None."""
    if _status(execution) in REASONS:
        return REASONS[_status(execution)]
    if datetime.datetime.now(datetime.UTC) - execution.stop_date > REDRIVABLE_PERIOD:
        return "Execution redrivable period exceeded"
    if len(execution.exec_worker.env.event_manager._history_event_list) >= HISTORY_LIMIT:
        return "Execution history event limit exceeded"
    return None


def _described(execution: Any) -> dict[str, Any]:
    if _express(execution):
        return {}  # AWS describes no Express execution
    fields: dict[str, Any] = {"redriveCount": getattr(execution, "redrive_count", 0)}
    if getattr(execution, "redrive_date", None) is not None:
        fields["redriveDate"] = execution.redrive_date
    reason = not_redrivable(execution)
    fields["redriveStatus"] = "NOT_REDRIVABLE" if reason else "REDRIVABLE"
    if reason:
        fields["redriveStatusReason"] = reason
    return fields


def _variables(store: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    return copy.deepcopy((store._outer_scope, store._inner_scope))


def _restore(store: Any, variables: tuple[dict[str, Any], dict[str, Any]]) -> None:
    for scope, values in zip((store._outer_scope, store._inner_scope), copy.deepcopy(variables), strict=True):
        scope.clear()
        scope.update(values)
    store._outer_variable_declaration_cache = store._variable_declarations_cache = None


def install(patch: Patch) -> None:
    from moto.core.exceptions import AWSError
    from moto.core.responses import ActionResult
    from moto.stepfunctions.parser.api import ExecutionStatus, HistoryEventType
    from moto.stepfunctions.parser.asl.component.eval_component import EvalComponent
    from moto.stepfunctions.parser.asl.component.program.program import Program
    from moto.stepfunctions.parser.asl.component.state.state import CommonStateField
    from moto.stepfunctions.parser.asl.eval.event.event_manager import EventHistoryContext, EventManager
    from moto.stepfunctions.parser.backend.execution_worker import ExecutionWorker
    from moto.stepfunctions.parser.utils import TMP_THREADS
    from moto.stepfunctions.responses import StepFunctionResponse

    class ExecutionNotRedrivable(AWSError):  # type: ignore[misc]  # moto's, seen as Any
        TYPE = "ExecutionNotRedrivable"
        STATUS = 400

    environment = ExecutionWorker._get_evaluation_environment
    run_program = Program.eval

    def evaluation_environment(worker: Any) -> Any:
        env = environment(worker)
        count, redriven = getattr(worker, "redriven", (0, None))
        context = env.states.context_object.context_object_data["Execution"]
        context["RedriveCount"] = count
        if redriven is not None:
            context["RedriveTime"] = aws_timestamp(redriven.isoformat())
        env.__dict__[_PATH] = ()
        return env

    def eval_state(state: Any, env: Any) -> None:
        path = env.__dict__.get(_PATH)
        if path is not None and env.is_running():
            notes_of(env).note(path, Entered(state.name, env.states.get_input(), _variables(env.variable_store)))
        try:
            EvalComponent.eval(state, env)
        finally:
            env.__dict__.pop(_RESUME, None)  # what a resumed state launches resumes; later states run afresh

    def eval_program(program: Any, env: Any) -> None:
        path = env.__dict__.get(_PATH)
        entered = notes_of(env).by_path.get(path) if path is not None and env.__dict__.get(_RESUME) else None
        if not isinstance(entered, Entered):
            env.__dict__.pop(_RESUME, None)
            run_program(program, env)
            return
        env.states.reset(input_value=entered.input)
        _restore(env.variable_store, entered.variables)
        resumed = copy.copy(program)  # the same program, starting at the state the run entered last
        resumed.start_at = type(program.start_at)(entered.state)
        run_program(resumed, env)

    def attempt(worker: Any) -> None:
        worker._get_evaluation_entrypoint().eval(worker.env)
        worker._execution_communication.terminated()

    def redrive(execution: Any, token: str | None) -> datetime.datetime:
        previous = execution.exec_worker
        count, now = getattr(execution, "redrive_count", 0) + 1, datetime.datetime.now(datetime.UTC)
        notes = notes_of(previous.env)
        notes.rerun_all, notes.resumed = execution.error == "States.DataLimitExceeded", set()
        worker = execution._get_start_execution_worker()
        worker.redriven = (count, now)
        env = worker.env = worker._get_evaluation_environment()
        env.event_manager, previous.env.event_manager = previous.env.event_manager, EventManager()
        env.event_history_context = EventHistoryContext(previous_event_id=env.event_manager._history_event_list[-1]["id"])
        env.event_manager.add_event(
            context=env.event_history_context,
            event_type=HistoryEventType.ExecutionRedriven,
            event_details={"executionRedrivenEventDetails": {"redriveCount": count}},
        )
        env.__dict__[_RESUME] = True
        execution.exec_worker, execution.redrive_count, execution.redrive_date = worker, count, now
        execution.stop_date = execution.error = execution.cause = execution.output = None
        execution.exec_status = ExecutionStatus.RUNNING
        if token:  # its redrive's date, which is also when it was first used
            tokens = execution.__dict__.setdefault("redrive_tokens", collections.OrderedDict())
            tokens[token] = now
            while len(tokens) > TOKENS_KEPT:
                tokens.popitem(last=False)
        notify = getattr(worker._execution_communication, "redriven", None)  # testing.events: a RUNNING event
        if notify is not None:
            notify()
        thread = threading.Thread(target=attempt, args=(worker,), daemon=True)
        TMP_THREADS.append(thread)
        thread.start()
        return now

    def redrive_execution(response: Any) -> Any:
        backend, arn = response.stepfunction_backend, response._get_param("executionArn")
        token = response._get_param("clientToken")
        backend.describe_execution(arn)  # ExecutionDoesNotExist, InvalidArn
        execution = next(e for machine in backend.state_machines for e in machine.executions if e.execution_arn == arn)
        with _LOCK:
            redriven = execution.__dict__.get("redrive_tokens", {}).get(token)
            if redriven is not None and datetime.datetime.now(datetime.UTC) - redriven <= TOKEN_LIFETIME:
                return ActionResult({"redriveDate": redriven})  # the same answer, no second redrive
            if _express(execution):
                raise ExecutionNotRedrivable(EXPRESS_REFUSED)
            reason = not_redrivable(execution)
            if reason:
                raise ExecutionNotRedrivable(reason)
            return ActionResult({"redriveDate": redrive(execution, token)})

    patch(StepFunctionResponse, "redrive_execution", redrive_execution)
    patch(ExecutionWorker, "_get_evaluation_environment", evaluation_environment)
    patch(CommonStateField, "eval", eval_state)
    patch(Program, "eval", eval_program)
    patch(sys.modules[__name__], "described", _described)
