"""idempotent_constructs._readers.key_settings and `idempotent-constructs key-changes` / `key --from`: each
guard's key settings written in its definition, read back from templates, and the changes between two
deploys that would run earlier work again told before the deploy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_stepfunctions as sfn
from click.testing import CliRunner

from idempotent_constructs import (
    DefinitionLocation,
    IdempotencyGuard,
    IdempotencyKey,
    IdempotencyPayload,
    IdempotencyTable,
    IdempotentStateMachine,
)
from idempotent_constructs._readers import key_settings
from idempotent_constructs._readers.key_settings import KeySettings
from idempotent_constructs.cli import cli
from idempotent_constructs.lambda_src import schema


def settings(key=("paths", ["$.order.id"]), payload=("whole_input", None), namespace="Shop/Orders", key_format=4):
    return KeySettings(namespace, *key, *payload, key_format=key_format)


@pytest.mark.parametrize(
    "written",
    [
        settings(),
        settings(key=("whole_input", None), payload=("none", None)),
        settings(key=("jsonata", "$states.input.'it''s' & \"\\\\\" & 'é\n'"), payload=("jmespath", "[0].body")),
        settings(key=("paths", ["$['a \"b\"']", "$.x[0]"]), payload=("paths", ["$[0].body"]), namespace="a.b:c/d=e+f@g-h_1"),
    ],
)
def test_the_settings_written_in_a_comment_read_back_the_same(written):
    assert key_settings.parse(key_settings.comment(written)) == written


def test_any_other_comment_is_no_settings():
    assert key_settings.parse("charge the card") is None and key_settings.parse(None) is None


def test_a_respelled_path_is_no_change_and_a_changed_key_namespace_or_format_reruns_earlier_work():
    before = {"Shop/Orders Guard.Acquire": settings()}
    assert key_settings.changes(before, {"Shop/Orders Guard.Acquire": settings(key=("paths", ["$['order']['id']"]))}) == []
    added = key_settings.changes(before, {"Shop/Orders Guard.Acquire": settings(key=("paths", ["$.order.id", "$.customer"]))})
    assert [(c.reruns, c.fails) for c in added] == [(True, False)] and "may run again" in added[0].message
    (renamed,) = key_settings.changes(before, {"Shop/Orders Guard.Acquire": settings(namespace="Shop2/Orders")})
    assert renamed.reruns and "pass namespace='Shop/Orders' to keep its records" in renamed.message
    (newer,) = key_settings.changes(before, {"Shop/Orders Guard.Acquire": settings(key_format=5)})
    assert newer.reruns and "format changes from 4 to 5" in newer.message
    (gone,) = key_settings.changes(before, {})
    assert gone.reruns and "no guard has this namespace any more" in gone.message


def test_a_guard_moved_with_its_namespace_kept_finds_its_records_and_a_changed_payload_fails_duplicates():
    before = {"Shop/Orders Guard.Acquire": settings()}
    moved = {"Shop/Checkout Charge.Acquire": settings()}
    assert key_settings.changes(before, moved) == []
    (payload,) = key_settings.changes(before, {"Shop/Orders Guard.Acquire": settings(payload=("paths", ["$.amount"]))})
    assert (payload.reruns, payload.fails) == (False, True) and schema.PAYLOAD_MISMATCH in payload.message


def synthesized(directory: Path, *, stack_name: str = "Shop", key_path: str = "$.order.id", location=None) -> Path:
    """A stack with an IdempotentStateMachine (a guard inside it too) and a guard of the user's own."""
    app = App(outdir=str(directory))
    stack = Stack(app, stack_name)
    table = IdempotencyTable(stack, "Idempotency")
    key = IdempotencyKey.from_paths(key_path)
    inner = IdempotencyGuard(stack, "Charge", table=table, body=sfn.Pass(stack, "ChargeCard"), key=key)
    IdempotentStateMachine(stack, "Orders", table=table, definition=inner, key=key, definition_location=location)
    own = IdempotencyGuard(stack, "Ship", table=table, body=sfn.Pass(stack, "ShipIt"), payload=IdempotencyPayload.none())
    sfn.StateMachine(stack, "Shipping", definition_body=sfn.DefinitionBody.from_chainable(own))
    return Path(app.synth().directory)


@pytest.fixture(scope="module")
def before(tmp_path_factory):
    return synthesized(tmp_path_factory.mktemp("before"))


def test_every_guard_of_a_template_is_read_whole_workflows_nested_guards_and_guards_of_your_own(before):
    from idempotent_constructs.cli.key_changes_command import settings_in

    found = settings_in(before / "Shop.template.json")
    assert {where.split(" ")[1]: s.namespace for where, s in found.items()} == {
        "Idempotency.Acquire": "Shop/Orders",
        "Charge.Acquire": "Shop/Charge",
        "Ship.Acquire": "Shop/Ship",
    }
    assert found["Shop/Shipping Ship.Acquire"] == settings(
        key=("whole_input", None), payload=("none", None), namespace="Shop/Ship"
    )


def test_key_changes_says_nothing_changes_for_a_respelled_path_even_with_definitions_in_assets(before, tmp_path):
    after = synthesized(tmp_path, key_path="$['order']['id']", location=DefinitionLocation.ASSET)
    result = CliRunner().invoke(cli, ["key-changes", str(before), str(after)])
    assert (result.exit_code, result.output) == (
        0,
        "No change to any record id: duplicates of earlier work are found as before.\n",
    )


def test_key_changes_names_each_namespace_a_renamed_stack_changes_and_exits_1(before, tmp_path):
    after = synthesized(tmp_path, stack_name="Store")
    result = CliRunner().invoke(cli, ["key-changes", str(before / "Shop.template.json"), str(after / "Store.template.json")])
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert len(lines) == 3 and all(line.startswith("RERUNS  Shop/") for line in lines)
    assert "RERUNS  Shop/Ship (Store/Shipping Ship.Acquire): the namespace changes to 'Store/Ship'" in result.output
    as_json = json.loads(CliRunner().invoke(cli, ["key-changes", "--json", str(before), str(after)]).output)
    assert sorted(change["namespace"] for change in as_json) == ["Shop/Charge", "Shop/Orders", "Shop/Ship"]


def test_key_from_a_template_computes_the_id_the_guard_computes(before):
    payload = {"order": {"id": "o-1"}, "amount": 3}
    result = CliRunner().invoke(cli, ["key", "--from", str(before), "--guard", "Charge", "-"], input=json.dumps(payload))
    assert result.exit_code == 0, result.output
    assert result.output.strip() == IdempotencyKey.from_paths("$.order.id").record_id(payload, namespace="Shop/Charge")
    several = CliRunner().invoke(cli, ["key", "--from", str(before), "-"], input="{}")
    assert several.exit_code == 1 and "3 guards in" in several.output and "name one with --guard" in several.output
