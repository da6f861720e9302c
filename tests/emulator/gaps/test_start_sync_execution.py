"""testing.gaps.start_sync_execution: StartSyncExecution starts an Express execution and answers with its end;
moto alone has no such call."""

from __future__ import annotations

import json
import uuid

import botocore.exceptions
import pytest

from idempotent_constructs.testing import ACCOUNT

DEFINITION = {
    "QueryLanguage": "JSONata",
    "StartAt": "Check",
    "States": {
        "Check": {
            "Type": "Choice",
            "Choices": [{"Condition": "{% $states.input.fail %}", "Next": "Fail"}],
            "Default": "Done",
        },
        "Done": {"Type": "Pass", "Output": "{% {'doubled': $states.input.n * 2} %}", "End": True},
        "Fail": {"Type": "Fail", "Error": "Declined", "Cause": "no"},
    },
}


def machine(emulator, kind: str) -> str:
    name = f"sync-{uuid.uuid4().hex[:12]}"
    return emulator.client("stepfunctions").create_state_machine(
        name=name, definition=json.dumps(DEFINITION), roleArn=f"arn:aws:iam::{ACCOUNT}:role/{name}", type=kind
    )["stateMachineArn"]


def test_a_sync_execution_answers_with_the_output_of_a_success_and_the_error_of_a_failure(emulator):
    client, arn = emulator.client("stepfunctions"), machine(emulator, "EXPRESS")
    done = client.start_sync_execution(stateMachineArn=arn, input=json.dumps({"n": 21, "fail": False}))
    assert (done["status"], json.loads(done["output"])) == ("SUCCEEDED", {"doubled": 42})
    assert done["stateMachineArn"] == arn and json.loads(done["input"]) == {"n": 21, "fail": False}
    failed = client.start_sync_execution(stateMachineArn=arn, input=json.dumps({"n": 1, "fail": True}))
    assert (failed["status"], failed["error"], failed["cause"]) == ("FAILED", "Declined", "no")
    assert "output" not in failed


def test_a_standard_state_machine_is_refused(emulator):
    arn = machine(emulator, "STANDARD")
    with pytest.raises(botocore.exceptions.ClientError, match="StateMachineTypeNotSupported"):
        emulator.client("stepfunctions").start_sync_execution(stateMachineArn=arn, input="{}")


def test_without_the_workaround_moto_has_no_such_call(emulator):
    arn = machine(emulator, "EXPRESS")
    with emulator.without_workaround("start_sync_execution"), pytest.raises(NotImplementedError, match="start_sync_execution"):
        emulator.client("stepfunctions").start_sync_execution(stateMachineArn=arn, input="{}")
