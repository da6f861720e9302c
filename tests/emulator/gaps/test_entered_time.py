"""testing.gaps.entered_time: $$.State.EnteredTime is written as AWS writes it, with milliseconds and
"Z"; moto alone writes microseconds and "+00:00"."""

from __future__ import annotations

import re


def entered_time(emulator) -> str:
    definition = {
        "StartAt": "When",
        "States": {"When": {"Type": "Pass", "Parameters": {"t.$": "$$.State.EnteredTime"}, "End": True}},
    }
    return str(emulator.run_definition(definition, {}).output["t"])


def test_entered_time_has_milliseconds_and_ends_in_z(emulator):
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", entered_time(emulator))


def test_without_the_workaround_moto_writes_microseconds_and_an_offset(emulator):
    with emulator.without_workaround("entered_time"):
        assert entered_time(emulator).endswith("+00:00")
