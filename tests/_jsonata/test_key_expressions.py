"""The canonical key in JSONata (idempotent_constructs._jsonata.key_expressions) gives the texts, digests and record
ids of the Python implementation (idempotent_constructs/lambda_src/canonical.py), evaluated by jsonata-js 2.0.6, the JSONata
that Step Functions implements (docs/explanation/canonical-key.md). The emulator's executions are checked against
the same corpus in tests/emulator/test_canonical_key.py."""

from __future__ import annotations

import jsonata
import pytest

from bench.bars import BOUNDS_DEPTH
from bench.bounds import in_jsonata_js
from idempotent_constructs._jsonata import engine
from idempotent_constructs._jsonata import key_expressions as jsonata_key
from idempotent_constructs._jsonata.bounds import AWS_BOUNDS
from idempotent_constructs.lambda_src import canonical, schema
from tests.conftest import ROOT
from tests.jsonata_js import JSONataJsError, evaluate

# Payloads whose canonical text is easy to get wrong, and that the states key natively.
CORPUS = [
    {"b": [1.0, "é"], "a": None, "c": True, "d": False},
    {"10": 1, "9": 2, "a": 3, "": 4},  # integer-like names: JavaScript objects would reorder them
    {"\uff01": 1, "\U0001f600": 2, "\ue000": 3},  # UTF-16 order differs from code point order
    {"quote": 'a"b', "backslash": "a\\b", "controls": "\b\f\n\r\t\u0001\u001f\u007f", "separators": "\u2028\u2029"},
    {"c1": "\u0080\u0085\u009f", "dashes": "\u2013\u20ac", "pair": "\U0001f600", "slash": "a/b", "html": "<&>"},
    [1.0, 1e0, 100, 1e-7, 1.5e-7, 0.000001, 123456.789, -0.0, 5e-324, 2.0**52, 4.35e-320, -1e-300],
    [0.30000000000000004, 0.1 + 0.7, 1 / 3, 2 / 3, 123456789012345.5, 9007199254740991, -9007199254740991],
    [10**15, 1234567890123456, 99999999, 100000000, 100000001, 12.99, -0.75],
    {"nested": [[1, [2, [3, []]]], {}, [], {"x": {"y": {"z": None}}}]},
    {"nulls": [None, 1, [None], {"n": None}]},  # a null in a list is a value: [null] is not []
    "x" * 2499,
    "y" * 2501,  # two pieces
    {"text": "é" * 6000},  # more than 2,500 code points and 10,000 bytes
    {"emoji": "😀" * 3000},
    0,
    "",
]

# What the states leave to the key function: a number a JVM engine may hold as the long it was sent as
# (2^53 or more in magnitude), and a lone surrogate (no JSONata function tells a character's code).
TO_THE_KEY_FUNCTION = [
    {"id": 2**53},
    {"at": 1764061200123456789, "order": "o-1"},
    {"x": 1e20},
    {"x": 1e21},
    {"x": -(2**63)},
    {"lone": "\ud800x"},
    {"lone": "a\udc00"},
]


def js(expression: str, value=None):
    return evaluate(expression, {"value": value}, cwd=str(ROOT))


def test_the_canonical_text_of_each_payload_is_the_same_in_jsonata_and_python(node_bin):
    texts = js(f"$map($value, function($v) {{ {jsonata_key.canonical_text('$v')} }})", CORPUS)
    assert texts == [canonical.canonical_json(payload) for payload in CORPUS]


def test_the_canonical_text_of_each_payload_is_the_same_in_a_port_of_the_java_engine():
    # jsonata-python, a port of jsonata-java (the cross-check's ministack runs it), differs from jsonata-js
    # where a JVM engine may: integers kept as integers, and a % that truncates to an integer (42.5 % 1 is 0).
    # Its $sort compares names as Python does, by code point, where Java and JavaScript compare UTF-16 units:
    # the one payload whose order that changes is left out.
    payloads = [payload for payload in CORPUS if payload != {"\uff01": 1, "\U0001f600": 2, "\ue000": 3}]
    expression = jsonata.Jsonata(jsonata_key.canonical_text("$"))
    assert len(payloads) == len(CORPUS) - 1
    assert [expression.evaluate(payload) for payload in payloads] == [canonical.canonical_json(p) for p in payloads]


