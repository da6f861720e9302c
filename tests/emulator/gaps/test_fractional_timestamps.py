"""testing.gaps.fractional_timestamps: a Choice rule compares timestamps with fractional seconds;
moto alone does not read them as timestamps."""

from __future__ import annotations


def choose(emulator):
    definition = {
        "StartAt": "Compare",
        "States": {
            "Compare": {
                "Type": "Choice",
                "Choices": [{"Variable": "$.at", "TimestampLessThan": "2026-11-22T02:27:46Z", "Next": "Earlier"}],
                "Default": "NotEarlier",
            },
            "Earlier": {"Type": "Pass", "Result": "earlier", "End": True},
            "NotEarlier": {"Type": "Pass", "Result": "not earlier", "End": True},
        },
    }
    return emulator.run_definition(definition, {"at": "2026-11-22T02:27:45.957Z"})


def test_a_timestamp_with_milliseconds_compares_as_a_timestamp(emulator):
    assert choose(emulator).output == "earlier"


def test_without_the_workaround_moto_does_not_read_it_as_a_timestamp(emulator):
    with emulator.without_workaround("fractional_timestamps"):
        execution = choose(emulator)
    assert execution.output == "not earlier"
