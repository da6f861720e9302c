"""Emulator end-to-end: `show`, `list`, `reset`, `stale` and `purge-expired` (idempotent_constructs/cli/records_command.py)."""

from __future__ import annotations

import json
import re
import time

import pytest

from idempotent_constructs.cli import Target
from idempotent_constructs.errors import RecordInProgressError
from idempotent_constructs.lambda_src import schema
from idempotent_constructs.runtime import operations
from idempotent_constructs.runtime.operations import get_record
from tests.emulator.cli.helpers import item, one_line_error, run_cli


# --- show -----------------------------------------------------------------------------------------
def test_show_prints_a_record_the_workflow_wrote_with_its_status_expiry_execution_and_result(behaviour, unique):
    execution = behaviour.run("Echo", {"shown": unique})
    (record_id,) = behaviour.records_of(execution, "Idempotency")
    result = run_cli("show", record_id, "--table", behaviour.table_name("Idempotency"))
    assert result.exit_code == 0, result.output
    assert record_id in result.stdout and schema.COMPLETED in result.stdout
    assert re.search(
        r"expiration\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ \(expires in (1d 0h|23h 59m)\)", result.stdout
    )  # a day from completion
    assert execution.arn in result.stdout and f'"shown": "{unique}"' in result.stdout


def test_show_with_json_prints_the_record_as_plain_json(behaviour, unique):
    execution = behaviour.run("Echo", {"shown": unique})
    (record_id,) = behaviour.records_of(execution, "Idempotency")
    shown = json.loads(run_cli("show", record_id, "--json", "--table", behaviour.table_name("Idempotency")).stdout)
    assert shown[schema.ID] == record_id and shown[schema.STATUS] == schema.COMPLETED
    assert isinstance(shown[schema.EXPIRATION], int) and shown[schema.EXPIRATION] > time.time()
    assert shown[schema.OWNER].startswith(f"{execution.arn}#")


def test_show_of_an_unknown_key_says_so_and_how_to_find_the_right_one(behaviour, unique):
    line = one_line_error(run_cli("show", f"Behaviour/Echo#{unique}", "--table", behaviour.table_name("Idempotency")))
    assert f"no record 'Behaviour/Echo#{unique}' in table {behaviour.table_name('Idempotency')}" in line
    assert "list --namespace Behaviour/Echo" in line


def test_show_of_something_that_is_not_a_record_id_is_a_usage_error():
    result = run_cli("show", "Behaviour/Echo", "--table", "any")
    assert result.exit_code == 2 and "'Behaviour/Echo' is not a record id" in " ".join(result.stderr.split())


# --- list -----------------------------------------------------------------------------------------
def test_list_shows_a_readable_table_of_a_namespaces_records(behaviour, unique):
    runs = [behaviour.run("Echo", {"listed": unique, "n": n}) for n in range(2)]
    ids = [record_id for run in runs for record_id in behaviour.records_of(run, "Idempotency")]
    result = run_cli("list", "--namespace", "Behaviour/Echo", "--all", "--table", behaviour.table_name("Idempotency"))
    assert result.exit_code == 0, result.output
    assert re.search(r"RECORD ID\s+┃\s+STATUS\s+┃\s+EXPIRES\s+┃\s+EXECUTION\s+┃\s+RESULT", result.stdout)
    for run, record_id in zip(runs, ids, strict=False):
        line = next(line for line in result.stdout.splitlines() if record_id in line)
        assert schema.COMPLETED in line and run.arn.rpartition(":")[2] in line and "B inline" in line
    assert "Behaviour/EchoTwin#" not in result.stdout


def test_list_filters_by_namespace_status_and_namespace_prefix(scratch):
    table = scratch(
        item("Orders/A#1", schema.COMPLETED),
        item("Orders/A#2", schema.INPROGRESS),
        item("Orders/AB#3", schema.COMPLETED),
        item("Orders/B#4", schema.FAILED),
        item("Other#5", schema.COMPLETED),
    )

    def listed(*options: str) -> list[str]:
        result = run_cli("list", "--json", "--table", table, *options)
        return sorted(record["id"] for record in json.loads(result.stdout)["records"])

    assert listed("--namespace", "Orders/A") == ["Orders/A#1", "Orders/A#2"]
    assert listed("--namespace", "Orders/A", "--status", "completed") == ["Orders/A#1"]
    assert listed("--namespace", "Orders/*") == ["Orders/A#1", "Orders/A#2", "Orders/AB#3", "Orders/B#4"]
    assert listed("--status", "FAILED") == ["Orders/B#4"]
    assert listed() == ["Orders/A#1", "Orders/A#2", "Orders/AB#3", "Orders/B#4", "Other#5"]


