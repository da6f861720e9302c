"""testing.gaps.redrive_execution and testing.gaps.redrive_iterations: RedriveExecution continues a failed,
aborted or timed-out Standard execution from its unsuccessful state, under the same ARN and input, and a
redriven Parallel or inline Map reruns only its unsuccessful branches or iterations; moto alone has no such
call, and (with the call alone) a redriven Parallel runs every branch again."""

from __future__ import annotations

import datetime
import json
import time
import uuid

import botocore.exceptions
import pytest

from idempotent_constructs.testing import ACCOUNT, wait_for_execution

REDRIVEN = "{% $states.context.Execution.RedriveCount > 0 %}"


def count(table: str, key: str, then: dict) -> dict:
    """A DynamoDB task adding 1 to ``n`` of the item ``key`` (a JSONata template): a side effect to count."""
    return {
        "Type": "Task",
        "Resource": "arn:aws:states:::dynamodb:updateItem",
        "Arguments": {
            "TableName": table,
            "Key": {"id": {"S": key}},
            "UpdateExpression": "ADD n :one",
            "ExpressionAttributeValues": {":one": {"N": "1"}},
            "ReturnValues": "UPDATED_NEW",
        },
        "Output": "{% $merge([$states.input, {'n': $number($states.result.Attributes.n.N)}]) %}",
        **then,
    }


def fails_until_redriven(condition: str = REDRIVEN) -> dict:
    """A Choice with no Default: while ``condition`` is false it fails the execution (AWS names the error
    States.NoChoiceMatched, moto States.Runtime: not what these tests are about)."""
    return {"Type": "Choice", "Choices": [{"Condition": condition, "Next": "Done"}]}


def fails_once(condition: str = REDRIVEN) -> dict:
    """Fails at Check until ``condition`` holds, then succeeds at Done."""
    return {"StartAt": "Check", "States": {"Check": fails_until_redriven(condition), "Done": {"Type": "Pass", "End": True}}}


def machine(emulator, definition: dict, kind: str = "STANDARD") -> str:
    name = f"redrive-{uuid.uuid4().hex[:12]}"
    return emulator.client("stepfunctions").create_state_machine(
        name=name,
        definition=json.dumps({"QueryLanguage": "JSONata", **definition}),
        type=kind,
        roleArn=f"arn:aws:iam::{ACCOUNT}:role/{name}",
    )["stateMachineArn"]


def start(emulator, state_machine: str, payload: dict, name: str | None = None) -> str:
    client = emulator.client("stepfunctions")
    return client.start_execution(stateMachineArn=state_machine, input=json.dumps(payload), name=name or uuid.uuid4().hex)[
        "executionArn"
    ]


def finished(emulator, execution_arn: str):
    return wait_for_execution(emulator.client("stepfunctions"), execution_arn, history=emulator.history, timeout=60)


def redrive(emulator, execution_arn: str):
    """RedriveExecution, then the redriven attempt once it has ended."""
    emulator.client("stepfunctions").redrive_execution(executionArn=execution_arn)
    return finished(emulator, execution_arn)


def counted(emulator, table: str, key: str) -> int:
    item = emulator.client("dynamodb").get_item(TableName=table, Key={"id": {"S": key}}, ConsistentRead=True).get("Item")
    return int(item["n"]["N"]) if item else 0


def after_last_redrive(history: list[dict]) -> list[dict]:
    last = max(index for index, event in enumerate(history) if event["type"] == "ExecutionRedriven")
    return history[last:]


def entered(events: list[dict]) -> list[str]:
    return [event["stateEnteredEventDetails"]["name"] for event in events if "stateEnteredEventDetails" in event]


def refusal(emulator, execution_arn: str) -> str:
    with pytest.raises(botocore.exceptions.ClientError) as refused:
        emulator.client("stepfunctions").redrive_execution(executionArn=execution_arn)
    return f"{refused.value.response['Error']['Code']}: {refused.value.response['Error']['Message']}"


def described(emulator, execution_arn: str) -> dict:
    response = emulator.client("stepfunctions").describe_execution(executionArn=execution_arn)
    return {name: value for name, value in response.items() if name.startswith("redrive")}


