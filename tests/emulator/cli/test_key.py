"""Emulator end-to-end: the `key` command (idempotent_constructs/cli/key_command.py)."""

from __future__ import annotations

import json

import pytest

from idempotent_constructs import IdempotencyKey, IdempotencyPayload
from idempotent_constructs.lambda_src import schema
from tests.emulator.cli.helpers import one_line_error, run_cli


@pytest.mark.parametrize(
    ("workflow", "namespace", "spec", "key", "payload"),
    [
        ("Echo", "Behaviour/Echo", [], IdempotencyKey.whole_input(), {"x": "{unique}", "n": [1.0, {"b": 2, "a": None}]}),
        (
            "Flaky",
            "Behaviour/Flaky",
            ["--jmespath", "order.id"],
            IdempotencyKey.from_jmespath("order.id"),
            {"order": {"id": "{unique}", "amount": 3}},
        ),
        ("ByFieldA", "shared-namespace", ["--path", "$.a"], IdempotencyKey.from_paths("$.a"), {"a": "{unique}", "b": 1}),
        (
            "JsonataKey",
            "Behaviour/JsonataKey",
            ["--jsonata", "[$states.input.order.id, $states.input.region]"],
            IdempotencyKey.from_jsonata("[$states.input.order.id, $states.input.region]"),
            {"order": {"id": "{unique}"}, "region": "eu"},
        ),
    ],
    ids=["whole-input", "jmespath", "paths", "jsonata"],
)
def test_key_prints_the_id_of_the_record_the_workflow_wrote_for_the_payload(
    behaviour, unique, workflow, namespace, spec, key, payload
):
    payload = json.loads(json.dumps(payload).replace("{unique}", unique))
    execution = behaviour.run(workflow, payload)
    assert execution.status == "SUCCEEDED", (execution.error, execution.cause)
    (written,) = behaviour.records_of(execution, "Idempotency")
    result = run_cli("key", "--namespace", namespace, *spec, input=json.dumps(payload))
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == written == key.record_id(payload, namespace=namespace)


def test_key_ignores_key_order_whitespace_and_integral_floats_and_reads_a_file_too(tmp_path):
    compact = run_cli("key", "--namespace", "Stack/Orders", input='{"a":1,"b":[2,3]}').stdout
    (tmp_path / "payload.json").write_text('{\n  "b": [2.0, 3],\n  "a": 1e0\n}\n')
    from_file = run_cli("key", "--namespace", "Stack/Orders", str(tmp_path / "payload.json")).stdout
    assert compact == from_file
    assert compact.startswith("Stack/Orders#") and len(compact.strip()) == len("Stack/Orders#") + 64


def test_key_with_json_shows_the_key_spec_and_the_selection_the_id_is_hashed_from_and_the_payloads_validation():
    payload = {"order": {"id": 7, "lines": []}, "customer": "c-1"}
    result = run_cli(
        "key",
        "--namespace",
        "Stack/Orders",
        "--path",
        "$.order.id",
        "--path",
        "$.customer",
        "--json",
        input=json.dumps(payload),
    )
    shown = json.loads(result.stdout)
    assert shown == {
        "id": IdempotencyKey.from_paths("$.order.id", "$.customer").record_id(
            {"order": {"id": 7}, "customer": "c-1"}, namespace="Stack/Orders"
        ),
        "namespace": "Stack/Orders",
        "kind": "paths",
        "expression": ["$.order.id", "$.customer"],
        "selection": [7, "c-1"],
        "payload_kind": "whole_input",
        "payload_expression": None,
        "validation": IdempotencyPayload.whole_input().validation(payload),
    }


def test_an_invalid_jsonata_key_is_refused_with_the_reason():
    result = run_cli("key", "--namespace", "Stack/Orders", "--jsonata", "$states.input.(", input="{}")
    assert result.exit_code == 2 and "Step Functions would refuse '$states.input.(' (INVALID_JSONATA_EXPRESSION" in result.output


def test_a_payload_without_the_key_fails_with_key_missing_as_the_workflow_would():
    line = one_line_error(run_cli("key", "--namespace", "Stack/Orders", "--jmespath", "order.id", input='{"order": {}}'))
    assert schema.KEY_MISSING in line and "'order.id' selects nothing" in line


@pytest.mark.parametrize(
    ("spec", "payload", "reason"),
    [
        (["--jmespath", "abs(order.id)"], '{"order": {"id": "A-17"}}', "abs() got a value of type string"),
        (["--path", "$.order.id"], '{"order": {"id": 1, "total": 1e400}}', "beyond the range of a double"),
    ],
    ids=["jmespath-type-error", "number-out-of-range"],
)
def test_a_key_that_cannot_be_computed_is_a_one_line_key_missing_error_too(spec, payload, reason):
    line = one_line_error(run_cli("key", "--namespace", "Stack/Orders", *spec, input=payload))
    assert schema.KEY_MISSING in line and reason in line and "A-17" not in line


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        (["--namespace", "Stack#Orders"], "'Stack#Orders' is not a namespace"),
        (["--namespace", "S", "--jmespath", "order.[id"], "'order.[id' is not a JMESPath expression"),
        (["--namespace", "S", "--jmespath", "nope(a)"], "'nope(a)' is not a JMESPath expression (Unknown function"),
        (["--namespace", "S", "--path", "$.items[*]"], "unsupported JSONPath '$.items[*]'"),
        (["--namespace", "S", "--jmespath", "a", "--path", "$.a"], "choose one key spec"),
        (["--namespace", "S", "no-such-file.json"], "'no-such-file.json' does not exist"),
    ],
    ids=["namespace", "jmespath", "jmespath-function", "path", "two-specs", "file"],
)
def test_a_mistake_in_the_key_spec_is_a_usage_error_that_names_the_value(arguments, named):
    result = run_cli("key", *arguments, input="{}")
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert named in " ".join(result.stderr.split())


def test_a_payload_that_is_not_json_is_named_in_a_one_line_error():
    line = one_line_error(run_cli("key", "--namespace", "Stack/Orders", input='{"a": NaN}'))
    assert "the payload (stdin) is not JSON" in line and "NaN" in line