def test_list_pages_through_every_record_once_with_limit_and_after(scratch):
    table = scratch(*(item(f"Orders#{n:02d}", schema.COMPLETED) for n in range(7)))
    seen, after, pages = [], [], 0
    while True:
        page = json.loads(run_cli("list", "--json", "--limit", "3", "--table", table, *after).stdout)
        seen += [record["id"] for record in page["records"]]
        pages += 1
        if page["next"] is None:
            break
        assert page["next"] == page["records"][-1]["id"]
        after = ["--after", page["next"]]
    assert pages == 3 and sorted(seen) == [f"Orders#{n:02d}" for n in range(7)] and len(seen) == 7


def test_a_readable_page_says_how_to_get_the_next_one(scratch):
    table = scratch(*(item(f"Orders#{n}", schema.COMPLETED) for n in range(3)))
    result = run_cli("list", "--limit", "2", "--table", table)
    (hint,) = [line for line in result.stdout.splitlines() if line.startswith("More records")]
    following = re.search(r"--after '([^']+)'", hint).group(1)
    assert following in result.stdout.split(hint)[0]
    assert len(json.loads(run_cli("list", "--json", "--after", following, "--table", table).stdout)["records"]) == 1


def test_list_with_nothing_matching_says_so(scratch):
    table = scratch(item("Orders#1", schema.COMPLETED))
    result = run_cli("list", "--namespace", "Refunds", "--status", "FAILED", "--table", table)
    assert result.exit_code == 0 and result.stdout.strip() == f"No records in table {table}, namespace Refunds, status FAILED."


def test_a_listing_shows_a_progress_bar_on_a_terminal_and_none_when_piped(scratch):
    table = scratch(*(item(f"Orders#{n}", schema.COMPLETED) for n in range(3)))
    on_terminal = run_cli("list", "--table", table, env={"TTY_COMPATIBLE": "1", "TTY_INTERACTIVE": "1"})
    piped = run_cli("list", "--table", table, env={"TTY_COMPATIBLE": "0"})
    assert "Listing records" in on_terminal.stderr and "of ~3 records" in on_terminal.stderr
    assert piped.stderr == ""


def test_one_namespaces_records_are_read_through_the_tables_index_in_id_order_and_a_prefix_is_scanned(behaviour, unique):
    # Issue 52: the namespace index (schema.NAMESPACE_INDEX), not a scan that reads the whole table.
    runs = [behaviour.run("Echo", {"indexed": unique, "n": n}) for n in range(5)]
    ours = {record_id for run in runs for record_id in behaviour.records_of(run, "Idempotency")}
    client, calls = behaviour.emulator.client("dynamodb"), []
    client.meta.events.register("before-call.dynamodb.*", lambda model, **_: calls.append(model.name))
    table = behaviour.table_name("Idempotency")
    listed = [record[schema.ID]["S"] for record in operations.list_records(table, namespace="Behaviour/Echo", client=client)]
    assert ours <= set(listed) and listed == sorted(listed) and all(i.startswith("Behaviour/Echo#") for i in listed)
    assert "Scan" not in calls and "Query" in calls and "BatchGetItem" in calls
    after = sorted(ours)[2]
    resumed = [r[schema.ID]["S"] for r in operations.list_records(table, namespace="Behaviour/Echo", after=after, client=client)]
    assert resumed == [record_id for record_id in listed if record_id > after]
    calls.clear()
    prefixed = {r[schema.ID]["S"] for r in operations.list_records(table, namespace="Behaviour/Ec*", client=client)}
    assert ours <= prefixed and "Scan" in calls


def test_a_namespace_the_index_holds_nothing_of_is_scanned_for_records_written_without_a_shard(behaviour, unique):
    # Powertools' records, or the library's written before the index: no shard attribute.
    table, client = behaviour.table_name("Idempotency"), behaviour.emulator.client("dynamodb")
    client.put_item(TableName=table, Item=item(f"Legacy{unique}#1", schema.COMPLETED))
    listed = [r[schema.ID]["S"] for r in operations.list_records(table, namespace=f"Legacy{unique}", client=client)]
    assert listed == [f"Legacy{unique}#1"]


