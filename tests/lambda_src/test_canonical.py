"""lambda_src/canonical.py: canonical JSON, key selection and hashing."""

from __future__ import annotations

import json
import math
import random
import re
from typing import Any

import pytest

from idempotent_constructs.lambda_src import canonical, schema


def test_key_order_and_whitespace_do_not_change_the_canonical_form():
    assert canonical.canonical_json(json.loads('{"b": 1, "a": [1, {"d": 2, "c": 3}]}')) == canonical.canonical_json(
        json.loads('{ "a":[1,{"c":3,"d":2}],\n "b":1 }')
    )


@pytest.mark.parametrize(
    ("left", "right"),
    [(1, 1.0), (-3, -3.0), (0, -0.0), (10**16, 1e16), ([1, {"a": 2}], [1.0, {"a": 2.0}])],
)
def test_integral_floats_equal_the_integers_they_equal(left, right):
    assert canonical.canonical_json(left) == canonical.canonical_json(right)


@pytest.mark.parametrize(("left", "right"), [(1, 1.5), ("1", 1), (True, 1), (None, 0), ("a.0", "a")])
def test_different_values_stay_different(left, right):
    assert canonical.digest(left) != canonical.digest(right)


def test_strings_that_look_like_floats_are_not_touched():
    assert canonical.canonical_json({"v": "1.0", "n": 1.0}) == '{"n":1,"v":"1.0"}'


def test_non_ascii_text_is_kept_as_utf8():
    assert canonical.canonical_json({"name": "Zoë"}) == '{"name":"Zoë"}'


@pytest.mark.parametrize(
    ("path", "segments"),
    [("$.a", ["a"]), ("$.order.id", ["order", "id"]), ("$['a b'].c", ["a b", "c"]), ("$.items[2]", ["items", 2])],
)
def test_a_key_path_names_one_field(path, segments):
    assert canonical.parse_path(path) == segments


@pytest.mark.parametrize("path", ["order.id", "$", "$.items[*]", "$..id", "$.a[?(@.b)]", "$.a[1:2]", "$.", ""])
def test_a_key_path_that_does_not_name_one_field_is_rejected(path):
    with pytest.raises(ValueError):
        canonical.parse_path(path)


def test_paths_select_scalars_in_order():
    document = {"order": {"id": 7}, "customer": {"id": "c"}}
    assert canonical.select(document, schema.KIND_PATHS, ["$.customer.id", "$.order.id"]) == ["c", 7]


@pytest.mark.parametrize(
    ("document", "kind", "expression"),
    [
        ({}, schema.KIND_WHOLE_INPUT, None),
        (None, schema.KIND_WHOLE_INPUT, None),
        ({"order": {}}, schema.KIND_PATHS, ["$.order.id"]),
        ({"order": {"id": None}}, schema.KIND_PATHS, ["$.order.id"]),
        ({"order": {"id": ""}}, schema.KIND_PATHS, ["$.order.id"]),
        ({"order": {"id": {"x": 1}}}, schema.KIND_PATHS, ["$.order.id"]),
        ({"order": 5}, schema.KIND_PATHS, ["$.order.id"]),
        ({"order": {}}, schema.KIND_JMESPATH, "order.id"),
        ({"order": {}}, schema.KIND_JMESPATH, "[order.id, customer.id]"),
        ({"order": {"id": 1}}, schema.KIND_JMESPATH, "[order.id, customer.id]"),
        ({"order": {"id": 1}, "customer": {"id": ""}}, schema.KIND_JMESPATH, "{o: order.id, c: customer.id}"),
    ],
)
def test_a_missing_null_or_empty_selection_raises_key_missing(document, kind, expression):
    with pytest.raises(canonical.KeyMissing) as raised:
        canonical.select(document, kind, expression)
    assert type(raised.value).__name__ == schema.KEY_MISSING


@pytest.mark.parametrize(
    ("document", "kind", "expression", "reason"),
    [
        ({"a": "secret-text"}, schema.KIND_JMESPATH, "abs(a)", "abs() got a value of type string, not number"),
        ({"a": 1e400}, schema.KIND_WHOLE_INPUT, None, "beyond the range of a double"),
        ({"a": 1e400, "b": 1}, schema.KIND_PATHS, ["$.b"], "beyond the range of a double"),  # the validation digest
        ({"a": 10**400}, schema.KIND_WHOLE_INPUT, None, "beyond the range of a double"),  # an integer no double holds
    ],
    ids=["jmespath-type-error", "infinite-key", "infinite-elsewhere", "integer-beyond-a-double"],
)
def test_a_key_that_cannot_be_computed_raises_key_missing_without_naming_values(document, kind, expression, reason):
    with pytest.raises(canonical.KeyMissing, match=re.escape(reason)) as raised:
        canonical.key_and_validation("ns", document, kind, expression)
    assert "secret-text" not in str(raised.value)


def test_a_list_the_key_selects_may_hold_empty_values_when_it_is_one_field():
    assert canonical.select({"tags": ["a", ""]}, schema.KIND_JMESPATH, "tags") == ["a", ""]


