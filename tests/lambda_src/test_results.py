"""lambda_src/results.py: stores large results in the cheapest form that fits, restores them exactly."""

from __future__ import annotations

import hashlib
import json
import time

import boto3
import pytest

from idempotent_constructs.lambda_src import results, schema

OWNER = "arn:aws:states:us-east-1:123456789012:execution:Orders:run-1#holder1"
META = {
    "id": "orders#abc123",
    "owner": OWNER,
    "validation": "v",
}


@pytest.fixture
def aws(table):
    """The records table holding this holder's record in progress, and a bucket "results"."""
    results._clients.clear()
    boto3.client("s3").create_bucket(Bucket="results")
    table.put_item(TableName="records", Item={"id": {"S": META["id"]}, "owner": {"S": OWNER}, "status": {"S": schema.INPROGRESS}})
    yield table
    results._clients.clear()


def store(
    result, threshold: int = 1024, bucket: str | None = "results", meta: dict = META, record_limit: int | None = None
) -> dict:
    event = {
        "action": "store",
        "table": "records",
        "inline_threshold": threshold,
        "result": result,
        "idempotency": meta,
        "expires_after_seconds": 3600,
    }
    if bucket is not None:
        event["bucket"] = bucket
    if record_limit is not None:
        event["record_limit"] = record_limit
    results.handler(event)
    return boto3.client("dynamodb").get_item(TableName="records", Key={"id": {"S": meta["id"]}})["Item"]


def restored(item: dict):
    """What a replay that read ``item`` gets back: it names the record's owner as it read it."""
    return results.handler({"action": "restore", "table": "records", "id": item["id"]["S"], "owner": item["owner"]["S"]})


SMALL = {"order": 1, "price": 0.1, "big": 12345678901234567890123, "text": "naïve ☃"}
REPETITIVE = {"lines": [{"sku": "A-1", "quantity": 2, "note": "gift"}] * 200}
NOISY = {"lines": [f"{n * 7919 % 100003:05d}-{n**3 % 999983}" for n in range(400)]}


def test_a_result_under_the_threshold_is_kept_as_json_in_the_record(aws):
    item = store(SMALL)
    assert json.loads(item[schema.DATA]["S"]) == SMALL
    assert schema.DATA_GZIP not in item and schema.DATA_LOCATION not in item
    assert restored(item) == SMALL


def test_a_larger_result_that_compresses_under_the_threshold_is_kept_compressed_in_the_record(aws):
    assert len(results.serialize(REPETITIVE)) > 1024
    item = store(REPETITIVE)
    assert schema.DATA not in item and len(item[schema.DATA_GZIP]["B"]) <= 1024
    assert restored(item) == REPETITIVE


def test_a_result_still_too_large_compressed_goes_to_s3_under_its_namespace_hash_and_holder(aws):
    item = store(NOISY)
    location = item[schema.DATA_LOCATION]["S"]
    # The holder's object is named by its owner token's digest: a token's holder part may hold "/" or ":".
    assert location == f"s3://results/orders#/abc123/{hashlib.sha256(OWNER.encode()).hexdigest()[:32]}.json.gz"
    assert schema.DATA not in item and schema.DATA_GZIP not in item
    assert restored(item) == NOISY


def test_the_record_is_completed_with_every_attribute_the_state_machine_reads(aws):
    item = store(SMALL)
    assert item[schema.STATUS]["S"] == schema.COMPLETED
    assert abs(int(item[schema.EXPIRATION]["N"]) - (int(time.time()) + 3600)) <= 2  # expires_after from now
    assert (item[schema.OWNER]["S"], item[schema.VALIDATION]["S"]) == (OWNER, "v")


def test_storing_again_in_another_form_leaves_only_the_new_form(aws):
    store(NOISY)
    item = store(SMALL)
    assert set(item) & {schema.DATA, schema.DATA_GZIP, schema.DATA_LOCATION} == {schema.DATA}


def test_a_holder_whose_record_was_taken_over_is_told_its_lease_is_lost_and_changes_nothing(aws):
    aws.put_item(
        TableName="records", Item={"id": {"S": META["id"]}, "owner": {"S": "someone-else#x"}, "status": {"S": schema.INPROGRESS}}
    )
    with pytest.raises(results.LeaseLost) as raised:
        store(SMALL)
    assert type(raised.value).__name__ == schema.LEASE_LOST
    item = aws.get_item(TableName="records", Key={"id": {"S": META["id"]}})["Item"]
    assert item["owner"]["S"] == "someone-else#x" and schema.DATA not in item


def test_a_store_never_creates_a_record_that_no_holder_holds(aws):
    # Whoever invokes the function with a token of its own making plants nothing, and a record released
    # meanwhile is not made again (issue 52).
    aws.delete_item(TableName="records", Key={"id": {"S": META["id"]}})
    with pytest.raises(results.LeaseLost, match=r"orders#abc123 is no longer this run's"):
        store(SMALL)
    assert "Item" not in aws.get_item(TableName="records", Key={"id": {"S": META["id"]}})