def test_a_table_without_the_namespace_index_is_listed_by_a_scan(scratch):
    table = scratch(item("Orders#1", schema.COMPLETED), item("Other#1", schema.COMPLETED))
    assert [r[schema.ID]["S"] for r in operations.list_records(table, namespace="Orders")] == ["Orders#1"]


# --- reset ----------------------------------------------------------------------------------------
def test_reset_asks_first_and_keeps_the_record_when_the_answer_is_no(behaviour, unique):
    execution = behaviour.run("Echo", {"kept": unique})
    (record_id,) = behaviour.records_of(execution, "Idempotency")
    table = behaviour.table_name("Idempotency")
    line = one_line_error(run_cli("reset", record_id, "--table", table, input="n\n"))
    assert "not reset: not confirmed (pass --yes" in line
    assert get_record(table, record_id, client=behaviour.emulator.client("dynamodb"))[schema.STATUS]["S"] == schema.COMPLETED


def test_reset_confirmed_deletes_the_record_and_the_next_request_runs_the_work_again(behaviour, unique):
    first = behaviour.run("Echo", {"again": unique})
    (record_id,) = behaviour.records_of(first, "Idempotency")
    result = run_cli("reset", record_id, "--table", behaviour.table_name("Idempotency"), input="y\n")
    assert result.exit_code == 0, result.output
    assert f"Reset {record_id}: its COMPLETED record is deleted." in result.stdout
    second = behaviour.run("Echo", {"again": unique})
    assert "Identity" in second.entered_states() and record_id in behaviour.records_of(second, "Idempotency")


def test_reset_of_a_key_whose_holder_still_runs_refuses_until_the_holder_is_named(behaviour, emulator, unique):
    # Issue 52: Step Functions is asked; a reset named the holder, not --force, to reset it anyway.
    table = behaviour.table_name("Idempotency")
    with emulator.hold("SlowWork") as body:
        holder = behaviour.start("Slow", {"id": unique})  # its execution ARN
        body.arrived()
        (record_id,) = behaviour.records_of(holder, "Idempotency")
        line = one_line_error(run_cli("reset", record_id, "--yes", "--table", table))
        assert f"not reset: {record_id} is in progress, held by {holder}" in line
        assert "(its execution is RUNNING, as Step Functions says)" in line
        assert "a reset now would let a duplicate run the work alongside it" in line and f"pass --holder {holder} " in line
        other = one_line_error(run_cli("reset", record_id, "--yes", "--holder", holder + "x", "--table", table))
        assert f"is held by {holder}, not by {holder}x" in other
        result = run_cli("reset", record_id, "--yes", "--holder", holder, "--table", table)
        assert result.exit_code == 0 and f"Reset {record_id}: its INPROGRESS record is deleted." in result.stdout


def test_reset_of_a_key_whose_holder_step_functions_does_not_know_goes_by_its_lease(scratch):
    # Unknown to Step Functions: ended long ago, or started a moment ago (DescribeExecution is eventually
    # consistent), so it is judged by its lease.
    lease_end = str(int(time.time() + 600) * 1000)
    table = scratch(
        item("Orders#1", schema.INPROGRESS, **{schema.IN_PROGRESS_EXPIRATION: {"N": lease_end}}),
        item("Orders#2", schema.INPROGRESS, **{schema.IN_PROGRESS_EXPIRATION: {"N": "1000"}}),
    )
    line = one_line_error(run_cli("reset", "Orders#1", "--yes", "--table", table))
    assert "(its lease runs until " in line and "Step Functions does not know its execution, not yet or no more)" in line
    result = run_cli("reset", "Orders#2", "--yes", "--table", table)
    assert result.exit_code == 0, result.output
    assert "Orders#2 is in progress, but its holder can no longer act on it: its lease has lapsed (Step Functions" in (
        result.stdout
    )
    assert "Reset Orders#2: its INPROGRESS record is deleted." in result.stdout and scratch.ids() == ["Orders#1"]