def test_digests_of_short_and_long_texts_are_the_same_in_jsonata_and_python(node_bin):
    # Pieces are cut in code points: a pair is never split, wherever a piece ends. (A canonical text never
    # holds a lone surrogate: C writes it escaped.)
    texts = ["", "a", "x" * 2500, "x" * 2501, "é" * 7501, "😀" * 5000, "a" + "😀" * 2600, "b" * 2499 + "😀" * 10]
    assert js(f"$map($value, function($t) {{ {jsonata_key.text_digest('$t')} }})", texts) == [
        canonical.text_digest(text) for text in texts
    ]


@pytest.mark.parametrize(
    ("kind", "expression"),
    [
        (schema.KIND_WHOLE_INPUT, None),
        (schema.KIND_PATHS, ["$.order.id"]),
        (schema.KIND_PATHS, ["$.order.id", "$['customer name']", "$.lines[1].sku"]),
    ],
)
def test_record_ids_and_validations_are_the_same_in_jsonata_and_python(node_bin, kind, expression):
    payloads = [
        {"order": {"id": 1042}, "customer name": "Zoë", "lines": [{"sku": "a"}, {"sku": 0.1 + 0.2}], "at": 1.0},
        {"order": {"id": "o-😀"}, "customer name": '\u2028"', "lines": [{}, {"sku": -0.0}], "small": 2**-60},
        {"order": {"id": 9007199254740991}, "customer name": "x" * 3000, "lines": [[], {"sku": True}]},
    ]
    native = jsonata_key.record_id_and_validation("Stack/Orders", kind, expression, "$v")
    computed = js(f"$map($value, function($v) {{ {native} }})", payloads)
    expected = [
        {
            **dict(
                zip(("id", "validation"), canonical.key_and_validation("Stack/Orders", payload, kind, expression), strict=True)
            ),
            "members": typed(canonical.payload_members(schema.KIND_WHOLE_INPUT, None, payload)),
        }
        for payload in payloads
    ]
    assert computed == expected


@pytest.mark.parametrize(
    ("payload_kind", "payload_expression"),
    [(schema.KIND_WHOLE_INPUT, None), (schema.KIND_PATHS, ["$.lines", "$['customer name']"]), (schema.KIND_NONE, None)],
)
def test_a_jsonata_keys_record_ids_and_validations_are_the_same_in_jsonata_and_python(node_bin, payload_kind, payload_expression):
    key = "[$states.input.order.id, $states.input.lines[1].sku]"
    payloads = [
        {"order": {"id": 1042}, "customer name": "Zoë", "lines": [{"sku": "a"}, {"sku": 0.1 + 0.2}], "at": 1.0},
        {"order": {"id": "o-😀"}, "customer name": '\u2028"', "lines": [{}, {"sku": -0.0}], "small": 2**-60},
    ]
    native = jsonata_key.record_id_and_validation(
        "Stack/Orders", schema.KIND_JSONATA, key, "$v", payload_kind, payload_expression
    )
    computed = js(f"$map($value, function($v) {{ ($states := {{'input': $v}}; {native}) }})", payloads)
    expected = [
        {
            "id": canonical.selection_id(
                "Stack/Orders", schema.KIND_JSONATA, jsonata_key.select(payload, schema.KIND_JSONATA, key)
            ),
            "validation": canonical.payload_validation(
                selected := jsonata_key.select_payload(payload, payload_kind, payload_expression)
            ),
            "members": typed(canonical.payload_members(payload_kind, payload_expression, selected)),
        }
        for payload in payloads
    ]
    assert computed == expected


def typed(members: dict[str, str]) -> dict[str, dict[str, str]]:
    """``canonical.payload_members`` as the states keep them: a DynamoDB map's values."""
    return {name: {"S": digest} for name, digest in members.items()}