def test_a_restore_reads_only_the_record_the_caller_names_by_its_owner_token(aws):
    # Another workflow's role may invoke the function; without the record's token it learns nothing.
    item = store(NOISY)
    for owner in ("arn:aws:states:us-east-1:123456789012:execution:Other:run-9#guess", ""):
        with pytest.raises(results.ResultMissing, match="not the one this run read"):
            results.handler({"action": "restore", "table": "records", "id": item["id"]["S"], "owner": owner})
    assert restored(item) == NOISY


def test_a_restore_of_a_record_that_is_gone_is_reported_missing(aws):
    aws.delete_item(TableName="records", Key={"id": {"S": META["id"]}})
    with pytest.raises(results.ResultMissing, match="it is gone"):
        results.handler({"action": "restore", "table": "records", "id": META["id"], "owner": OWNER})


def test_without_a_bucket_a_result_that_needs_one_fails_as_result_too_large(aws):
    with pytest.raises(
        results.ResultTooLarge, match=rf"too large for the record {META['id']}; use ResultStorage\.large"
    ) as raised:
        store(NOISY, bucket=None)
    assert type(raised.value).__name__ == schema.RESULT_TOO_LARGE


def test_inline_storage_keeps_a_compressed_result_in_the_record_up_to_its_record_limit(aws):
    item = store(NOISY, bucket=None, record_limit=schema.RECORD_GZIP_LIMIT)
    assert schema.DATA_GZIP in item and restored(item) == NOISY


def test_a_result_whose_escaped_json_would_be_too_large_to_read_back_is_compressed(aws):
    controls = {"text": "\u0001" * 20_000}  # 20 kB of JSON, 120 kB once escaped again
    item = store(controls, threshold=64 * 1024, bucket=None, record_limit=schema.RECORD_GZIP_LIMIT)
    assert schema.DATA not in item and restored(item) == controls


def test_numbers_keep_their_exact_values_through_a_round_trip():
    value = {"int": 2**70, "float": 0.1 + 0.2, "negative_zero": -0.0, "exp": 1e-7, "nested": [1.5, {"a": None}]}
    assert json.loads(results.serialize(value)) == value


def test_a_stale_holder_of_a_large_result_leaves_the_newer_owners_record_and_object_alone(aws):
    newer = {**META, "owner": "arn:aws:states:us-east-1:123456789012:execution:Orders:run-2#holder2"}
    aws.put_item(
        TableName="records", Item={"id": {"S": META["id"]}, "owner": {"S": newer["owner"]}, "status": {"S": schema.INPROGRESS}}
    )
    kept = store(NOISY, meta=newer)
    with pytest.raises(results.LeaseLost):
        store({"lines": list(reversed(NOISY["lines"]))})
    assert aws.get_item(TableName="records", Key={"id": {"S": META["id"]}})["Item"] == kept
    assert restored(kept) == NOISY


def test_a_result_whose_object_is_gone_is_reported_missing_with_what_to_do(aws):
    item = store(NOISY)
    boto3.client("s3").delete_object(Bucket="results", Key=item[schema.DATA_LOCATION]["S"].removeprefix("s3://results/"))
    with pytest.raises(results.ResultMissing, match="reset the record") as raised:
        restored(item)
    assert type(raised.value).__name__ == schema.RESULT_MISSING


def test_a_record_without_a_result_is_reported_missing(aws):
    with pytest.raises(results.ResultMissing, match="holds no result"):
        restored({"id": {"S": META["id"]}, "owner": {"S": OWNER}})


def test_a_result_a_restore_could_not_return_within_the_payload_limit_is_refused_before_anything_is_written(aws):
    # 200 KiB of compact JSON, but json.dumps (as the Lambda runtime returns it) escapes each é as \\u00e9.
    result = {"text": "é" * 100_000}
    with pytest.raises(results.ResultTooLarge, match=rf"given back on a replay; it was not stored \(record {META['id']}\)"):
        store(result, bucket="results")
    assert aws.get_item(TableName="records", Key={"id": {"S": META["id"]}})["Item"]["status"]["S"] == schema.INPROGRESS


def test_a_restore_refuses_a_record_that_now_holds_another_payloads_result(aws):
    item = store(NOISY)
    with pytest.raises(results.ResultMissing, match="another payload"):
        results.handler({"action": "restore", "table": "records", "id": item["id"]["S"], "owner": OWNER, "validation": "other"})
    assert (
        results.handler({"action": "restore", "table": "records", "id": item["id"]["S"], "owner": OWNER, "validation": "v"})
        == NOISY
    )
