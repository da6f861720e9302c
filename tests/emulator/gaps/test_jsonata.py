"""testing.gaps.jsonata: the emulator runs JSONata states as AWS does (idempotent_constructs._jsonata.engine);
moto alone evaluates none.

Each test runs a few states alone on the session's emulator (``LocalEmulator.run_definition``)."""

from __future__ import annotations

import hashlib
import json
import re

import pytest

QUERY_EVALUATION_ERROR = "States.QueryEvaluationError"


def run_expression(emulator, expression: str, payload=None):
    """One JSONata Pass state whose output is ``{"value": expression}``, run once: the execution."""
    definition = {
        "QueryLanguage": "JSONata",
        "StartAt": "Evaluate",
        "States": {"Evaluate": {"Type": "Pass", "Output": {"value": "{% " + expression + " %}"}, "End": True}},
    }
    return emulator.run_definition(definition, payload if payload is not None else {})


def jsonata_output(emulator, expression: str, payload=None):
    """The value of ``expression`` in one JSONata Pass state."""
    execution = run_expression(emulator, expression, payload)
    assert execution.status == "SUCCEEDED", (execution.error, execution.cause)
    return execution.output["value"]


def test_states_input_context_and_variables_assigned_by_an_earlier_state_are_bound(emulator):
    definition = {
        "QueryLanguage": "JSONata",
        "StartAt": "Remember",
        "States": {
            "Remember": {"Type": "Pass", "Assign": {"order": "{% $states.input.order %}"}, "Next": "Use"},
            "Use": {
                "Type": "Pass",
                "Output": "{% {'order': $order, 'execution': $states.context.Execution.Id} %}",
                "End": True,
            },
        },
    }
    execution = emulator.run_definition(definition, {"order": {"id": "o-1", "note": 'quote " and \\ kept'}})
    assert execution.output == {"order": {"id": "o-1", "note": 'quote " and \\ kept'}, "execution": execution.arn}


@pytest.mark.parametrize("algorithm", ["MD5", "SHA-1", "SHA-256", "SHA-384", "SHA-512"])
def test_hash_gives_the_lowercase_hex_digest_of_the_utf8_text(emulator, algorithm):
    text = "naïve – ☃ – 😀"
    expected = hashlib.new(algorithm.replace("-", "").lower(), text.encode("utf-8")).hexdigest()
    assert jsonata_output(emulator, f"$hash($states.input.text, '{algorithm}')", {"text": text}) == expected


def test_uuid_gives_a_fresh_version_4_uuid_each_call(emulator):
    first, second = jsonata_output(emulator, "[$uuid(), $uuid()]")
    pattern = r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"
    assert re.fullmatch(pattern, first) and re.fullmatch(pattern, second) and first != second


def test_parse_reads_a_json_text_and_fails_the_state_on_anything_else(emulator):
    assert jsonata_output(emulator, "$parse($states.input.text)", {"text": '{"a": [1, "b", null]}'}) == {"a": [1, "b", None]}
    assert run_expression(emulator, "$parse('{not json')").error == QUERY_EVALUATION_ERROR


def test_partition_range_and_a_seeded_random_behave_as_aws_documents(emulator):
    output = jsonata_output(
        emulator,
        "{'partition': $partition([1, 2, 3, 4, 5], 2), 'range': $range(0, 10, 2), 'down': $range(3, 1, -1),"
        " 'seeded': [$random(7), $random(7)], 'unseeded': $random()}",
    )
    assert output["partition"] == [[1, 2], [3, 4], [5]]
    assert output["range"] == [0, 2, 4, 6, 8, 10] and output["down"] == [3, 2, 1]
    assert output["seeded"][0] == output["seeded"][1] and 0 <= output["seeded"][0] < 1
    assert 0 <= output["unseeded"] < 1


def test_eval_is_not_available(emulator):
    assert run_expression(emulator, "$eval('1 + 1')").error == QUERY_EVALUATION_ERROR


def test_string_writes_numbers_as_measured_on_aws_and_keeps_non_ascii_text(emulator):
    # An integer of the input is a long, written in full; a fraction to 15 digits, in JavaScript's form.
    payload = {"9": 1.0, "10": 0.30000000000000004, "b": [1e21, 1.5e-7, -0.0, 123456789012345678], "a": "é\u0001"}
    assert jsonata_output(emulator, "$string($states.input)", payload) == (
        '{"9":1,"10":0.3,"b":[1e+21,1.5e-7,0,123456789012345678],"a":"é\\u0001"}'
    )
    assert jsonata_output(emulator, "'n=' & $states.input.n", {"n": 0.1 + 0.2}) == "n=0.3"


def test_a_whole_double_below_10_to_the_21_is_written_in_full_with_its_shortest_digits(emulator):
    # Measured on AWS with TestState (floci-io/floci issue #2669, pull request #2683).
    output = jsonata_output(emulator, "[$string(1e20), $string(999999999999999868928), $string($power(2, 63)), $string(1e21)]")
    assert output == ["100000000000000000000", "999999999999999900000", "9223372036854776000", "1e+21"]


def test_an_integer_of_the_input_is_kept_as_a_long_and_computed_with_as_a_double(emulator):
    output = jsonata_output(
        emulator,
        "[$string($states.input.n), $states.input.n + 0, $states.input.n = 9007199254740992]",
        {"n": 9007199254740993},
    )
    assert output == ["9007199254740993", 9007199254740992, True]


def test_a_division_by_zero_is_infinity_written_as_a_string(emulator):
    assert jsonata_output(emulator, "[1/0]") == ["Infinity"]  # floci-io/floci pull request #2783


def test_strings_compare_and_sort_by_utf16_code_units_as_in_javascript(emulator):
    # U+1F600 is stored as the surrogates D83D DE00, which sort before U+FF01.
    output = jsonata_output(emulator, "{'sorted': $sort(['！', '😀', 'a']), 'less': '😀' < '！'}")
    assert output == {"sorted": ["a", "😀", "！"], "less": True}


def test_results_of_jsonata_states_are_plain_json(emulator):
    output = jsonata_output(emulator, "{'three': 1.5 * 2, 'null': null, 'list': [1, 2]}")
    assert json.dumps(output) == '{"three": 3, "null": null, "list": [1, 2]}'


def test_without_the_workaround_moto_evaluates_no_jsonata(emulator):
    with emulator.without_workaround("jsonata"):
        execution = run_expression(emulator, "$states.input.a & '-' & $string($states.input.n)", {"a": "x", "n": 1})
    assert not (execution.status == "SUCCEEDED" and execution.output == {"value": "x-1"})
    assert jsonata_output(emulator, "$states.input.a & '-' & $string($states.input.n)", {"a": "x", "n": 1}) == "x-1"


def test_a_character_beyond_u_ffff_in_an_expression_is_one_character_as_on_aws(emulator):
    # moto's parser hands the expression over with the pair as two characters; a JVM engine matches one.
    assert jsonata_output(emulator, "[$replace('😀😀', /./, 'a'), $length('😀')]") == ["aa", 1]
