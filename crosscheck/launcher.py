"""Starts ministack. Runs in ministack's own virtual environment (crosscheck/requirements.txt), so it
imports nothing of this repository.

Before starting, it corrects the divergences from AWS that would otherwise stop most scenarios, each
in one small function named after its entry in crosscheck/divergences.py, which says what ministack
does, what AWS does and the evidence. ``CROSSCHECK_AS_RELEASED=1`` starts ministack as released,
without them (``./dev crosscheck --as-released``), to show what each one stops.
"""

import inspect
import json
import os
import threading
import time
from typing import Any

import ministack.services.dynamodb as dynamodb
import ministack.services.eventbridge as eventbridge
import ministack.services.lambda_svc as lambda_svc
import ministack.services.stepfunctions as stepfunctions
from ministack.app import main


def catcher_assign_in_the_states_language() -> None:
    """D1: a Catch of a JSONata state inherits that state's query language (ministack takes the
    state machine's, so in a JSONPath state machine it skips the catcher's JSONata ``Assign``)."""
    apply_catcher = stepfunctions._apply_catcher

    def in_the_states_language(catcher: Any, raw_input: Any, ctx: Any, query_language: str, error_output: Any) -> Any:
        if "QueryLanguage" not in catcher:
            catcher = {**catcher, "QueryLanguage": query_language}
        return apply_catcher(catcher, raw_input, ctx, query_language, error_output)

    stepfunctions._apply_catcher = in_the_states_language


def parallel_output_and_assign_in_jsonata() -> None:
    """D4: a JSONata Parallel state's Output and Assign are evaluated with ``$states.result``, the
    array of its branches' outputs (ministack applies only the JSONPath fields to a Parallel)."""
    run_branches = stepfunctions._run_parallel_branches
    jsonata_fields = ("Arguments", "Output", "Assign", "QueryLanguage")

    def in_jsonata(state_def: Any, raw_input: Any, execution: Any, ctx: Any) -> Any:
        if stepfunctions._state_query_language(state_def, ctx) != "JSONata":
            return run_branches(state_def, raw_input, execution, ctx)
        branch_input = stepfunctions._apply_jsonata_arguments(state_def, raw_input, ctx)
        plain = {name: value for name, value in state_def.items() if name not in jsonata_fields}
        results, next_state = run_branches(plain, branch_input, execution, ctx)
        output = stepfunctions._apply_jsonata_output(state_def, raw_input, ctx, result=results, default=results)
        stepfunctions._apply_state_assign(state_def, raw_input, ctx, result=results)
        return output, next_state

    stepfunctions._run_parallel_branches = in_jsonata


def task_scheduled_events_as_aws_writes_them() -> None:
    """D5: a TaskScheduled history event names the integration's service and action and carries the
    task's parameters and region, all four required (ministack writes resourceType "states" and the
    whole resource ARN, and no parameters). The parameters are the task's built input, read from the
    scheduling frame, where ministack has just computed them (``effective``)."""
    add_event = stepfunctions._add_event

    def with_task_details(execution: Any, event_type: str, details: Any = None) -> Any:
        scheduled = (details or {}).get("taskScheduledEventDetails")
        if event_type == "TaskScheduled" and scheduled and ":::" in scheduled["resource"]:
            # arn:aws:states:::dynamodb:updateItem -> ("dynamodb", "updateItem");
            # arn:aws:states:::aws-sdk:sfn:describeExecution -> ("aws-sdk:sfn", "describeExecution")
            service, _, action = scheduled["resource"].split(":::", 1)[1].rpartition(":")
            caller = inspect.currentframe().f_back  # type: ignore[union-attr]
            parameters = caller.f_locals.get("effective") if caller else None
            scheduled.update(
                resourceType=service,
                resource=action,
                region=os.environ["MINISTACK_REGION"],
                parameters=json.dumps(parameters, separators=(",", ":")),
            )
        return add_event(execution, event_type, details)

    stepfunctions._add_event = with_task_details


