"""_jsonata/sizes.py: what Step Functions counts of a value, measured in JSONata alike in every engine."""

from __future__ import annotations

import json

import pytest

from idempotent_constructs._jsonata import engine as jsonata_engine
from idempotent_constructs._jsonata import sizes


def test_a_value_too_large_to_send_to_a_function_is_refused_before_the_task_is_built():
    expression = sizes.within_payload("$states.input", "too large to send")
    small = {"note": "é" * 1000}
    assert jsonata_engine.evaluate(expression, {"states": {"input": small}}) == small
    # 127,000 two-byte characters: 254,000 bytes of UTF-8, within 8 KiB of the 262,144-byte limit.
    with pytest.raises(jsonata_engine.JSONataError, match="too large to send"):
        jsonata_engine.evaluate(expression, {"states": {"input": {"note": "é" * 127_000}}})


@pytest.mark.parametrize(
    "value",
    [{"a": "😀x😀", "b": [1, 2.5]}, "a😀b", [1, "😀"], 5, {"quote": 'a"b', "back": "\\"}, {"lone": "x\udc00y"}],
)
def test_payload_bytes_is_the_utf8_json_of_the_value_and_never_raises(value):
    measured = jsonata_engine.evaluate(sizes.payload_bytes("$v"), {"v": value})
    written = json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogatepass")
    # A lone surrogate counts as its 6-byte escape, as JSON.stringify writes it, not its 3 bytes.
    assert measured == len(written) + (3 if isinstance(value, dict) and "lone" in value else 0)


def test_payload_bytes_counts_a_number_that_string_writes_shorter_at_17_bytes_more():
    measured = jsonata_engine.evaluate(sizes.payload_bytes("$v"), {"v": {"n": 0.30000000000000004}})
    assert measured == len('{"n":0.3}') + 17
