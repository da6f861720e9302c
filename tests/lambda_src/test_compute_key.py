"""lambda_src/compute_key.py: the key function's event and result."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import datetime, timezone

from idempotent_constructs.functions import lambda_source_dir
import pytest

from idempotent_constructs.lambda_src import canonical, compute_key, schema

EXECUTION = "arn:aws:states:us-east-1:123456789012:execution:Orders:run-1"


def event(document, **overrides):
    return {
        "input": document,
        "execution": EXECUTION,
        "namespace": "Stack/Orders",
        "kind": schema.KIND_WHOLE_INPUT,
        "lease_seconds": 60,
        "expires_after_seconds": 3600,
        **overrides,
    }


def test_the_input_comes_back_unchanged_as_the_value():
    document = {"b": [1.0, "x"], "a": None}
    assert compute_key.handler(event(document))[schema.VALUE] is document


def test_the_clock_readings_agree_with_each_other():
    before = int(time.time())
    meta = compute_key.handler(event({"a": 1}))[schema.META]
    now = int(meta["now"])
    assert before <= now <= int(time.time())
    assert int(meta["expiration"]) == now + 60 + 3600  # kept expires_after beyond the lease
    assert int(meta["hold_expiration"]) == now + 60 + 3600  # in progress: no longer unless told
    held = compute_key.handler(event({"a": 1}, hold_seconds=366 * 86400))[schema.META]
    assert int(held["hold_expiration"]) == int(held["now"]) + 366 * 86400
    assert int(meta["lease_expiration"]) == (now + 60) * 1000
    deadline = datetime.strptime(meta["deadline"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    assert deadline.timestamp() == now + 60


def test_every_holder_gets_its_own_owner_token_within_the_execution():
    first, second = (compute_key.handler(event({"a": 1}))[schema.META]["owner"] for _ in range(2))
    assert first != second
    assert first.startswith(f"{EXECUTION}#") and second.startswith(f"{EXECUTION}#")


def test_validation_hashes_the_whole_payload_and_the_id_only_the_key():
    meta_1 = compute_key.handler(event({"id": 1, "note": "a"}, kind=schema.KIND_PATHS, expression=["$.id"]))
    meta_2 = compute_key.handler(event({"id": 1, "note": "b"}, kind=schema.KIND_PATHS, expression=["$.id"]))
    assert meta_1[schema.META]["id"] == meta_2[schema.META]["id"]
    assert meta_1[schema.META]["validation"] != meta_2[schema.META]["validation"]


def test_the_handler_imports_as_a_top_level_module_like_lambda_does():
    script = (
        "import compute_key, json;"
        "print(json.dumps(compute_key.handler({'input': {'a': 1}, 'execution': 'e', 'namespace': 'n',"
        " 'kind': 'whole_input', 'lease_seconds': 1, 'expires_after_seconds': 1})['idempotency']['id']))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=lambda_source_dir(), capture_output=True, text=True, check=True
    )
    log_line, printed_id = result.stdout.strip().splitlines()
    assert printed_id.strip('"').startswith("n#")
    assert json.loads(log_line)["idempotency_namespace"] == "n"


def test_a_computed_key_is_logged_as_one_json_line_with_its_namespace_and_hash_and_no_payload(capsys):
    meta = compute_key.handler(event({"card": "4111-SECRET-1111"}))["idempotency"]
    (line,) = [json.loads(text) for text in capsys.readouterr().out.splitlines()]
    namespace, _, key_hash = meta["id"].rpartition("#")
    assert (line["level"], line["message"], line["idempotency_namespace"], line["idempotency_key_hash"]) == (
        "INFO", "key computed", namespace, key_hash
    )
    assert "SECRET" not in json.dumps(line)


def test_a_missing_key_is_counted_as_a_key_missing_metric_in_embedded_metric_format(capsys):
    with pytest.raises(canonical.KeyMissing):
        compute_key.handler(event({}))
    lines = [json.loads(text) for text in capsys.readouterr().out.splitlines()]
    (metric,) = [line for line in lines if "_aws" in line]
    (directive,) = metric["_aws"]["CloudWatchMetrics"]
    assert directive["Namespace"] == schema.metrics_namespace(event({})["namespace"])
    assert directive["Metrics"] == [{"Name": "KeyMissing", "Unit": "Count"}] and metric["KeyMissing"] == [1.0]


def test_meta_only_returns_fresh_metadata_without_the_payload():
    meta = compute_key.handler(event({"a": 1}, meta_only=True))
    assert set(meta) == {
        "id", "validation", "owner", "execution", "now", "expiration", "hold_expiration", "lease_expiration", "deadline"
    }
    assert meta["id"] == compute_key.handler(event({"a": 1}))[schema.META]["id"]
