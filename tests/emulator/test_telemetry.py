"""Emulator end-to-end: the shared functions log JSON lines labelled with the record, never a payload,
and count missing keys as a metric (issue 5)."""

from __future__ import annotations

import json

from idempotent_constructs.lambda_src import schema


def function_log(emulator) -> list[str]:
    """Every line the functions have printed (their log groups, on AWS), all functions together."""
    return [line for lines in emulator.lambdas.logs.values() for line in lines]


def json_lines(lines: list[str]) -> list[dict]:
    return [json.loads(line) for line in lines if line.startswith("{")]


def test_no_payload_value_reaches_a_log_line_while_keys_and_large_results_are_handled(behaviour, unique):
    secret = f"card-4111-{unique}"
    payload = {"id": unique, "kib": 100, "seed": 7, "card": secret}
    first = behaviour.run("LargeResults", payload)
    behaviour.run("LargeResults", payload)
    output = "\n".join(function_log(behaviour.emulator))
    assert secret not in output and unique not in output
    lines = json_lines(function_log(behaviour.emulator))
    namespace, _, key_hash = next(iter(behaviour.records_of(first, "Idempotency"))).rpartition("#")
    computed = [line for line in lines if line.get("message") == "key computed" and line.get("idempotency_key_hash") == key_hash]
    assert len(computed) == 2 and {line["idempotency_namespace"] for line in computed} == {namespace}
    assert any(line.get("message") == "result stored" and line["idempotency_key_hash"] == key_hash for line in lines)


def test_a_missing_key_is_counted_in_the_workflows_metric_namespace(behaviour):
    failed = behaviour.run("Flaky", {"other": "no order here"})
    assert failed.error == schema.KEY_MISSING
    metrics = [line for line in json_lines(function_log(behaviour.emulator)) if "_aws" in line]
    namespaces = {m["_aws"]["CloudWatchMetrics"][0]["Namespace"] for m in metrics if m.get(schema.KEY_MISSING_METRIC) == [1.0]}
    assert schema.metrics_namespace("Behaviour/Flaky") in namespaces
