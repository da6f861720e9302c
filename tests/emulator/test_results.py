"""Emulator end-to-end: results of every size up to the payload limit, inline or as large results (issue 4)."""

from __future__ import annotations

import time

import pytest

from idempotent_constructs.lambda_src import schema
from idempotent_constructs.testing import write_units
from tests.lambdas import sized

STORAGE_ATTRIBUTES = {schema.DATA, schema.DATA_GZIP, schema.DATA_LOCATION}


def run_twice(behaviour, workflow: str, payload: dict):
    first = behaviour.run(workflow, payload)
    assert first.status == "SUCCEEDED", (first.error, first.cause)
    replay = behaviour.run(workflow, payload)
    assert replay.status == "SUCCEEDED", (replay.error, replay.cause)
    return first, replay


def stored_record(behaviour, execution) -> dict:
    (record,) = behaviour.records_of(execution, "Idempotency").values()
    return record


@pytest.mark.parametrize(
    ("kib", "repetitive", "form"),
    [(1, False, schema.DATA), (24, True, schema.DATA_GZIP), (100, False, schema.DATA_LOCATION), (250, False, schema.DATA_LOCATION)],
)
def test_large_results_of_1_24_100_and_250_kib_round_trip_exactly_on_replay(behaviour, unique, kib, repetitive, form):
    payload = {"id": unique, "kib": kib, "repetitive": repetitive}
    first, replay = run_twice(behaviour, "LargeResults", payload)
    assert first.output == replay.output == sized.handler(payload)
    record = stored_record(behaviour, first)
    assert set(record) & STORAGE_ATTRIBUTES == {form}
    # Inline JSON replays natively; a compressed or S3 result through the result function.
    assert replay.entered_states()[-1] == ("Idempotency.Replay" if form == schema.DATA else "Idempotency.Restore")
    assert "LargeResultsMake" not in replay.entered_states()


@pytest.mark.parametrize("kib", [1, 100])
def test_inline_results_of_1_and_100_kib_round_trip_exactly_on_replay(behaviour, unique, kib):
    payload = {"id": unique, "kib": kib}
    first, replay = run_twice(behaviour, "InlineResults", payload)
    assert first.output == replay.output == sized.handler(payload)
    assert replay.entered_states()[-1] == "Idempotency.Replay"
    assert first.lambda_invocations() == 2  # the key function and the body, no result function


def test_completing_with_a_200_kib_result_costs_at_most_a_quarter_of_the_write_units_of_storing_it_raw(behaviour, unique):
    payload = {"id": unique, "kib": 222}  # 200 KiB of compact JSON (222 KiB as the Lambda sends it)
    raw = stored_record(behaviour, behaviour.run("InlineResults", payload))
    large = stored_record(behaviour, behaviour.run("LargeResults", payload))
    assert len(raw[schema.DATA]["S"]) >= 200 * 1024
    print(f"\n200 KiB result: completing writes {write_units(raw)} WRU inline, {write_units(large)} WRU as a large result")
    assert write_units(large) * 4 <= write_units(raw)


@pytest.mark.parametrize("workflow", ["LargeResults", "InlineResults"])
def test_a_result_over_the_payload_limit_fails_the_execution_and_the_key_is_released(behaviour, unique, workflow):
    payload = {"id": unique, "kib": 300}
    failed = behaviour.run(workflow, payload)
    assert (failed.status, failed.error) == ("FAILED", "States.DataLimitExceeded")
    # Step Functions cannot catch this error; the release function frees the key from the failure event.
    deadline = time.monotonic() + 20
    while behaviour.records_of(failed, "Idempotency") and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not behaviour.records_of(failed, "Idempotency")
    retried = behaviour.run(workflow, {"id": unique, "kib": 1})
    assert retried.status == "SUCCEEDED" and "Idempotency.Inspect" not in retried.entered_states()




def test_a_replay_whose_result_object_is_gone_fails_with_result_missing_and_never_runs_the_body(behaviour, unique):
    payload = {"id": unique, "kib": 100}
    first = behaviour.run("LargeResults", payload)
    bucket, _, key = stored_record(behaviour, first)[schema.DATA_LOCATION]["S"].removeprefix("s3://").partition("/")
    behaviour.emulator.client("s3").delete_object(Bucket=bucket, Key=key)
    replay = behaviour.run("LargeResults", payload)
    assert (replay.status, replay.error) == ("FAILED", schema.RESULT_MISSING)
    assert "reset the record" in replay.cause and "LargeResultsMake" not in replay.entered_states()