def test_reset_of_a_key_whose_express_holder_is_within_its_lease_refuses_and_says_why(scratch):
    express = "arn:aws:states:us-east-1:123456789012:express:Orders:run-1:0f3a"
    lease_end = int(time.time() + 600) * 1000
    table = scratch(
        item("Orders#1", schema.INPROGRESS, owner=express, **{schema.IN_PROGRESS_EXPIRATION: {"N": str(lease_end)}}),
        item("Orders#2", schema.INPROGRESS, owner=express, **{schema.IN_PROGRESS_EXPIRATION: {"N": "1000"}}),
    )
    line = one_line_error(run_cli("reset", "Orders#1", "--yes", "--table", table))
    assert f"not reset: Orders#1 is in progress, held by {express} (lease until " in line
    assert "(Step Functions does not describe an Express execution)" in line and f"pass --holder {express} " in line
    lapsed = run_cli("reset", "Orders#2", "--yes", "--table", table)
    assert lapsed.exit_code == 0 and "its lease has lapsed" in lapsed.stdout
    assert scratch.ids() == ["Orders#1"]


def test_reset_of_a_record_another_tool_left_in_progress_without_an_owner_goes_by_its_lease_as_read(scratch):
    # Powertools' idempotency for a function writes records of this schema without an owner token.
    lease_end = str(int(time.time() + 600) * 1000)
    table = scratch(
        item("Orders#1", schema.INPROGRESS, owner=None, **{schema.IN_PROGRESS_EXPIRATION: {"N": lease_end}}),
        item("Orders#2", schema.INPROGRESS, owner=None, **{schema.IN_PROGRESS_EXPIRATION: {"N": "1000"}}),
        item("Orders#3", schema.INPROGRESS, owner=None),  # no lease written either
    )
    assert "(its lease runs until " in one_line_error(run_cli("reset", "Orders#1", "--yes", "--table", table))
    for lapsed in ("Orders#2", "Orders#3"):
        result = run_cli("reset", lapsed, "--yes", "--table", table)
        assert result.exit_code == 0 and f"Reset {lapsed}: its INPROGRESS record is deleted." in result.stdout, result.output
    assert scratch.ids() == ["Orders#1"]


def test_a_reset_by_the_lease_it_read_keeps_a_record_acquired_again_since(emulator, scratch):
    table = scratch(item("Orders#1", schema.INPROGRESS, owner=None, **{schema.IN_PROGRESS_EXPIRATION: {"N": "1000"}}))
    client = emulator.client("dynamodb")
    client.update_item(
        TableName=table,
        Key={schema.ID: {"S": "Orders#1"}},
        UpdateExpression="SET #lease = :lease",
        ExpressionAttributeNames={"#lease": schema.IN_PROGRESS_EXPIRATION},
        ExpressionAttributeValues={":lease": {"N": "2000"}},
    )
    with pytest.raises(RecordInProgressError):
        operations.reset(table, "Orders#1", lease=1000, client=client)
    assert operations.reset(table, "Orders#1", lease=2000, client=client)[schema.ID] == {"S": "Orders#1"}


def test_a_namespace_reset_says_first_what_it_would_do_keeps_running_holders_and_logs_what_it_deleted(scratch, tmp_path):
    lease_end = str(int(time.time() + 600) * 1000)
    table = scratch(
        item("Orders#1", schema.COMPLETED),
        item("Orders#2", schema.FAILED),
        item("Orders#3", schema.INPROGRESS, owner=None, **{schema.IN_PROGRESS_EXPIRATION: {"N": lease_end}}),
        item("Other#1", schema.COMPLETED),
    )
    dry = run_cli("reset", "--namespace", "Orders", "--dry-run", "--table", table)
    assert dry.exit_code == 0, dry.output
    assert "Kept: Orders#3 is in progress" in dry.stdout and "Would reset 2 records in " in dry.stdout
    assert "  Orders#1: COMPLETED" in dry.stdout and scratch.ids() == ["Orders#1", "Orders#2", "Orders#3", "Other#1"]
    log = tmp_path / "reset.jsonl"
    done = run_cli("reset", "--namespace", "Orders", "--status", "completed", "--yes", "--log", str(log), "--table", table)
    assert done.exit_code == 0, done.output
    assert f"Reset 1 record in {table}, namespace Orders, status COMPLETED. What was reset is in {log}." in done.stdout
    assert scratch.ids() == ["Orders#2", "Orders#3", "Other#1"]
    (entry,) = [json.loads(line) for line in log.read_text().splitlines()]
    assert (entry["id"], entry["status"], entry["table"]) == ("Orders#1", schema.COMPLETED, table)
    refused = run_cli("reset", "--namespace", "Orders", "--table", table, input="n\n")
    assert "not reset: not confirmed" in one_line_error(refused) and scratch.ids() == ["Orders#2", "Orders#3", "Other#1"]


