"""Emulator end-to-end: results of every size up to the payload limit, inline or as large results (issue 4)."""

from __future__ import annotations

import json
import time

import pytest

from idempotent_constructs.lambda_src import schema
from idempotent_constructs.testing import write_units
from tests.lambdas import sized
from tests.stacks import counted

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
    [
        (1, False, schema.DATA),
        (24, True, schema.DATA_GZIP),
        (100, False, schema.DATA_LOCATION),
        (250, False, schema.DATA_LOCATION),
    ],
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
def test_inline_results_of_1_and_100_kib_are_completed_and_replayed_natively_without_a_lambda_call(behaviour, unique, kib):
    payload = {"id": unique, "kib": kib}
    first, replay = run_twice(behaviour, "InlineResults", payload)
    assert first.output == replay.output == sized.handler(payload)
    assert replay.entered_states()[-1] == "Idempotency.Replay" and "Idempotency.StoreResult" not in first.entered_states()
    assert (first.lambda_invocations(), replay.lambda_invocations()) == (1, 0)  # the body only


def test_an_inline_result_of_222_kib_is_kept_compressed_in_the_record_and_round_trips_exactly(behaviour, unique):
    payload = {"id": unique, "kib": 222}
    first, replay = run_twice(behaviour, "InlineResults", payload)
    assert first.output == replay.output == sized.handler(payload)
    assert "Idempotency.StoreResult" in first.entered_states() and replay.entered_states()[-1] == "Idempotency.Restore"
    assert set(stored_record(behaviour, first)) & STORAGE_ATTRIBUTES == {schema.DATA_GZIP}


def test_a_result_json_cannot_write_exactly_is_stored_by_the_result_function_and_replays_byte_for_byte(behaviour, unique):
    first, replay = run_twice(behaviour, "ExactNumbers", {"id": unique})
    expected = {"id": unique, "sum": 0.30000000000000004, "snowflake": 1234567890123456, "tiny": 5e-324}
    assert json.dumps(first.output) == json.dumps(replay.output) == json.dumps(expected)
    assert "Idempotency.StoreResult" in first.entered_states() and replay.entered_states()[-1] == "Idempotency.Replay"


def test_an_array_result_is_completed_natively_and_replays_as_the_same_array(behaviour, unique):
    first, replay = run_twice(behaviour, "ArrayResult", {"id": unique})
    assert first.output == replay.output == [unique, 2, "x"]
    assert "Idempotency.StoreResult" not in first.entered_states() and replay.entered_states()[-1] == "Idempotency.Replay"


def test_completing_with_a_200_kib_result_costs_at_most_a_quarter_of_the_write_units_of_storing_it_raw(behaviour, unique):
    payload = {"id": unique, "kib": 222}  # 200 KiB of compact JSON (222 KiB as the Lambda sends it)
    raw_bytes = len(json.dumps(sized.handler(payload), separators=(",", ":")).encode())
    assert raw_bytes >= 200 * 1024
    for workflow in ("InlineResults", "LargeResults"):
        stored = write_units(stored_record(behaviour, behaviour.run(workflow, payload)))
        print(
            f"\n200 KiB result: {workflow} completes with {stored} WRU; raw JSON in the record would take {-(-raw_bytes // 1024)}"
        )
        assert stored * 4 <= -(-raw_bytes // 1024)


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


def test_a_result_too_large_to_send_to_the_result_function_is_refused_at_once_and_the_key_released(behaviour, unique):
    # 255,408 bytes of compact JSON: within the 256 KiB a state may output, beyond what StoreResult may
    # send (records.within_payload): a deliberate refusal, which no retry can change.
    started = time.monotonic()
    failed = behaviour.run("InlineResults", {"id": unique, "kib": 275})
    assert (failed.status, failed.error) == ("FAILED", "Idempotency.ResultTooLarge"), failed.cause
    assert time.monotonic() - started < 30  # States.ALL's retrier would hold the key for minutes
    assert failed.entered_states().count("Idempotency.StoreResult") == 1
    assert failed.lambda_invocations() == 1  # the body's own function: the result function was never called
    assert "Idempotency.Release" in failed.entered_states() and not behaviour.records_of(failed, "Idempotency")


def test_an_express_workflow_refuses_a_result_too_large_at_once_too_and_a_retry_runs_with_the_key_free(behaviour, unique):
    # An Express execution retrying the refusal would reach its 5 minutes holding the key (States.Timeout).
    # AWS keeps no history of it: what shows is the time, the error and the record.
    started = time.monotonic()
    failed = behaviour.run("ExpressInlineResults", {"id": unique, "kib": 275})
    assert (failed.status, failed.error) == ("FAILED", "Idempotency.ResultTooLarge"), failed.cause
    assert time.monotonic() - started < 30
    assert not behaviour.records_of(failed, "Idempotency")
    assert behaviour.run("ExpressInlineResults", {"id": unique, "kib": 1}).status == "SUCCEEDED"


def test_a_replay_whose_result_object_is_gone_fails_with_result_missing_and_never_runs_the_body(behaviour, unique):
    payload = {"id": unique, "kib": 100}
    first = behaviour.run("LargeResults", payload)
    bucket, _, key = stored_record(behaviour, first)[schema.DATA_LOCATION]["S"].removeprefix("s3://").partition("/")
    behaviour.emulator.client("s3").delete_object(Bucket=bucket, Key=key)
    replay = behaviour.run("LargeResults", payload)
    assert (replay.status, replay.error) == ("FAILED", schema.RESULT_MISSING)
    assert "reset the record" in replay.cause and "LargeResultsMake" not in replay.entered_states()
    # It ends in the guard's Fail state, with the function's cause, which metric_result_missing counts.
    assert replay.entered_states()[-1] == "Idempotency.ResultMissing"
    assert counted(behaviour, "LargeResults", replay) == {"Idempotency.Replay": 1, "Idempotency.ResultMissing": 1}


def test_a_completed_record_whose_inline_result_is_not_json_fails_its_replay_once_and_never_loops(behaviour, unique):
    payload = {"nonce": unique}
    first = behaviour.run("Echo", payload)
    (record_id,) = behaviour.records_of(first, "Idempotency")
    behaviour.emulator.client("dynamodb").update_item(
        TableName=behaviour.table_name("Idempotency"),
        Key={schema.ID: {"S": record_id}},
        UpdateExpression="SET #data = :data",
        ExpressionAttributeNames={"#data": schema.DATA},
        ExpressionAttributeValues={":data": {"S": "not JSON"}},
    )
    replay = behaviour.run("Echo", payload)
    # Replay's Output cannot parse it. moto evaluates a state's Output after its Retry and Catch, so the run
    # fails there; where the Catch takes it (guard.route.route), Route ends it in Unreadable
    # (Idempotency.ResultMissing). Either way once: Route never sends it back to Replay.
    assert (replay.status, replay.error) == ("FAILED", "States.QueryEvaluationError")
    assert replay.entered_states() == ["Idempotency.Acquire", "Idempotency.Inspect", "Idempotency.Replay"]
