"""lambda_src/compute_key.py: the key function (JMESPath keys, and any key of an input beyond the native
bounds): its event and result."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from idempotent_constructs._synth.functions import lambda_source_dir
from idempotent_constructs.lambda_src import canonical, compute_key, schema


def event(document, **overrides):
    return {"input": document, "namespace": "Stack/Orders", "kind": schema.KIND_JMESPATH, "expression": "id", **overrides}


def test_the_result_is_the_record_id_the_payload_digest_and_its_members_digests_and_nothing_else():
    result = compute_key.handler(event({"id": 7, "note": "a"}))
    assert result == {
        "id": schema_id("Stack/Orders", {"id": 7, "note": "a"}),
        "validation": canonical.key_and_validation("Stack/Orders", {"id": 7, "note": "a"}, schema.KIND_JMESPATH, "id")[1],
        "members": {name: {"S": canonical.digest(value)[:16]} for name, value in (("id", 7), ("note", "a"))},
    }


def test_the_members_of_a_from_paths_payload_are_its_paths():
    document = {"id": "o-1", "order": {"amount": 12.5}, "sequencer": "0055AED6DCD90281E5"}
    result = compute_key.handler(
        event(document, payload_kind=schema.KIND_PATHS, payload_expression=["$.order.amount", "$.sequencer"])
    )
    assert result["members"] == {
        "$.order.amount": {"S": canonical.digest(12.5)[:16]},
        "$.sequencer": {"S": canonical.digest("0055AED6DCD90281E5")[:16]},
    }


def schema_id(namespace, document):
    return canonical.idempotency_id(namespace, document, schema.KIND_JMESPATH, "id")


def test_validation_hashes_the_whole_payload_and_the_id_only_the_key():
    first = compute_key.handler(event({"id": 1, "note": "a"}))
    second = compute_key.handler(event({"id": 1, "note": "b"}))
    assert first["id"] == second["id"] and first["validation"] != second["validation"]


def test_a_missing_key_raises_key_missing():
    with pytest.raises(canonical.KeyMissing):
        compute_key.handler(event({"other": 1}))


def test_the_handler_imports_as_a_top_level_module_like_lambda_does():
    script = (
        "import compute_key, json;"
        "print(json.dumps(compute_key.handler({'input': {'a': 1}, 'namespace': 'n', 'kind': 'jmespath', 'expression': 'a'})['id']))"
    )
    result = subprocess.run([sys.executable, "-c", script], cwd=lambda_source_dir(), capture_output=True, text=True, check=True)
    log_line, printed_id = result.stdout.strip().splitlines()
    assert printed_id.strip('"').startswith("n#")
    assert json.loads(log_line)["idempotency_namespace"] == "n"


def test_a_computed_key_is_logged_as_one_json_line_with_its_namespace_and_hash_and_no_payload(capsys):
    record_id = compute_key.handler(event({"id": "4111-SECRET-1111"}))["id"]
    (line,) = [json.loads(text) for text in capsys.readouterr().out.splitlines()]
    namespace, _, key_hash = record_id.rpartition("#")
    assert (line["level"], line["message"], line["idempotency_namespace"], line["idempotency_key_hash"]) == (
        "INFO",
        "key computed",
        namespace,
        key_hash,
    )
    assert "SECRET" not in json.dumps(line)


@pytest.mark.parametrize(
    ("kind", "expression"),
    [(schema.KIND_WHOLE_INPUT, None), (schema.KIND_PATHS, ["$.order.id"])],
)
def test_any_key_the_states_compute_natively_is_computed_the_same_from_the_input(kind, expression):
    document = {"order": {"id": "o-1"}, "deep": [[[[[[[[[[{"x": 1.5}]]]]]]]]]]}
    result = compute_key.handler(event(document, kind=kind, expression=expression))
    record_id, validation = canonical.key_and_validation("Stack/Orders", document, kind, expression)
    members = {name: {"S": canonical.digest(value)[:16]} for name, value in document.items()}
    assert result == {"id": record_id, "validation": validation, "members": members}


def test_a_jsonata_key_is_computed_from_the_selection_the_state_made():
    document = {"order": {"id": 1042}, "note": "x"}
    result = compute_key.handler(event(document, kind=schema.KIND_JSONATA, expression="$states.input.order.id", selection=1042))
    assert result == {
        "id": canonical.selection_id("Stack/Orders", schema.KIND_JSONATA, 1042),
        "validation": canonical.payload_validation(document),
        "members": {"order": {"S": canonical.digest({"id": 1042})[:16]}, "note": {"S": canonical.digest("x")[:16]}},
    }


@pytest.mark.parametrize("selection", [None, "", [], 2**60])
def test_a_jsonata_selection_that_is_empty_or_inexact_raises_key_missing(selection):
    with pytest.raises(canonical.KeyMissing):
        compute_key.handler(event({"a": 1}, kind=schema.KIND_JSONATA, expression="$states.input.x", selection=selection))


def test_an_input_too_large_to_send_raises_input_too_large_by_its_step_functions_name():
    with pytest.raises(compute_key.InputTooLarge) as raised:
        compute_key.handler(event(None, kind=schema.KIND_WHOLE_INPUT, expression=None, too_large=True))
    assert type(raised.value).__name__ == "Idempotency.InputTooLarge"