# Pipes sends Step Functions an array of SQS records; a redelivery's envelope differs, its body does not.
SQS_RECORDS = [
    [{"messageId": "m-1", "receiptHandle": "AQEB1", "body": '{"orderId": "o-1", "amount": 12.5}', "attributes": {"n": "1"}}],
    [{"messageId": "m-1", "receiptHandle": "AQEB2", "body": '{"amount": 12.50, "orderId": "o-1"}', "attributes": {"n": "2"}}],
    [{"messageId": "m-2", "receiptHandle": "AQEB3", "body": '{"orderId": "o-1", "amount": 99}', "attributes": None}],
    [{"messageId": "m-3", "receiptHandle": "AQEB4", "body": "x" * 70_000, "attributes": [1, [2]]}],
]


@pytest.mark.parametrize(
    ("payload_kind", "payload_expression"),
    [
        (schema.KIND_PATHS, ["$[0].body"]),
        (schema.KIND_PATHS, ["$[0].attributes", "$[0].messageId"]),  # an object, null or a list, kept whole
        (schema.KIND_JSONATA, "$parse($states.input[0].body)"),
        (schema.KIND_JSONATA, "$states.input[0].attributes"),
        (schema.KIND_NONE, None),
        (schema.KIND_WHOLE_INPUT, None),
    ],
)
def test_payload_validations_are_the_same_in_jsonata_and_python(node_bin, payload_kind, payload_expression):
    records = SQS_RECORDS if payload_kind != schema.KIND_JSONATA or "parse" not in payload_expression else SQS_RECORDS[:3]
    native = jsonata_key.record_id_and_validation(
        "Stack/Orders", schema.KIND_PATHS, ["$[0].messageId"], "$v", payload_kind, payload_expression
    )
    computed = js(f"$map($value, function($v) {{ ($states := {{'input': $v}}; {native}) }})", records)
    expected = [
        {
            "id": canonical.idempotency_id("Stack/Orders", record, schema.KIND_PATHS, ["$[0].messageId"]),
            "validation": canonical.payload_validation(
                payload := jsonata_key.select_payload(record, payload_kind, payload_expression)
            ),
            "members": typed(canonical.payload_members(payload_kind, payload_expression, payload)),
        }
        for record in records
    ]
    assert computed == expected


MEMBERS = [
    {"orderId": "o-1", "sequencer": "0055AED6DCD90281E5", "size": 1024},
    {"orderId": "o-1", "sequencer": "0055AED6DCD90281E6", "size": 1024},  # one member changed: its digest alone
    {f"m{index}": index for index in range(schema.PAYLOAD_MEMBERS_LIMIT)},  # as many members as are kept
    {f"m{index}": index for index in range(schema.PAYLOAD_MEMBERS_LIMIT + 1)},  # one more: none kept
    {"n" * schema.PAYLOAD_MEMBER_NAMES: 1},  # names as long as are kept
    {"n" * (schema.PAYLOAD_MEMBER_NAMES + 1): 1},  # longer: none kept
    {"": 1, "a": [1, {"b": None}]},  # a DynamoDB map has no member named ""
    ["o-1", 12.5],
    "text",
]


def test_each_members_digest_is_the_same_in_jsonata_and_python_and_only_a_changed_member_changes(node_bin):
    native = jsonata_key.record_id_and_validation("Stack/Orders", schema.KIND_WHOLE_INPUT, None, "$v")
    computed = js(f"$map($value, function($w) {{ ($v := $w[0]; {native}).members }})", [[m] for m in MEMBERS])
    assert computed == [typed(canonical.payload_members(schema.KIND_WHOLE_INPUT, None, m)) for m in MEMBERS]
    first, second = computed[0], computed[1]
    assert [name for name in first if first[name] != second[name]] == ["sequencer"]
    assert len(computed[2]) == schema.PAYLOAD_MEMBERS_LIMIT and computed[3] == {}
    assert len(computed[4]) == 1 and computed[5] == {}
    assert list(computed[6]) == ["a"]
    assert computed[7] == computed[8] == {}


def test_a_redelivery_with_another_envelope_has_the_validation_of_the_first_delivery_when_its_body_is_the_payload():
    body = canonical.payload_validation
    first, again, other = (
        jsonata_key.select_payload(record, schema.KIND_JSONATA, "$parse($states.input[0].body)") for record in SQS_RECORDS[:3]
    )
    assert body(first) == body(again) != body(other)