def counts_then_fails_once(table: str) -> dict:
    """Counts, remembers the redrive count it ran in, then fails at Check unless redriven."""
    return {
        "StartAt": "Count",
        "States": {
            "Count": count(
                table,
                "{% $states.input.id %}",
                {
                    "Assign": {
                        "countedIn": "{% $states.context.Execution.RedriveCount %}",
                        "timeThen": "{% $exists($states.context.Execution.RedriveTime) %}",
                    },
                    "Next": "Check",
                },
            ),
            "Check": fails_until_redriven(),
            "Done": {
                "Type": "Pass",
                "Output": (
                    "{% {'input': $states.input, 'countedIn': $countedIn, 'timeThen': $timeThen, "
                    "'redriveCount': $states.context.Execution.RedriveCount, "
                    "'redriveTime': $states.context.Execution.RedriveTime} %}"
                ),
                "End": True,
            },
        },
    }


def test_a_redriven_execution_resumes_at_its_failed_state_with_the_same_arn_and_input(emulator, scratch_table, unique):
    arn = start(emulator, machine(emulator, counts_then_fails_once(scratch_table)), {"id": unique})
    assert finished(emulator, arn).status == "FAILED"

    again = redrive(emulator, arn)

    assert (again.arn, again.status, again.input) == (arn, "SUCCEEDED", {"id": unique})
    assert again.output["input"] == {"id": unique, "n": 1}  # Check's input, as it entered it the first time
    assert counted(emulator, scratch_table, unique) == 1  # Count succeeded the first time: not rerun
    assert entered(after_last_redrive(again.history)) == ["Check", "Done"]
    assert again.error is None and again.cause is None


def test_an_aborted_execution_resumes_at_the_state_it_was_stopped_in(emulator):
    definition = {
        "StartAt": "Before",
        "States": {
            "Before": {"Type": "Pass", "Next": "Slow"},
            "Slow": {"Type": "Pass", "Output": "{% $states.context.Execution.RedriveCount %}", "End": True},
        },
    }
    state_machine = machine(emulator, definition)
    with emulator.hold("Slow", state_machine=state_machine) as gate:
        arn = start(emulator, state_machine, {})
        gate.arrived()
        emulator.client("stepfunctions").stop_execution(executionArn=arn)
    assert finished(emulator, arn).status == "ABORTED"
    again = redrive(emulator, arn)
    assert (again.status, again.output) == ("SUCCEEDED", 1)
    assert entered(after_last_redrive(again.history)) == ["Slow"]


def test_a_timed_out_execution_resumes_at_its_state_and_its_timeout_starts_again(emulator):
    definition = {
        "TimeoutSeconds": 2,
        "StartAt": "Before",
        "States": {
            "Before": {"Type": "Pass", "Next": "Wait"},
            # 3 s in the first attempt: past the state machine's timeout; none once redriven.
            "Wait": {"Type": "Wait", "Seconds": "{% $states.context.Execution.RedriveCount > 0 ? 0 : 3 %}", "End": True},
        },
    }
    arn = start(emulator, machine(emulator, definition), {})
    assert finished(emulator, arn).status == "TIMED_OUT"
    again = redrive(emulator, arn)
    assert again.status == "SUCCEEDED"
    assert entered(after_last_redrive(again.history)) == ["Wait"]


def test_the_context_object_counts_redrives_from_zero_and_gives_the_redrive_time_once_redriven(emulator, scratch_table, unique):
    arn = start(emulator, machine(emulator, counts_then_fails_once(scratch_table)), {"id": unique})
    finished(emulator, arn)
    again = redrive(emulator, arn)
    assert (again.output["countedIn"], again.output["timeThen"]) == (0, False)  # AWS: 0 before any redrive
    assert again.output["redriveCount"] == 1
    redriven = emulator.client("stepfunctions").describe_execution(executionArn=arn)["redriveDate"]
    assert again.output["redriveTime"] == redriven.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def test_variables_are_those_the_failed_state_had_on_entry(emulator, scratch_table, unique):
    # countedIn was assigned by Count in the first attempt; the redriven one starts at Check.
    arn = start(emulator, machine(emulator, counts_then_fails_once(scratch_table)), {"id": unique})
    finished(emulator, arn)
    assert redrive(emulator, arn).output["countedIn"] == 0


def test_the_history_gains_an_execution_redriven_event_and_its_event_ids_go_on(emulator, scratch_table, unique):
    arn = start(emulator, machine(emulator, counts_then_fails_once(scratch_table)), {"id": unique})
    failed_events = len(finished(emulator, arn).history)
    history = redrive(emulator, arn).history

    assert [event["id"] for event in history] == list(range(1, len(history) + 1))
    redriven = history[failed_events]
    assert (history[failed_events - 1]["type"], redriven["type"]) == ("ExecutionFailed", "ExecutionRedriven")
    assert redriven["executionRedrivenEventDetails"] == {"redriveCount": 1}
    assert history[failed_events + 1]["previousEventId"] == redriven["id"]
    assert [event["type"] for event in history].count("ExecutionStarted") == 1


