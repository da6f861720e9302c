"""idempotent_constructs._jsonata.engine evaluates as jsonata-js 2.0.6 (the JSONata Step Functions runs)
does, also outside the emulator, where the CLI and IdempotencyKey compute JSONata keys."""

from __future__ import annotations

import pytest

from idempotent_constructs._jsonata import engine as jsonata_engine
from tests.conftest import ROOT
from tests.jsonata_js import evaluate as jsonata_js

EXPRESSIONS = [
    # `&` writes values as $string does: non-ASCII kept, numbers to 15 digits in JavaScript's form.
    ("'key-' & $v", {"city": "Zoë", "n": 0.30000000000000004, "big": 1e21}),
    ("$v & '|' & $v", 1e-7),
    # Strings compare by UTF-16 code units: U+1F600 is stored as D83D DE00, below U+FF01.
    ("['😀' < '！', '😀' > '！', 'a' <= 'b']", None),
    ("$sort(['！', '😀', 'a'])", None),
    # A null in the input is JSON's null, not undefined: kept in a list, written by $string, mapped over.
    # (A path step over it, $v.a.$string(), still skips it in jsonata-python: not used by our states.)
    ("[$string($v), $count($v.a)]", {"a": [None, 1]}),
    ("$map($v, function($x) { $type($x) })", [None, 1]),
]


@pytest.mark.parametrize(("expression", "value"), EXPRESSIONS)
def test_the_engine_gives_what_jsonata_js_gives_without_the_emulator(node_bin, expression, value):
    assert jsonata_engine.evaluate(expression, {"v": value}) == jsonata_js(expression, {"v": value}, cwd=str(ROOT))


# Answers recorded on AWS. LocalStack's AWS-recorded snapshots (localstack/localstack,
# tests/aws/services/stepfunctions/v2/, Apache-2.0): intrinsic_functions/test_array_jsonata
# (test_array_partition, test_array_range), test_json_manipulation_jsonata (test_parse),
# evaluate_jsonata/test_base_evaluate_expressions (test_merge_with_dynamic_args,
# test_base_jsonata_regular_expressions), scenarios/test_base_scenarios (test_escape_sequence_parsing).
# Measured with TestState and quoted in floci-io/floci issues #2662 and #2737: $hash, $random, $string.
RECORDED_ON_AWS = [
    ("$partition($v[0], $v[1])", [[0, 1, 2], 2], [[0, 1], [2]]),
    ("$partition($v[0], $v[1])", [[0, 1, 2, 3], 3], [[0, 1, 2], [3]]),
    ("$partition($v[0], $v[1])", [[0], 5], [[0]]),
    ("$partition($v[0], $v[1])", [[0, 1], 1], [[0], [1]]),
    ("$range($v[0], $v[1], $v[2])", [0, 9, 3], [0, 3, 6, 9]),
    ("$range($v[0], $v[1], $v[2])", [0, 10, 3], [0, 3, 6, 9]),
    ("$range($v[0], $v[1], $v[2])", [1, 9, 9], 1),  # one number: a sequence of one is its item
    ("$range($v[0], $v[1], $v[2])", [1, 9, 2], [1, 3, 5, 7, 9]),
    ("$parse($v)", "-0", 0),
    ("$parse($v)", "1.1", 1.1),
    ("$parse($v)", '"HelloWorld"', "HelloWorld"),
    ("$parse($v)", '[1, 2, "HelloWorld"]', [1, 2, "HelloWorld"]),
    ("$parse($v)", '{"Arg1": 1, "Arg2": []}', {"Arg1": 1, "Arg2": []}),
    ("$merge([$v.part1, $v.part2])", {"part1": {"hello": "world"}, "part2": {"foo": "bar"}}, {"hello": "world", "foo": "bar"}),
    ('$contains("hello$world", /^hello\\$/)', None, True),
    ('$contains("hello$world", /^hello\\ /)', None, False),
    ("$v = '\"'", '"', True),
    ("$hash('input', 'SHA-1')", None, "140f86aae51ab9e1cda9b4254fe98a74eb54c1a1"),
    ("$random(42)", None, 0.7275636800328681),
    ("$string(1e20)", None, "100000000000000000000"),
    ("$string(1e21)", None, "1e+21"),
    ("$string(1e-7)", None, "1e-7"),
    ("$string(1/3)", None, "0.333333333333333"),
    ("$v.amount", {"amount": 1.0}, 1),
]


@pytest.mark.parametrize(("expression", "value", "recorded"), RECORDED_ON_AWS)
def test_the_engine_gives_what_aws_recorded(expression, value, recorded):
    assert jsonata_engine.evaluate(expression, {"v": value}) == recorded