@pytest.mark.parametrize(
    ("payload_kind", "payload_expression", "payload"),
    [
        (schema.KIND_PATHS, ["$[0].body"], [{"messageId": "m-1"}]),
        (schema.KIND_PATHS, ["$.body"], [{"body": "x"}]),  # a path through an array is no field of it
        (schema.KIND_JSONATA, "$states.input.nothing", {"messageId": "m-1"}),
    ],
)
def test_a_payload_that_selects_nothing_raises_in_jsonata_as_in_python(node_bin, payload_kind, payload_expression, payload):
    with pytest.raises(canonical.PayloadMissing):
        jsonata_key.select_payload(payload, payload_kind, payload_expression)
    native = jsonata_key.record_id_and_validation("ns", schema.KIND_WHOLE_INPUT, None, "$value", payload_kind, payload_expression)
    with pytest.raises(JSONataJsError, match="payload"):
        js(f"($states := {{'input': $value}}; {native})", payload)


@pytest.mark.parametrize(
    ("kind", "expression", "payload"),
    [
        (schema.KIND_WHOLE_INPUT, None, {}),
        (schema.KIND_PATHS, ["$.id"], {"other": 1}),
        (schema.KIND_PATHS, ["$.id"], {"id": None}),
        (schema.KIND_PATHS, ["$.id"], {"id": ""}),
        (schema.KIND_PATHS, ["$.id"], {"id": {"a": 1}}),
        (schema.KIND_PATHS, ["$.id"], {"id": [1]}),
        (schema.KIND_PATHS, ["$.id"], {"id": 1234567890123456789}),
        (schema.KIND_PATHS, ["$.id.a"], {"id": [{"a": 1}]}),  # a JSONata path would map over the list
        (schema.KIND_PATHS, ["$.list[0]"], {"list": {"0": 1}}),
    ],
)
def test_a_key_that_cannot_be_computed_raises_in_jsonata_as_in_python(node_bin, kind, expression, payload):
    with pytest.raises(canonical.KeyMissing):
        canonical.idempotency_id("ns", payload, kind, expression)
    with pytest.raises(JSONataJsError):
        js(jsonata_key.record_id_and_validation("ns", kind, expression, "$value"), payload)


@pytest.mark.parametrize("payload", TO_THE_KEY_FUNCTION)
def test_a_value_no_engine_independent_form_reaches_is_left_to_the_key_function(node_bin, payload):
    native = jsonata_key.record_id_and_validation("ns", schema.KIND_WHOLE_INPUT, None, "$value")
    with pytest.raises(JSONataJsError, match=jsonata_key.BEYOND_NATIVE):
        js(native, payload)
    assert canonical.idempotency_id("ns", payload, schema.KIND_WHOLE_INPUT).startswith("ns#")


def test_the_whole_input_is_keyed_as_the_doubles_its_numbers_read_as():
    # The nanosecond timestamp is the double it arrives as: a neighbour one nanosecond off is the same key,
    # whether the engine held it as a long (the key function reads the exact integer) or as a double.
    assert canonical.idempotency_id("ns", {"at": 1764061200123456789}, schema.KIND_WHOLE_INPUT) == canonical.idempotency_id(
        "ns", {"at": 1764061200123456790}, schema.KIND_WHOLE_INPUT
    )


def test_a_number_beyond_a_key_in_the_payload_is_left_to_the_key_function_which_hashes_it_as_a_double(node_bin):
    payload = {"id": "o-1", "nanos": 1700000000123456789}
    with pytest.raises(JSONataJsError, match=jsonata_key.BEYOND_NATIVE):
        js(jsonata_key.record_id_and_validation("ns", schema.KIND_PATHS, ["$.id"], "$value"), payload)
    _, validation = canonical.key_and_validation("ns", payload, schema.KIND_PATHS, ["$.id"])
    assert validation == canonical.digest({"id": "o-1", "nanos": float(1700000000123456789)})


def test_literals_escape_quotes_backslashes_and_control_characters(node_bin):
    text = 'it\'s a \\ "quote"\n'
    assert js(jsonata_key.literal(text)) == text