def test_an_execution_redriven_twice_counts_two(emulator):
    definition = {
        "StartAt": "Check",
        "States": {
            "Check": fails_until_redriven("{% $states.context.Execution.RedriveCount >= 2 %}"),
            "Done": {"Type": "Pass", "Output": "{% $states.context.Execution.RedriveCount %}", "End": True},
        },
    }
    arn = start(emulator, machine(emulator, definition), {})
    finished(emulator, arn)
    assert redrive(emulator, arn).status == "FAILED"
    last = redrive(emulator, arn)
    assert (last.status, last.output) == ("SUCCEEDED", 2)
    redrives = [event["executionRedrivenEventDetails"] for event in last.history if event["type"] == "ExecutionRedriven"]
    assert redrives == [{"redriveCount": 1}, {"redriveCount": 2}]
    assert described(emulator, arn)["redriveCount"] == 2


def test_describe_execution_tells_the_redrive_count_date_and_status(emulator, scratch_table, unique):
    arn = start(emulator, machine(emulator, counts_then_fails_once(scratch_table)), {"id": unique})
    finished(emulator, arn)
    assert described(emulator, arn) == {"redriveCount": 0, "redriveStatus": "REDRIVABLE"}

    redriven = emulator.client("stepfunctions").redrive_execution(executionArn=arn)["redriveDate"]
    finished(emulator, arn)

    assert described(emulator, arn) == {
        "redriveCount": 1,
        "redriveDate": redriven,
        "redriveStatus": "NOT_REDRIVABLE",
        "redriveStatusReason": "Execution is SUCCEEDED and cannot be redriven",
    }


def test_the_aws_sdk_describe_execution_task_sees_the_redrive_fields(emulator):
    failing = start(emulator, machine(emulator, fails_once()), {})
    finished(emulator, failing)
    describe = {
        "StartAt": "Describe",
        "States": {
            "Describe": {
                "Type": "Task",
                "Resource": "arn:aws:states:::aws-sdk:sfn:describeExecution",
                "Arguments": {"ExecutionArn": "{% $states.input.arn %}", "IncludedData": "METADATA_ONLY"},
                "End": True,
            }
        },
    }
    seen = finished(emulator, start(emulator, machine(emulator, describe), {"arn": failing})).output
    assert (seen["Status"], seen["RedriveCount"], seen["RedriveStatus"]) == ("FAILED", 0, "REDRIVABLE")


def test_a_succeeded_execution_is_refused(emulator):
    arn = start(emulator, machine(emulator, {"StartAt": "Done", "States": {"Done": {"Type": "Pass", "End": True}}}), {})
    finished(emulator, arn)
    assert refusal(emulator, arn) == "ExecutionNotRedrivable: Execution is SUCCEEDED and cannot be redriven"


def test_a_running_execution_is_refused(emulator):
    state_machine = machine(emulator, {"StartAt": "Held", "States": {"Held": {"Type": "Pass", "End": True}}})
    with emulator.hold("Held", state_machine=state_machine) as gate:
        arn = start(emulator, state_machine, {})
        gate.arrived()
        assert refusal(emulator, arn) == "ExecutionNotRedrivable: Execution is RUNNING and cannot be redriven"
        assert described(emulator, arn) == {
            "redriveCount": 0,
            "redriveStatus": "NOT_REDRIVABLE",
            "redriveStatusReason": "Execution is RUNNING and cannot be redriven",
        }
    assert finished(emulator, arn).status == "SUCCEEDED"


def test_an_express_execution_is_refused(emulator):
    express = machine(emulator, {"StartAt": "Fail", "States": {"Fail": {"Type": "Fail", "Error": "Once"}}}, "EXPRESS")
    arn = start(emulator, express, {})
    assert finished(emulator, arn).status == "FAILED"
    refused = "ExecutionNotRedrivable: This API action is not supported by EXPRESS state machines."
    assert refusal(emulator, arn) == refused


