"""testing.gaps.uncatchable_errors: States.ALL does not catch States.DataLimitExceeded, but a catcher
naming it does; moto alone catches it with States.ALL."""

from __future__ import annotations


def parallel_with_too_large_an_output(emulator, catch: str):
    definition = {
        "QueryLanguage": "JSONata",
        "StartAt": "Large",
        "States": {
            "Large": {
                "Type": "Parallel",
                "Branches": [
                    {"StartAt": "Pad", "States": {"Pad": {"Type": "Pass", "Output": "{% $pad('', 300000, 'x') %}", "End": True}}}
                ],
                "Catch": [{"ErrorEquals": [catch], "Next": "Caught", "Output": "{% $states.errorOutput %}"}],
                "End": True,
            },
            "Caught": {"Type": "Pass", "End": True},
        },
    }
    return emulator.run_definition(definition, {})


def test_states_all_does_not_catch_data_limit_exceeded(emulator):
    execution = parallel_with_too_large_an_output(emulator, "States.ALL")
    assert (execution.status, execution.error) == ("FAILED", "States.DataLimitExceeded")


def test_a_catcher_that_names_data_limit_exceeded_catches_it(emulator):
    execution = parallel_with_too_large_an_output(emulator, "States.DataLimitExceeded")
    assert (execution.status, execution.output["Error"]) == ("SUCCEEDED", "States.DataLimitExceeded")


def test_without_the_workaround_moto_catches_it_with_states_all(emulator):
    with emulator.without_workaround("uncatchable_errors"):
        execution = parallel_with_too_large_an_output(emulator, "States.ALL")
    assert (execution.status, execution.output["Error"]) == ("SUCCEEDED", "States.DataLimitExceeded")
