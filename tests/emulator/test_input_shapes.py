"""Emulator end-to-end: no input fails a guarded workflow because of its shape (contract B18), with AWS's
JSONata bounds enforced (testing.gaps.jsonata_bounds).

Every key strategy, in a JSONPath and a JSONata state machine, runs and replays inputs nested 8 to 64
levels, 10,000 small fields, a 250 KiB string and numbers of any size; each writes the record id that
``IdempotencyKey.record_id`` computes (B17). An input within the native bounds is keyed natively (no
Lambda call); one beyond them by the key function, once per run."""

from __future__ import annotations

import pytest
from aws_cdk import App

from tests.stacks import DONE, SHAPE_KEYS, ShapesStack

NAMESPACE = "Shapes/Shape{key}{host}"


@pytest.fixture(scope="module")
def shapes(emulator, tmp_path_factory):
    app = App(outdir=str(tmp_path_factory.mktemp("shapes-assembly")))
    return emulator.deploy_stack(ShapesStack(app, "Shapes"))


def objects(levels: int, unique: str) -> dict:
    value: dict = {"leaf": True, "amount": 12.5}
    for level in range(levels - 1):
        value = {"a": value, "i": level}
    return {"id": unique, "nested": value}


def arrays(levels: int, unique: str) -> dict:
    value: list = [1, "x"]
    for _ in range(levels - 1):
        value = [value, 0]
    return {"id": unique, "nested": value}


SHAPES = {
    "objects nested 8 levels": lambda unique: objects(8, unique),
    "objects nested 16 levels": lambda unique: objects(16, unique),
    "objects nested 64 levels": lambda unique: objects(64, unique),
    "arrays nested 64 levels": lambda unique: arrays(64, unique),
    "10,000 small fields": lambda unique: {"id": unique, **{f"f{n}": n for n in range(10_000)}},
    "a 250 KiB string": lambda unique: {"id": unique, "text": "é" + "x" * (250 * 1024 - 100)},
    "250 KiB of small fields": lambda unique: {"id": unique, **{f"f{n}": n for n in range(18_000)}},
    "numbers of 2^53 or more": lambda unique: {"id": unique, "nanos": 1764061200123456789, "big": 1e21, "sum": 0.1 + 0.2},
    "numbers below 2^53": lambda unique: {
        "id": unique,
        "sum": 0.1 + 0.2,
        "id16": 1234567890123456,
        "tiny": 5e-324,
        "minus": -0.0,
    },
    "escapes and separators": lambda unique: {"id": unique, "text": 'a"b\\c\n\u0001\u2028\u0085😀'},
    "a lone surrogate": lambda unique: {"id": unique, "text": "a\ud800"},
    "a small flat input": lambda unique: {"id": unique, "amount": 12.5},
}
# Keyed natively; the rest by the key function: too large or deep, or holding a value no engine-independent
# native form reaches (a number a JVM engine may hold as a long, a lone surrogate).
NATIVE = {"objects nested 8 levels", "a small flat input", "numbers below 2^53", "escapes and separators", "a 250 KiB string"}


def run_and_replay(shapes, machine: str, payload):
    first = shapes.run(machine, payload)
    replay = shapes.run(machine, payload)
    for execution in (first, replay):
        assert (execution.status, execution.error, execution.output) == ("SUCCEEDED", None, DONE), execution.cause
    assert "ShapeWork" in first.entered_states() and "ShapeWork" not in replay.entered_states()
    return first, replay


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("key", SHAPE_KEYS)
def test_every_key_runs_and_replays_every_shape_in_a_jsonpath_state_machine_with_the_python_record_id(shapes, key, shape, unique):
    payload = SHAPES[shape](unique)
    first, replay = run_and_replay(shapes, f"Shape{key}JsonPath", payload)
    (record_id,) = shapes.records_of(first)
    assert record_id == SHAPE_KEYS[key].record_id(payload, namespace=NAMESPACE.format(key=key, host="JsonPath"))
    native = shape in NATIVE and key != "Jmespath"
    assert first.lambda_invocations() == replay.lambda_invocations() == (0 if native else 1)
    assert ("Idempotency.ComputeKey" in first.entered_states()) is not native


@pytest.mark.parametrize(
    "shape", ["objects nested 64 levels", "250 KiB of small fields", "a 250 KiB string", "a small flat input"]
)
@pytest.mark.parametrize("key", SHAPE_KEYS)
def test_every_key_runs_and_replays_large_and_deep_inputs_in_a_jsonata_state_machine(shapes, key, shape, unique):
    payload = SHAPES[shape](unique)
    first, _ = run_and_replay(shapes, f"Shape{key}Jsonata", payload)
    (record_id,) = shapes.records_of(first)
    assert record_id == SHAPE_KEYS[key].record_id(payload, namespace=NAMESPACE.format(key=key, host="Jsonata"))


def test_a_first_run_within_the_native_bounds_is_three_states_and_a_replay_three(shapes, unique):
    first, replay = run_and_replay(shapes, "ShapePathsJsonPath", SHAPES["objects nested 8 levels"](unique))
    assert first.entered_states() == ["Idempotency.Acquire", "Idempotency.Body", "ShapeWork", "Idempotency.Complete"]
    assert replay.entered_states() == ["Idempotency.Acquire", "Idempotency.Inspect", "Idempotency.Replay"]


def test_an_input_beyond_the_native_bounds_is_keyed_by_the_key_function_before_the_write(shapes, unique):
    first, replay = run_and_replay(shapes, "ShapePathsJsonPath", SHAPES["objects nested 16 levels"](unique))
    assert first.entered_states()[:3] == ["Idempotency.Acquire", "Idempotency.ComputeKey", "Idempotency.AcquireComputed"]
    assert replay.entered_states()[:4] == [
        "Idempotency.Acquire",
        "Idempotency.ComputeKey",
        "Idempotency.AcquireComputed",
        "Idempotency.Inspect",
    ]


def test_a_missing_key_beyond_the_native_bounds_fails_key_missing_with_the_key_functions_sentence(shapes, unique):
    payload = {"nested": objects(16, unique)["nested"]}  # no id
    failed = shapes.run("ShapePathsJsonPath", payload)
    assert (failed.error, failed.cause) == ("Idempotency.KeyMissing", "the key path $.id is missing, null or empty in the input")
    assert shapes.records_of(failed) == {}


def test_a_missing_key_within_the_native_bounds_fails_key_missing_never_as_a_query_evaluation_error(shapes, unique):
    failed = shapes.run("ShapePathsJsonata", {"other": unique})
    assert (failed.error, failed.cause) == ("Idempotency.KeyMissing", "the key path $.id is missing, null or empty in the input")


def test_an_explicit_key_with_a_number_a_double_cannot_hold_exactly_still_fails_key_missing(shapes):
    failed = shapes.run("ShapePathsJsonPath", {"id": 1764061200123456789})
    assert failed.error == "Idempotency.KeyMissing" and "2**53" in failed.cause