def test_an_unknown_execution_is_refused(emulator):
    state_machine = machine(emulator, {"StartAt": "Done", "States": {"Done": {"Type": "Pass", "End": True}}})
    unknown = state_machine.replace(":stateMachine:", ":execution:") + ":never-started"
    assert refusal(emulator, unknown).startswith("ExecutionDoesNotExist: ")


def test_an_execution_that_ended_more_than_14_days_ago_is_refused(emulator):
    from moto.stepfunctions.responses import get_backend

    arn = start(emulator, machine(emulator, fails_once()), {})
    finished(emulator, arn)
    backend = get_backend(ACCOUNT, emulator.region)
    execution = next(e for machine_ in backend.state_machines for e in machine_.executions if e.execution_arn == arn)
    execution.stop_date -= datetime.timedelta(days=14, minutes=1)  # the harness judges by the wall clock
    assert refusal(emulator, arn) == "ExecutionNotRedrivable: Execution redrivable period exceeded"
    assert described(emulator, arn)["redriveStatusReason"] == "Execution redrivable period exceeded"


def test_a_client_token_used_again_gets_the_same_answer_without_another_redrive(emulator):
    arn = start(emulator, machine(emulator, fails_once("{% false %}")), {})
    finished(emulator, arn)
    client = emulator.client("stepfunctions")
    first = client.redrive_execution(executionArn=arn, clientToken="once")["redriveDate"]
    finished(emulator, arn)
    assert client.redrive_execution(executionArn=arn, clientToken="once")["redriveDate"] == first
    assert described(emulator, arn)["redriveCount"] == 1


def test_the_redriven_state_retries_from_zero(emulator):
    missing = f"missing-{uuid.uuid4().hex[:8]}"
    definition = {
        "StartAt": "Read",
        "States": {
            "Read": {
                "Type": "Task",
                "Resource": "arn:aws:states:::dynamodb:getItem",
                "Arguments": {"TableName": missing, "Key": {"id": {"S": "x"}}},
                "Retry": [{"ErrorEquals": ["States.ALL"], "IntervalSeconds": 1, "MaxAttempts": 1}],
                "End": True,
            }
        },
    }
    arn = start(emulator, machine(emulator, definition), {})
    attempts = [event["type"] for event in finished(emulator, arn).history].count("TaskFailed")
    again = redrive(emulator, arn)
    assert attempts == 2  # the first try and its one retry
    assert [event["type"] for event in after_last_redrive(again.history)].count("TaskFailed") == 2


def test_a_redrive_sends_a_running_status_change_event_and_the_end_event_carries_the_count(
    emulator, echo_function, monkeypatch, unique
):
    events, rule, function = emulator.client("events"), f"redrive-{unique}", echo_function.split(":")[-1]
    events.put_rule(Name=rule, EventPattern=json.dumps({"source": ["aws.states"], "detail": {"name": [unique]}}))
    events.put_targets(Rule=rule, Targets=[{"Id": "echo", "Arn": echo_function}])
    heard, invoke = [], emulator.lambdas.invoke

    def recording(model, event):
        if model.function_name == function:
            heard.append(event["detail"])
        return invoke(model, event)

    monkeypatch.setattr(emulator.lambdas, "invoke", recording)
    try:
        arn = start(emulator, machine(emulator, fails_once()), {}, unique)
        finished(emulator, arn)
        emulator.settle()
        client = emulator.client("stepfunctions")
        redriven = client.redrive_execution(executionArn=arn)["redriveDate"]
        finished(emulator, arn)
        emulator.settle()
    finally:
        events.remove_targets(Rule=rule, Ids=["echo"])
        events.delete_rule(Name=rule)
    assert [(detail["status"], detail["redriveCount"]) for detail in heard] == [
        ("FAILED", 0),
        ("RUNNING", 1),
        ("SUCCEEDED", 1),
    ]
    running = heard[1]
    assert running["redriveDate"] == int(redriven.timestamp() * 1000) and running["stopDate"] is None
    assert (running["redriveStatus"], running["redriveStatusReason"]) == (
        "NOT_REDRIVABLE",
        "Execution is RUNNING and cannot be redriven",
    )


def test_a_deployment_redrives_an_execution_and_waits_for_the_redriven_attempt(emulator, gaps_deployed):
    arn = start(emulator, machine(emulator, fails_once()), {})
    failed = finished(emulator, arn)
    again = gaps_deployed.redrive(failed)
    assert (again.arn, again.status) == (arn, "SUCCEEDED")