def nested_array(levels: int) -> list:
    value: list = [1]
    for _ in range(levels - 1):
        value = [value, 0]
    return value


def nested_object(levels: int) -> dict:
    value: dict = {"leaf": 1}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


def native(payload, payload_kind=schema.KIND_WHOLE_INPUT, payload_expression=None, kind=schema.KIND_WHOLE_INPUT, expression=None):
    """Whether the states key ``payload`` natively (jsonata-js), rather than raising for the key function."""
    request = jsonata_key.record_id_and_validation("ns", kind, expression, "$states.input", payload_kind, payload_expression)
    try:
        js(f"($states := {{'input': $value}}; {request})", payload)
    except JSONataJsError as error:
        assert jsonata_key.BEYOND_NATIVE in str(error)
        return False
    return True


@pytest.mark.parametrize("levels", [9, 10])
def test_an_array_is_measured_as_deep_as_an_object_of_the_same_nesting(node_bin, levels):
    # A pipe's input is an array: $string([$v]) would flatten it and measure it a level shallower.
    assert native(nested_array(levels)) == native(nested_object(levels)) == (levels <= jsonata_key.NATIVE_LEVELS)


def test_the_key_and_payload_selections_are_measured_together_not_each_on_its_own(node_bin):
    part = {f"f{n}": n for n in range(600)}  # 600 values: within the bounds alone, not four together
    payload = {"id": "o-1", "a": part, "b": part, "c": part, "d": part}
    paths = ["$.a", "$.b", "$.c", "$.d"]
    assert native({"id": "o-1", "a": part}, schema.KIND_PATHS, ["$.a"], schema.KIND_PATHS, ["$.id"])
    assert not native(payload, schema.KIND_PATHS, paths, schema.KIND_PATHS, ["$.id"])


@pytest.mark.parametrize(
    ("kind", "expression", "payload_kind", "payload_expression"),
    [
        (schema.KIND_WHOLE_INPUT, None, schema.KIND_WHOLE_INPUT, None),
        (schema.KIND_PATHS, ["$.id"], schema.KIND_WHOLE_INPUT, None),
        (schema.KIND_PATHS, ["$.id", "$.i"], schema.KIND_WHOLE_INPUT, None),
        (schema.KIND_JSONATA, "$states.input.id", schema.KIND_WHOLE_INPUT, None),
        (schema.KIND_WHOLE_INPUT, None, schema.KIND_PATHS, ["$.a"]),
        (schema.KIND_PATHS, ["$.id"], schema.KIND_JSONATA, "$states.input.a"),
    ],
)
def test_the_record_written_nests_as_deep_as_one_canonicalization(node_bin, kind, expression, payload_kind, payload_expression):
    # jsonata-js evaluates an object constructor's values at once, and its plain count of the depth adds what they
    # nest, where an engine that evaluates them in turn (the JVM's, the emulator's) nests as deep as the deepest: the
    # record's fields are bound one after the other first, so that no count nests two canonicalizations of the input.
    deepest = {"id": "o-1", "i": 2, "a": nested_object(jsonata_key.NATIVE_LEVELS - 1)}  # the deepest keyed natively
    request = jsonata_key.record_id_and_validation("ns", kind, expression, "$states.input", payload_kind, payload_expression)
    (measured,) = in_jsonata_js([{"expression": request, "bindings": {"states": {"input": deepest}}}], repeat=1)
    assert measured["error"] is None and measured["strict"] <= BOUNDS_DEPTH  # keyed natively, within the bench's bar
    engine.evaluate(request, {"states": {"input": deepest}}, bounds=AWS_BOUNDS)  # and within AWS's in the emulator


@pytest.mark.parametrize("count", [jsonata_key.NATIVE_FRACTIONS, jsonata_key.NATIVE_FRACTIONS + 1])
def test_at_most_500_fractions_are_keyed_natively(node_bin, count):
    # Each fraction costs ten exact halvings: past the bound, the key function keys the input.
    assert native({"n": [index + 0.5 for index in range(count)]}) == (count <= jsonata_key.NATIVE_FRACTIONS)
