"""testing.gaps.build_errors: a failure while building a DynamoDB task's arguments keeps its own name;
moto alone names it after DynamoDB."""

from __future__ import annotations

from .test_payload_limit import task_with_arguments


def run_with_an_argument_that_selects_nothing(emulator):
    definition = task_with_arguments(10)
    definition["States"]["Put"]["Arguments"]["Item"]["id"] = {"S": "{% $states.input.missing %}"}
    return emulator.run_definition(definition, {})


def test_a_failure_while_building_a_dynamodb_tasks_arguments_keeps_its_own_name(emulator):
    assert run_with_an_argument_that_selects_nothing(emulator).output["Error"] == "States.QueryEvaluationError"


def test_without_the_workaround_moto_names_it_after_dynamodb(emulator):
    with emulator.without_workaround("build_errors"):
        execution = run_with_an_argument_that_selects_nothing(emulator)
    assert execution.output["Error"].startswith("DynamoDB.")
