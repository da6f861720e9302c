"""testing.gaps.payload_limit: a task whose built parameters exceed 256 KiB fails, uncatchably, with
States.DataLimitExceeded before it calls anything; moto alone calls the service."""

from __future__ import annotations

import json


def task_with_arguments(text_bytes: int) -> dict:
    """A DynamoDB PutItem whose built Arguments carry ``text_bytes`` bytes of text, caught by States.ALL."""
    return {
        "QueryLanguage": "JSONata",
        "StartAt": "Put",
        "States": {
            "Put": {
                "Type": "Task",
                "Resource": "arn:aws:states:::dynamodb:putItem",
                "Arguments": {
                    "TableName": "no-such-table",
                    "Item": {"id": {"S": "x"}, "data": {"S": "{% $pad('', " + str(text_bytes) + ", 'x') %}"}},
                },
                "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Caught", "Output": "{% $states.errorOutput %}"}],
                "End": True,
            },
            "Caught": {"Type": "Pass", "End": True},
        },
    }


def test_a_task_whose_built_arguments_exceed_256_kib_fails_uncatchably_with_data_limit_exceeded(emulator):
    # The state's own input is tiny: only the built arguments are over the limit.
    execution = emulator.run_definition(task_with_arguments(262_144), {})
    assert (execution.status, execution.error) == ("FAILED", "States.DataLimitExceeded")
    assert "Put" in execution.cause


def test_a_task_whose_built_arguments_fit_is_called(emulator):
    # Under the limit the call is made: the missing table fails it, and States.ALL catches that.
    execution = emulator.run_definition(task_with_arguments(200_000), {})
    assert execution.status == "SUCCEEDED"
    assert execution.output["Error"].startswith("DynamoDB.")


def test_without_the_workaround_moto_calls_the_service_with_arguments_over_the_limit(emulator):
    with emulator.without_workaround("payload_limit"):
        execution = emulator.run_definition(task_with_arguments(262_144), {})
    assert execution.status == "SUCCEEDED"
    assert execution.output["Error"].startswith("DynamoDB.")


def pass_through() -> dict:
    """A Pass state whose output is its input."""
    return {"QueryLanguage": "JSONata", "StartAt": "Keep", "States": {"Keep": {"Type": "Pass", "End": True}}}


def small_fields(count: int) -> dict:
    return {f"f{n}": n for n in range(count)}


def test_a_state_output_is_measured_as_compact_json_so_250_kib_of_small_fields_pass(emulator):
    payload = small_fields(18_500)  # about 250 KiB compact, over 256 KiB with json.dumps's spaces
    compact = len(json.dumps(payload, separators=(",", ":")))
    assert compact < 262_144 < len(json.dumps(payload))
    assert emulator.run_definition(pass_through(), payload).status == "SUCCEEDED"
    with emulator.without_workaround("payload_limit"):
        failed = emulator.run_definition(pass_through(), payload)
    assert (failed.status, failed.error) == ("FAILED", "States.DataLimitExceeded")
