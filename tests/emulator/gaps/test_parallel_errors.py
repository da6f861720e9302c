"""testing.gaps.parallel_errors: a branch's or an iteration's States.* error leaves its Parallel or Map
state under its own name, where a Catch can catch it; moto alone turns it into States.Runtime."""

from __future__ import annotations

# A Pass state whose JSONata selects nothing: States.QueryEvaluationError (testing.gaps.jsonata).
SELECTS_NOTHING = {
    "StartAt": "Select",
    "States": {"Select": {"Type": "Pass", "Output": "{% $states.input.missing %}", "End": True}},
}


def caught(emulator, state: dict):
    """Runs ``state`` (a Parallel or a Map holding SELECTS_NOTHING), its States.QueryEvaluationError caught."""
    catch = {"ErrorEquals": ["States.QueryEvaluationError"], "Next": "Caught", "Output": "{% $states.errorOutput %}"}
    definition = {
        "QueryLanguage": "JSONata",
        "StartAt": "Guarded",
        "States": {"Guarded": {**state, "Catch": [catch], "End": True}, "Caught": {"Type": "Pass", "End": True}},
    }
    return emulator.run_definition(definition, {"present": 1})


def parallel_whose_branch_selects_nothing(emulator):
    return caught(emulator, {"Type": "Parallel", "Branches": [SELECTS_NOTHING]})


def test_a_branchs_states_error_is_caught_on_the_parallel_state_by_its_name(emulator):
    # The error: a JSONata expression that selects nothing (testing.gaps.jsonata).
    execution = parallel_whose_branch_selects_nothing(emulator)
    assert execution.status == "SUCCEEDED"
    assert execution.output["Error"] == "States.QueryEvaluationError"
    assert "returned nothing (undefined)" in execution.output["Cause"]


def test_without_the_workaround_moto_fails_the_execution_with_states_runtime(emulator):
    with emulator.without_workaround("parallel_errors"):
        execution = parallel_whose_branch_selects_nothing(emulator)
    assert (execution.status, execution.error) == ("FAILED", "States.Runtime")


def map_whose_iteration_selects_nothing(emulator):
    processor = {"ProcessorConfig": {"Mode": "INLINE"}, **SELECTS_NOTHING}
    return caught(emulator, {"Type": "Map", "Items": "{% [1, 2] %}", "ItemProcessor": processor})


def test_an_iterations_states_error_is_caught_on_the_map_state_by_its_name(emulator):
    execution = map_whose_iteration_selects_nothing(emulator)
    assert execution.status == "SUCCEEDED"
    assert execution.output["Error"] == "States.QueryEvaluationError"
    assert "returned nothing (undefined)" in execution.output["Cause"]


def test_without_the_workaround_moto_fails_a_map_with_states_runtime(emulator):
    with emulator.without_workaround("parallel_errors"):
        execution = map_whose_iteration_selects_nothing(emulator)
    assert (execution.status, execution.error) == ("FAILED", "States.Runtime")
