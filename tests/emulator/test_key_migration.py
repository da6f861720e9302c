"""Key changes without rerunning work (contract B3): `key-migrate` copies earlier work's records to the ids the
changed key computes, reading each record's input from its holder's history, so that after the deploy a
duplicate of that work replays."""

from __future__ import annotations

import json
from pathlib import Path

from aws_cdk import App, Stack
from aws_cdk import aws_stepfunctions as sfn

from idempotent_constructs import IdempotencyKey, IdempotencyTable, IdempotentStateMachine
from tests.emulator.cli.helpers import run_cli

STACK = "KeyChange"


def revision(number: int) -> Stack:
    """Revision 1 keys an order by its id; revision 2 by its id and its customer: another selection, so every
    id changes."""
    stack = Stack(App(), STACK)
    paths = ["$.order.id"] if number == 1 else ["$.order.id", "$.customer"]
    IdempotentStateMachine(
        stack,
        "Orders",
        table=IdempotencyTable(stack, "Idempotency"),
        definition=sfn.Pass(stack, "Charge", result=sfn.Result.from_object({"charged": True})),
        key=IdempotencyKey.from_paths(*paths),
    )
    return stack


def template_file(stack: Stack) -> Path:
    assembly = stack.node.root.synth()
    return Path(assembly.get_stack_by_name(STACK).template_full_path)


def test_after_key_migrate_a_duplicate_of_earlier_work_replays_under_the_changed_key(emulator, unique):
    deployment = emulator.deploy_stack(revision(1))
    before = template_file(revision(1))
    after = template_file(revision(2))
    orders = [{"order": {"id": f"{unique}-{n}"}, "customer": "c-7"} for n in range(3)]
    for order in orders:
        assert deployment.run("Orders", order).status == "SUCCEEDED"
    table = deployment.table_name("Idempotency")
    ids_before = {item["id"]["S"] for item in emulator.client("dynamodb").scan(TableName=table)["Items"]}

    dry = json.loads(run_cli("key-migrate", str(before), str(after), "--table", table, "--dry-run", "--json").output)
    ((planned,),) = [[entry] for entry in dry]
    assert len(planned["copied"]) == 3 and not planned["unmatched"] and not planned["in_progress"]
    assert {item["id"]["S"] for item in emulator.client("dynamodb").scan(TableName=table)["Items"]} == ids_before

    result = run_cli("key-migrate", str(before), str(after), "--table", table)
    assert result.exit_code == 0, result.output
    assert "copied 3" in result.output
    again = run_cli("key-migrate", str(before), str(after), "--table", table, "--json")
    assert again.exit_code == 0, again.output  # a second run finds the copies (3) and the records copied (3)
    ((entry,),) = [json.loads(again.output)]
    assert (len(entry["present"]), entry["copied"], entry["unmatched"]) == (6, [], [])

    updated = emulator.update_stack(revision(2))
    for order in orders:
        duplicate = updated.run("Orders", order)
        assert (duplicate.status, duplicate.output) == ("SUCCEEDED", {"charged": True}), duplicate.cause
        assert "Charge" not in duplicate.entered_states()  # replayed from the copied record
    new_work = updated.run("Orders", {"order": {"id": f"{unique}-new"}, "customer": "c-7"})
    assert "Charge" in new_work.entered_states()  # other work still runs