def test_a_reset_takes_a_record_id_or_a_namespace_and_the_namespace_options_only_with_a_namespace():
    assert run_cli("reset", "--table", "any").exit_code == 2
    assert run_cli("reset", "Orders#1", "--namespace", "Orders", "--table", "any").exit_code == 2
    assert run_cli("reset", "Orders#1", "--dry-run", "--table", "any").exit_code == 2
    assert run_cli("reset", "--namespace", "Orders", "--holder", "arn", "--table", "any").exit_code == 2


# --- stale ----------------------------------------------------------------------------------------
def test_stale_reports_the_records_in_progress_whose_holder_has_ended_and_deletes_nothing(scratch):
    live = "arn:aws:states:us-east-1:123456789012:express:Orders:run-2:0f3a"
    lease_end = str(int(time.time() + 600) * 1000)
    table = scratch(
        item("Orders#ended", schema.INPROGRESS, **{schema.IN_PROGRESS_EXPIRATION: {"N": "1000"}}),  # unknown, lapsed
        item("Orders#live", schema.INPROGRESS, owner=live, **{schema.IN_PROGRESS_EXPIRATION: {"N": lease_end}}),
        item("Orders#done", schema.COMPLETED),
    )
    result = run_cli("stale", "--table", table)
    assert result.exit_code == 0, result.output
    assert "Orders#ended: held by arn:aws:states:us-east-1:123456789012:execution:Orders:run-1; its lease has lapsed" in (
        result.stdout
    )
    assert "Orders#live" not in result.stdout and "Orders#done" not in result.stdout
    assert f"1 record in progress whose holder has ended in {table}; `reset RECORD_ID` deletes one." in result.stdout
    assert [entry["id"] for entry in json.loads(run_cli("stale", "--json", "--table", table).stdout)] == ["Orders#ended"]
    assert scratch.ids() == ["Orders#done", "Orders#ended", "Orders#live"]


def test_reset_of_an_unknown_key_says_so(scratch):
    line = one_line_error(run_cli("reset", "Orders#gone", "--yes", "--table", scratch()))
    assert "no record 'Orders#gone'" in line


# --- purge-expired --------------------------------------------------------------------------------
def expired_and_live(scratch) -> str:
    now = int(time.time())
    return scratch(
        item("Orders#done-expired", schema.COMPLETED, expiration=now - 600),
        item("Orders#failed-expired", schema.FAILED, expiration=now - 3600),
        item("Orders#powertools-expired", schema.COMPLETED, expiration=now - 600, owner=None),
        item("Orders#done-live", schema.COMPLETED, expiration=now + 3600),
        item("Orders#just-expired", schema.COMPLETED, expiration=now - 60),  # within the 5-minute grace
        item("Orders#held-expired", schema.INPROGRESS, expiration=now - 600),
        item("Orders#no-expiration", schema.COMPLETED),
    )


def test_purge_deletes_expired_finished_records_and_keeps_live_ones_and_those_in_progress(scratch):
    result = run_cli("purge-expired", "--table", expired_and_live(scratch))
    assert result.exit_code == 0, result.output
    assert "Deleted 3 expired records of 7 scanned" in result.stdout
    assert "Kept 1 expired record in progress: a purge never deletes one" in result.stdout
    assert scratch.ids() == ["Orders#done-live", "Orders#held-expired", "Orders#just-expired", "Orders#no-expiration"]


def test_without_describe_table_the_progress_bar_goes_without_a_total(emulator, scratch):
    client = emulator.client("dynamodb")
    denied = client.exceptions.ClientError({"Error": {"Code": "AccessDeniedException", "Message": "no"}}, "DescribeTable")

    class NoDescribeTable:
        exceptions = client.exceptions

        def describe_table(self, **_):
            raise denied

    assert Target(scratch(), NoDescribeTable()).total() is None


def test_purge_as_a_dry_run_counts_and_deletes_nothing(scratch):
    table = expired_and_live(scratch)
    summary = json.loads(run_cli("purge-expired", "--dry-run", "--json", "--table", table).stdout)
    assert summary == {"dry_run": True, "scanned": 7, "deleted": 3, "in_progress": 1, "changed": 0}
    assert len(scratch.ids()) == 7
