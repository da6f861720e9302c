"""testing.gaps.entered_time: $$.State.EnteredTime and $$.Execution.StartTime are written as AWS writes
them, with milliseconds and "Z"; moto alone writes microseconds and "+00:00", and gives the start time as a
datetime, which fails the execution's description."""

from __future__ import annotations

import re

import pytest


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


def started(emulator):
    definition = {
        "StartAt": "When",
        "States": {"When": {"Type": "Pass", "Parameters": {"t.$": "$$.Execution.StartTime"}, "End": True}},
    }
    return emulator.run_definition(definition, {})


def test_the_start_time_has_milliseconds_and_ends_in_z(emulator):
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", str(started(emulator).output["t"]))


def test_without_the_workaround_moto_gives_the_start_time_as_a_datetime_that_no_description_can_carry(emulator):
    with emulator.without_workaround("entered_time"), pytest.raises(TypeError, match="datetime is not JSON serializable"):
        started(emulator)