def test_without_the_workaround_moto_has_no_redrive_execution(emulator):
    arn = start(emulator, machine(emulator, fails_once()), {})
    finished(emulator, arn)
    with emulator.without_workaround("redrive_execution"), pytest.raises(NotImplementedError, match="redrive_execution"):
        emulator.client("stepfunctions").redrive_execution(executionArn=arn)


def parallel(table: str, unique: str) -> dict:
    """Branch A counts and succeeds; branch B counts, then fails at Check unless redriven."""
    return {
        "StartAt": "Both",
        "States": {
            "Both": {
                "Type": "Parallel",
                "Branches": [
                    {"StartAt": "CountA", "States": {"CountA": count(table, f"{unique}-a", {"End": True})}},
                    {
                        "StartAt": "CountB",
                        "States": {
                            "CountB": count(table, f"{unique}-b", {"Next": "Check"}),
                            "Check": fails_until_redriven(),
                            "Done": {"Type": "Pass", "End": True},
                        },
                    },
                ],
                "End": True,
            }
        },
    }


def run_parallel_to_its_failure(emulator, table: str, unique: str) -> str:
    """Branch B waits at Check until branch A has succeeded, so that A is not aborted when B fails."""
    state_machine = machine(emulator, parallel(table, unique))
    with emulator.hold("Check", state_machine=state_machine) as gate:
        arn = start(emulator, state_machine, {"id": unique})
        gate.arrived()
        deadline = time.monotonic() + 30
        while counted(emulator, table, f"{unique}-a") == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
    assert finished(emulator, arn).status == "FAILED"
    return arn


def test_a_redriven_parallel_reruns_only_its_failed_branch_from_its_failed_state(emulator, scratch_table, unique):
    arn = run_parallel_to_its_failure(emulator, scratch_table, unique)
    again = redrive(emulator, arn)
    assert again.status == "SUCCEEDED"
    assert again.output == [{"id": unique, "n": 1}, {"id": unique, "n": 1}]  # A's output kept from the first attempt
    assert (counted(emulator, scratch_table, f"{unique}-a"), counted(emulator, scratch_table, f"{unique}-b")) == (1, 1)
    assert entered(after_last_redrive(again.history)) == ["Both", "Check", "Done"]


def test_without_the_iterations_workaround_a_redriven_parallel_runs_every_branch_again(emulator, scratch_table, unique):
    arn = run_parallel_to_its_failure(emulator, scratch_table, unique)
    with emulator.without_workaround("redrive_iterations"):
        again = redrive(emulator, arn)
    assert again.status == "SUCCEEDED"
    assert (counted(emulator, scratch_table, f"{unique}-a"), counted(emulator, scratch_table, f"{unique}-b")) == (2, 2)


def test_a_redriven_inline_map_reruns_only_its_unsuccessful_iterations(emulator, scratch_table, unique):
    definition = {
        "StartAt": "Each",
        "States": {
            "Each": {
                "Type": "Map",
                "Items": "{% $states.input.items %}",
                "MaxConcurrency": 1,  # one at a time: b fails, and c has not started
                "ItemProcessor": {
                    "ProcessorConfig": {"Mode": "INLINE"},
                    "StartAt": "Count",
                    "States": {
                        "Count": count(scratch_table, f"{{% '{unique}-' & $states.input.id %}}", {"Next": "Check"}),
                        "Check": fails_until_redriven(
                            "{% $not($states.input.fail) or $states.context.Execution.RedriveCount > 0 %}"
                        ),
                        "Done": {"Type": "Pass", "Output": "{% $states.input.id %}", "End": True},
                    },
                },
                "End": True,
            }
        },
    }
    items = [{"id": "a", "fail": False}, {"id": "b", "fail": True}, {"id": "c", "fail": False}]
    arn = start(emulator, machine(emulator, definition), {"items": items})
    assert finished(emulator, arn).status == "FAILED"
    assert counted(emulator, scratch_table, f"{unique}-c") == 0

    again = redrive(emulator, arn)

    assert (again.status, again.output) == ("SUCCEEDED", ["a", "b", "c"])
    assert [counted(emulator, scratch_table, f"{unique}-{item}") for item in "abc"] == [1, 1, 1]
    tail = after_last_redrive(again.history)
    started = [event["mapIterationStartedEventDetails"]["index"] for event in tail if event["type"] == "MapIterationStarted"]
    assert started == [1, 2]
    assert entered(tail) == ["Each", "Check", "Done", "Count", "Check", "Done"]  # b resumes at Check; c from its start