def test_the_id_is_namespaced_and_depends_on_what_the_key_selects_not_on_how():
    document = {"order": {"id": "o-1", "ref": "o-1"}, "other": "o-2"}
    by_path = canonical.idempotency_id("ns", document, schema.KIND_PATHS, ["$.order.id"])
    assert by_path.startswith("ns#") and len(by_path.split("#")[1]) == 64
    same_selection = {
        canonical.idempotency_id("ns", document, schema.KIND_PATHS, ["$['order']['id']"]),
        canonical.idempotency_id("ns", document, schema.KIND_PATHS, ["$.order.ref"]),
        canonical.idempotency_id("ns", document, schema.KIND_JMESPATH, "[order.id]"),
    }
    assert same_selection == {by_path}
    assert canonical.idempotency_id("ns", document, schema.KIND_PATHS, ["$.other"]) != by_path
    assert canonical.idempotency_id("ns", document, schema.KIND_JMESPATH, "order.id") != by_path  # "o-1", not ["o-1"]
    assert canonical.idempotency_id("other", document, schema.KIND_PATHS, ["$.order.id"]) != by_path


@pytest.mark.parametrize(
    ("kind", "expression"),
    [("whole_input", None), ("jmespath", "[order.id, amount]"), ("paths", ["$.order.id", "$.amount"])],
)
def test_the_id_and_validation_computed_together_equal_those_computed_apart(kind, expression):
    document = {"order": {"id": 7, "lines": [1.0, 2.5, {"b": 1, "a": -0.0}]}, "amount": 3.0, "note": "ü 1.0,"}
    record_id, validation = canonical.key_and_validation("ns", document, kind, expression)
    selection = canonical.select(document, kind, expression)
    assert record_id == f"ns#{canonical.digest(selection)}"  # D(C(S)): what is selected, not how
    assert validation == canonical.digest(document)


def test_a_whole_number_below_2_to_the_53_is_written_as_its_digits_and_any_other_as_m_p_e():
    assert canonical.canonical_json([2.0**52, -0.0, 1234567890123456, 9007199254740991, -12]) == (
        "[4503599627370496,0,1234567890123456,9007199254740991,-12]"
    )
    # x = m * 2**e with m odd: the form arithmetic on doubles computes exactly, in every engine.
    assert canonical.canonical_json([0.5, -0.75, 5e-324, 2**53, 1e21, 1e300]) == (
        "[1p-1,-3p-2,1p-1074,1p53,476837158203125p21,1681218273811815p946]"
    )
    assert canonical.canonical_json(0.1 + 0.2) == "1351079888211149p-52" != canonical.canonical_json(0.3)


@pytest.mark.parametrize("value", [0.1, 12.99, 1 / 3, 5e-324, 1e300, -(2**63), 1.5e-7])
def test_the_m_p_e_form_reads_back_as_the_same_double(value):
    m, e = canonical.canonical_json(value).split("p")
    assert int(m) % 2 == 1 and math.ldexp(int(m), int(e)) == value


def test_object_members_are_ordered_by_utf16_code_units_and_lone_surrogates_escaped():
    assert canonical.canonical_json({"\uff01": 1, "\U0001f600": 2, "10": 3, "9": 4}) == '{"10":3,"9":4,"😀":2,"！":1}'
    assert canonical.canonical_json("a\ud800") == '"a\\ud800"'


def test_a_key_number_of_2_to_the_53_or_more_is_refused_since_a_double_cannot_carry_it():
    with pytest.raises(canonical.KeyMissing, match="2\\*\\*53"):
        canonical.idempotency_id("ns", {"id": 1234567890123456789}, schema.KIND_PATHS, ["$.id"])
    record_id, _ = canonical.key_and_validation("ns", {"id": 1, "nanos": 2**60}, schema.KIND_PATHS, ["$.id"])
    assert record_id.startswith("ns#")


def test_a_long_text_is_hashed_in_pieces_of_2500_code_points():
    text = "é" * 2501
    pieces = canonical._sha256(text[:2500]) + canonical._sha256(text[2500:])
    assert canonical.text_digest(text) == canonical._sha256("chunks:" + pieces)
    assert canonical.text_digest(text[:2500]) == canonical._sha256(text[:2500])


def random_document(rng: random.Random, depth: int = 0) -> Any:
    """A JSON value with what each path of canonical_json treats apart: fractions, whole doubles, integers past
    2**53, strings that look like numbers or hold quotes and backslashes, and characters past U+D800."""
    if depth > 4 or rng.random() < 0.4:
        return rng.choice(
            [rng.uniform(-1e6, 1e6), rng.random() * 1e-8, rng.randint(-(10**18), 10**18), rng.randint(-99, 99), 1e21,
             1.5e300, -0.0, 0.1 + 0.2, 5e-324, 2.0**53, float(2**60), "12.5e3", ':1.5,"', 'a"b\\c\n', "\\", "é", "😀",
             True, None]
        )  # fmt: skip
    if rng.random() < 0.5:
        return [random_document(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    names = ["a", "B", "é", "0.5", 'x"y', "\\", "😀", ""]
    return {rng.choice(names) + str(rng.randint(0, 9)): random_document(rng, depth + 1) for _ in range(rng.randint(0, 4))}


def written(value: Any, exact: bool) -> str:
    """The canonical text as the writer walks the value, or the refusal of an inexact number."""
    out: list[str] = []
    try:
        canonical._write(value, out, exact)
    except ValueError as refused:
        return type(refused).__name__
    return "".join(out)


@pytest.mark.parametrize("seed", range(4))
def test_python_s_text_with_its_numbers_rewritten_in_place_is_what_the_writer_writes(seed):
    rng = random.Random(seed)
    for _ in range(2_000):
        document = random_document(rng)
        for exact in (False, True):
            try:
                fast = canonical.canonical_json(document, exact=exact)
            except ValueError as refused:
                fast = type(refused).__name__
            assert fast == written(document, exact), document
