"""testing.gaps.string_outputs: an execution whose output is a string is described with that output
as JSON text, quotes included; moto alone gives the bare text, which is no JSON."""

from __future__ import annotations

import json

import pytest

TEXT = {"StartAt": "Text", "States": {"Text": {"Type": "Pass", "Result": "just text", "End": True}}}


def test_a_string_output_is_described_as_json_text(emulator):
    assert emulator.run_definition(TEXT, {}).output == "just text"  # parsed from the JSON text


def test_without_the_workaround_moto_describes_the_bare_text(emulator):
    with emulator.without_workaround("string_outputs"), pytest.raises(json.JSONDecodeError, match="Expecting value"):
        emulator.run_definition(TEXT, {})
