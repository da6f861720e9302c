"""Gap: redriven, a Parallel or inline Map state would run every branch or iteration again, from its start.

AWS ("Restarting state machine executions with redrive", table "Redrive behavior of individual states",
https://docs.aws.amazon.com/step-functions/latest/dg/redrive-executions.html): a Parallel state "Reschedules and
redrives only those branches that failed or aborted", an Inline Map state "only those iterations that failed or
aborted"; after a ``States.DataLimitExceeded`` error either is "rerun, including the branches [iterations] that were
successful in the original execution attempt". RedriveExecution (API reference) says the same.

Here (with ``gaps.redrive_execution``, which notes where each run is) a branch or iteration that succeeds is
noted with its output; when a redrive re-enters its Parallel or Map, it keeps that output and is not run, and the
others run again: each from the state it entered last, with the input and variables it had there (one that never
started: from its start). That a rerun branch or iteration resumes at its unsuccessful state rather than at its
start is not stated in so many words: the guide's rule ("Step Functions preserves the results ... of the successful
steps, which are not rerun") and its console example (the redrive continues "from the step that failed in the
original execution attempt. In this example, it's the Do square number step and Wait 3 sec branch inside the
Parallel state") say so. A retry of the Parallel or Map within the redriven attempt reruns it whole, as a retry
does. A Distributed Map is not covered (it reruns whole).

Evidence: tests/emulator/gaps/test_redrive_execution.py.
"""

from __future__ import annotations

import copy
import datetime
from typing import TYPE_CHECKING, Any

from .redrive_execution import _PATH, _RESUME, Ended, notes_of

if TYPE_CHECKING:
    from ..patches import Patch

# On a frame moto opens to evaluate a state in (a Task's, Parallel's or Map's timeout frame, and the frames
# opened from it): the path and resumption of the run the state belongs to. On a Map state's frame, while its
# iterations run: where they run and whether they resume.
_STATE, _MAP = "_redrive_state", "_redrive_map"


def children(env: Any, state: str) -> tuple[tuple[Any, ...] | None, bool]:
    """Where the branches or iterations of the Parallel or Map state ``state`` evaluated in ``env`` run, and
    whether they resume. Only its first launch in a redriven attempt resumes (a retry reruns it whole); a
    launch that does not forgets what earlier runs there left."""
    path, resume = env.__dict__.get(_STATE) or (env.__dict__.get(_PATH), bool(env.__dict__.get(_RESUME)))
    if path is None:
        return None, False
    notes, path = notes_of(env), (*path, state)
    with notes.lock:
        resume = resume and not notes.rerun_all and path not in notes.resumed
        notes.resumed.add(path)
    if not resume:
        notes.forget_below(path)
    return path, resume


def install(patch: Patch) -> None:
    from moto.stepfunctions.parser.api import HistoryEventType
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
        FailureEvent,
        FailureEventException,
    )
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.inline_iteration_component import (
        InlineIterationComponent,
    )
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.iteration_worker import IterationWorker
    from moto.stepfunctions.parser.asl.component.state.exec.state_parallel import branches_decl
    from moto.stepfunctions.parser.asl.component.state.exec.state_parallel.branch_worker import BranchWorker
    from moto.stepfunctions.parser.asl.eval.environment import Environment
    from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails
    from moto.stepfunctions.parser.asl.eval.program_state import ProgramEnded

    iterate, run_job = InlineIterationComponent._eval_body, IterationWorker._eval_job
    open_frame = Environment.open_frame

    def state_frame(env: Any, *args: Any, **kwargs: Any) -> Any:
        frame = open_frame(env, *args, **kwargs)
        state = env.__dict__.get(_STATE) or (env.__dict__.get(_PATH), bool(env.__dict__.get(_RESUME)))
        if state[0] is not None:
            frame.__dict__[_STATE] = state
        return frame

    def eval_branches(declaration: Any, env: Any) -> None:
        """moto's ``BranchesDecl._eval_body``, but a branch that succeeded in the attempt a redrive resumes
        keeps its output, and one that did not resumes where it stopped."""
        input_value = env.stack.pop()
        path, resume = children(env, env.states.context_object.context_object_data["State"]["Name"])
        outputs: dict[int, Any] = {}
        frames = []
        for index in range(len(declaration.programs)):
            noted = notes_of(env).by_path.get((*path, index)) if path is not None and resume else None
            if isinstance(noted, Ended):
                outputs[index] = copy.deepcopy(noted.output)
                continue
            frame = env.open_inner_frame()
            frame.states.reset(input_value=input_value)
            if path is not None:
                frame.__dict__[_PATH] = (*path, index)
            if noted is not None:
                frame.__dict__[_RESUME] = True
            frames.append((index, frame))
        pool = branches_decl.BranchWorkerPool(workers_num=len(frames))
        workers = [(i, BranchWorker(branch_worker_comm=pool, program=declaration.programs[i], env=f)) for i, f in frames]
        for _, worker in workers:
            worker.start()
        if workers:
            pool.wait()
        failure = pool.get_exit_event_details()
        if failure is not None:
            for _, worker in workers:
                worker.stop(stop_date=datetime.datetime.now(), cause=None, error=None)
        for index, worker in workers:
            if path is not None and isinstance(worker.env.program_state(), ProgramEnded):
                notes_of(env).note((*path, index), Ended(worker.env.states.get_input()))
            outputs[index] = worker.env.states.get_input()
            env.close_frame(worker.env)
        if failure is not None:
            raise FailureEventException(
                failure_event=FailureEvent(
                    env=env,
                    error_name=branches_decl.CustomErrorName(error_name=failure.get("error")),
                    event_type=HistoryEventType.ExecutionFailed,
                    event_details=EventDetails(executionFailedEventDetails=failure),
                )
            )
        env.stack.append([outputs[index] for index in range(len(declaration.programs))])

    def eval_iterations(component: Any, env: Any) -> None:
        env.__dict__[_MAP] = children(env, env.stack[-1].state_name)  # read by each iteration (eval_job)
        try:
            iterate(component, env)
        finally:
            env.__dict__.pop(_MAP, None)

    def eval_job(worker: Any, env: Any, job: Any) -> None:
        path, resume = worker._env.__dict__.get(_MAP, (None, False))
        if path is None:
            run_job(worker, env, job)
            return
        path = (*path, job.job_index)
        noted = notes_of(env).by_path.get(path) if resume else None
        if isinstance(noted, Ended):
            job.job_output = copy.deepcopy(noted.output)
            return
        env.__dict__[_PATH] = path
        if noted is not None:
            env.__dict__[_RESUME] = True
        run_job(worker, env, job)
        if not isinstance(job.job_output, Exception) and isinstance(env.program_state(), ProgramEnded):
            notes_of(env).note(path, Ended(copy.deepcopy(job.job_output)))

    patch(Environment, "open_frame", state_frame)
    patch(branches_decl.BranchesDecl, "_eval_body", eval_branches)
    patch(InlineIterationComponent, "_eval_body", eval_iterations)
    patch(IterationWorker, "_eval_job", eval_job)