def lambda_targets_invoked_asynchronously() -> None:
    """D6: EventBridge invokes a Lambda target asynchronously, so the function's asynchronous
    invocation settings apply: retries of function errors and the on-failure destination (ministack
    runs the function once, on a thread of its own, and drops a failure)."""
    dispatch = eventbridge._dispatch_to_lambda

    def asynchronously(arn: str, payload: Any) -> Any:
        func, config, _name = lambda_svc._get_func_record_for_ref(arn)
        if not func or not config:
            return dispatch(arn, payload)  # ministack logs the missing function
        try:
            event = json.loads(payload)
        except (json.JSONDecodeError, TypeError):
            event = {"body": payload}
        lambda_svc.invoke_async_with_retry(lambda_svc._execution_record_for_config(func, config), event)

    eventbridge._dispatch_to_lambda = asynchronously


def item_writes_atomic() -> None:
    """D7: a conditional write of an item is atomic: the condition is checked against the item as the
    write finds it (ministack reads the item, checks, then writes, and Step Functions tasks call these
    handlers from their executions' threads, so two writes of one item can interleave). Every item
    read and write is serialized, transactions and batches too."""
    lock = threading.RLock()  # reentrant: a transaction or batch may write through the single-item handlers
    for name in (
        "_get_item",
        "_put_item",
        "_update_item",
        "_delete_item",
        "_batch_write_item",
        "_transact_write_items",
        "_execute_statement",
        "_batch_execute_statement",
        "_execute_transaction",
    ):
        handler = getattr(dynamodb, name)

        def serialized(data: Any, handler: Any = handler) -> Any:
            with lock:
                return handler(data)

        setattr(dynamodb, name, serialized)


def stale_reads_on_demand() -> None:
    """A fault, not a correction (always installed): DescribeExecution is eventually consistent on AWS,
    so right after an execution ends it may still read RUNNING. For an execution named
    ``stale-reads-<k>-...``, the first ``k`` reads after it ended answer RUNNING, with no stop date."""
    describe = stepfunctions._describe_execution
    served: dict[str, int] = {}

    def eventually_consistent(data: Any) -> Any:
        answer = describe(data)
        arn = data.get("executionArn", "")
        name = arn.rsplit(":", 1)[-1]
        if name.startswith("stale-reads-"):
            stale = int(name.split("-")[2])
            status, headers, body = answer
            described = json.loads(body)
            if described.get("status") not in (None, "RUNNING") and served.get(arn, 0) < stale:
                served[arn] = served.get(arn, 0) + 1
                described.update(status="RUNNING", stopDate=None)
                for field in ("error", "cause", "output"):
                    described.pop(field, None)
                answer = (status, headers, json.dumps(described).encode())
        return answer

    stepfunctions._describe_execution = eventually_consistent


def holds_on_demand() -> None:
    """A control, not a correction (always installed): the moto harness's holds (``LocalEmulator.hold``), by
    file. A Task state of an execution waits before it runs while the file ``{execution name}@{state name}``
    exists in the directory ``CROSSCHECK_HOLDS`` names, having written ``{that file}.arrived``, so that a
    scenario orders executions as a trace of the protocol explorer says (at most 5 minutes)."""
    directory = os.environ.get("CROSSCHECK_HOLDS")
    if not directory:
        return
    execute_task = stepfunctions._execute_task

    def held(state_def: Any, raw_input: Any, execution: Any, ctx: Any) -> Any:
        gate = os.path.join(directory, f"{execution['name']}@{ctx['State']['Name']}")
        if os.path.exists(gate):
            with open(gate + ".arrived", "w"):
                pass
            deadline = time.monotonic() + 300
            while os.path.exists(gate) and time.monotonic() < deadline:
                time.sleep(0.05)
        return execute_task(state_def, raw_input, execution, ctx)

    stepfunctions._execute_task = held


if __name__ == "__main__":
    stale_reads_on_demand()
    holds_on_demand()
    if os.environ.get("CROSSCHECK_AS_RELEASED") != "1":
        catcher_assign_in_the_states_language()
        parallel_output_and_assign_in_jsonata()
        task_scheduled_events_as_aws_writes_them()
        lambda_targets_invoked_asynchronously()
        item_writes_atomic()
    main()
