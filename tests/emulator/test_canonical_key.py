"""Real executions on the emulator compute the canonical key in JSONata exactly as the Python API does
(contract B17): the corpus of tests/_jsonata/test_key_expressions.py, run through JSONata states."""

from __future__ import annotations

import pytest

from idempotent_constructs._jsonata import key_expressions as jsonata_key
from idempotent_constructs.lambda_src import canonical, schema
from tests._jsonata.test_key_expressions import CORPUS, TO_THE_KEY_FUNCTION
from tests.emulator.gaps.test_jsonata import jsonata_output, run_expression


@pytest.mark.parametrize("payload", CORPUS, ids=range(len(CORPUS)))
def test_an_execution_writes_the_canonical_text_and_whole_input_id_the_python_api_gives(emulator, payload):
    document = {"payload": payload}
    text = jsonata_output(emulator, jsonata_key.canonical_text("$states.input.payload"), document)
    assert text == canonical.canonical_json(payload)
    native = jsonata_key.record_id_and_validation("Stack/Orders", schema.KIND_WHOLE_INPUT, None, "$states.input")
    try:
        expected = canonical.key_fields("Stack/Orders", document, schema.KIND_WHOLE_INPUT)
    except canonical.KeyMissing:  # a number of 2**53 or more in a key: both refuse it
        assert run_expression(emulator, native, document).error == "States.QueryEvaluationError"
    else:
        assert jsonata_output(emulator, native, document) == expected


def test_an_execution_keyed_on_paths_writes_the_id_the_python_api_gives(emulator):
    payload = {"order": {"id": "o-😀"}, "customer name": "Zoë", "lines": [{}, {"sku": 0.1 + 0.2}], "big": 2**52}
    paths = ["$.order.id", "$['customer name']", "$.lines[1].sku"]
    native = jsonata_key.record_id_and_validation("Stack/Orders", schema.KIND_PATHS, paths, "$states.input")
    assert jsonata_output(emulator, native, payload) == canonical.key_fields("Stack/Orders", payload, schema.KIND_PATHS, paths)


def test_a_key_that_cannot_be_computed_fails_the_state_with_a_query_evaluation_error(emulator):
    native = jsonata_key.record_id_and_validation("ns", schema.KIND_PATHS, ["$.id"], "$states.input")
    for payload in ({"id": None}, {"id": 1234567890123456789}, {"id": {"a": 1}}):
        assert run_expression(emulator, native, payload).error == "States.QueryEvaluationError"


@pytest.mark.parametrize("payload", TO_THE_KEY_FUNCTION, ids=range(len(TO_THE_KEY_FUNCTION)))
def test_a_value_left_to_the_key_function_fails_the_native_key_with_a_query_evaluation_error(emulator, payload):
    native = jsonata_key.record_id_and_validation("ns", schema.KIND_WHOLE_INPUT, None, "$states.input")
    failed = run_expression(emulator, native, payload)
    assert failed.error == "States.QueryEvaluationError" and jsonata_key.BEYOND_NATIVE in failed.cause
