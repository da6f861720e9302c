"""Emulator end-to-end: the shared functions log JSON lines labelled with the record, never a payload;
missing keys end in a state the workflow's metric counts (issue 5)."""

from __future__ import annotations

import json

from idempotent_constructs.lambda_src import schema


def function_log(emulator) -> list[str]:
    """Every line the functions have printed (their log groups, on AWS), all functions together."""
    return [line for lines in emulator.lambdas.logs.values() for line in lines]


def json_lines(lines: list[str]) -> list[dict]:
    """The JSON lines among ``lines`` (the library's functions log JSON; another function of the session, a
    custom resource's Node.js handler, may print an object as Node writes it)."""
    found = []
    for line in lines:
        try:
            found.append(json.loads(line))
        except ValueError:
            continue
    return [line for line in found if isinstance(line, dict)]


def test_no_payload_value_reaches_a_log_line_while_keys_and_large_results_are_handled(behaviour, unique):
    secret = f"card-4111-{unique}"
    payload = {"id": unique, "kib": 100, "seed": 7, "card": secret}
    first = behaviour.run("LargeResults", payload)
    behaviour.run("LargeResults", payload)
    output = "\n".join(function_log(behaviour.emulator))
    assert secret not in output and unique not in output
    lines = json_lines(function_log(behaviour.emulator))
    namespace, _, key_hash = next(iter(behaviour.records_of(first, "Idempotency"))).rpartition("#")
    stored = [line for line in lines if line.get("message") == "result stored" and line.get("idempotency_key_hash") == key_hash]
    assert len(stored) == 1 and stored[0]["idempotency_namespace"] == namespace


def test_the_key_function_logs_the_key_it_computed_for_a_jmespath_key_and_never_the_payload(behaviour, unique):
    secret = f"card-4111-{unique}"
    first = behaviour.run("Flaky", {"order": {"id": secret}})
    namespace, _, key_hash = next(iter(behaviour.records_of(first, "Idempotency"))).rpartition("#")
    assert secret not in "\n".join(function_log(behaviour.emulator))
    computed = [line for line in json_lines(function_log(behaviour.emulator)) if line.get("idempotency_key_hash") == key_hash]
    assert [(line["message"], line["idempotency_namespace"]) for line in computed] == [("key computed", namespace)]


def test_a_missing_key_ends_in_the_key_missing_state_the_workflows_metric_counts(behaviour):
    for workflow, payload in (("Flaky", {"other": "no order here"}), ("Slow", {"other": "no id here"})):
        failed = behaviour.run(workflow, payload)
        assert failed.error == schema.KEY_MISSING
        assert failed.entered_states()[-1] == "Idempotency.KeyMissing"  # counted by metric_key_missing()
