"""The `idempotent-constructs` command-line tool against the emulator (issue 5).

moto runs in this process, so the tool is invoked in-process (click's CliRunner) and its boto3
clients reach moto like any other; one test relays real HTTP from AWS_ENDPOINT_URL to moto instead.
Every invocation lets exceptions through (``catch_exceptions=False``): a test fails on any traceback.
"""

from __future__ import annotations

import http.server
import json
import re
import subprocess
import sys
import threading
import time
import uuid
from typing import ClassVar

import pytest
from click.testing import CliRunner, Result

from idempotent_constructs import IdempotencyKey
from idempotent_constructs.cli import Target, cli
from idempotent_constructs.lambda_src import schema
from idempotent_constructs.operations import get_record

OWNER = "arn:aws:states:us-east-1:123456789012:execution:Orders:run-1"


def run_cli(*args: str, input: str | None = None, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=input, env=env, catch_exceptions=False, prog_name="idempotent-constructs")


def one_line_error(result: Result) -> str:
    """The error an operator sees: exit status 1 and exactly one line, on stderr."""
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("Error: ")
    return line


def item(record_id: str, status: str, *, expiration: int | None = None, owner: str | None = OWNER, **extra: dict) -> dict:
    """A record in DynamoDB JSON."""
    attributes = {schema.ID: {"S": record_id}, schema.STATUS: {"S": status}, **extra}
    if expiration is not None:
        attributes[schema.EXPIRATION] = {"N": str(expiration)}
    if owner is not None:
        attributes[schema.OWNER] = {"S": f"{owner}#{uuid.uuid4().hex}"}
    return attributes


@pytest.fixture
def scratch(emulator, scratch_table):
    """An empty table of the idempotency schema that only this test uses, and a function to fill it."""
    client, name = emulator.client("dynamodb"), scratch_table

    def put(*items: dict) -> str:
        for attributes in items:
            client.put_item(TableName=name, Item=attributes)
        return name

    put.name = name
    put.ids = lambda: sorted(entry["id"]["S"] for entry in client.scan(TableName=name)["Items"])
    return put


# --- key ------------------------------------------------------------------------------------------
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


def test_key_with_json_shows_the_key_spec_and_the_selection_the_id_is_hashed_from():
    result = run_cli(
        "key",
        "--namespace",
        "Stack/Orders",
        "--path",
        "$.order.id",
        "--path",
        "$.customer",
        "--json",
        input='{"order": {"id": 7, "lines": []}, "customer": "c-1"}',
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
    }


def test_an_invalid_jsonata_key_is_refused_with_the_reason():
    result = run_cli("key", "--namespace", "Stack/Orders", "--jsonata", "$states.input.(", input="{}")
    assert result.exit_code == 2 and "'$states.input.(' is not a JSONata expression" in result.output


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


def test_reset_of_a_key_in_progress_refuses_and_says_why(scratch):
    lease_end = int(time.time() + 600) * 1000
    table = scratch(item("Orders#1", schema.INPROGRESS, **{schema.IN_PROGRESS_EXPIRATION: {"N": str(lease_end)}}))
    line = one_line_error(run_cli("reset", "Orders#1", "--yes", "--table", table))
    assert "not reset: Orders#1 is in progress, held by " + OWNER in line
    assert "which may still be running; a reset now would let a duplicate run the work alongside it" in line
    assert "pass --force if you know the execution is gone" in line and "lease until" in line
    assert scratch.ids() == ["Orders#1"]


def test_reset_with_force_deletes_a_record_in_progress(scratch):
    table = scratch(item("Orders#1", schema.INPROGRESS))
    result = run_cli("reset", "Orders#1", "--force", "--yes", "--table", table)
    assert result.exit_code == 0 and "Reset Orders#1: its INPROGRESS record is deleted." in result.stdout
    assert scratch.ids() == []


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


# --- which table ----------------------------------------------------------------------------------
def table_resource(ttl: bool = False, key: str = "id") -> dict:
    properties = {
        "KeySchema": [{"AttributeName": key, "KeyType": "HASH"}],
        "AttributeDefinitions": [{"AttributeName": key, "AttributeType": "S"}],
        "BillingMode": "PAY_PER_REQUEST",
    }
    if ttl:
        properties["TimeToLiveSpecification"] = {"AttributeName": "expiration", "Enabled": True}
    return {"Type": "AWS::DynamoDB::Table", "Properties": properties}


@pytest.fixture
def stack(emulator):
    """Deploys a CloudFormation template of plain tables; returns the stack's table names by logical id."""
    cloudformation, dynamodb, names = emulator.client("cloudformation"), emulator.client("dynamodb"), []

    def deploy(resources: dict, outputs: dict | None = None) -> dict[str, str]:
        name = f"Cli{uuid.uuid4().hex[:8]}"
        cloudformation.create_stack(StackName=name, TemplateBody=json.dumps({"Resources": resources, "Outputs": outputs or {}}))
        names.append(name)
        tables = {
            r["LogicalResourceId"]: r["PhysicalResourceId"]
            for r in cloudformation.list_stack_resources(StackName=name)["StackResourceSummaries"]
        }
        for logical_id, resource in resources.items():
            if "TimeToLiveSpecification" in resource["Properties"]:
                # moto ignores TimeToLiveSpecification; CloudFormation applies it on AWS.
                dynamodb.update_time_to_live(
                    TableName=tables[logical_id], TimeToLiveSpecification=resource["Properties"]["TimeToLiveSpecification"]
                )
        deploy.name = name
        return tables

    yield deploy
    for name in names:
        cloudformation.delete_stack(StackName=name)


def resolved_table(stack_name: str) -> str:
    """The table the tool uses for ``--stack stack_name`` (named in its answer for an unknown record)."""
    line = one_line_error(run_cli("show", "Probe#1", "--stack", stack_name))
    return re.search(r"no record 'Probe#1' in table (\S+):", line).group(1)


def test_a_stack_output_that_names_the_idempotency_table_wins(stack):
    tables = stack(
        {"Records": table_resource(), "Other": table_resource()},
        {"Arn": {"Value": {"Fn::GetAtt": ["Records", "Arn"]}, "Description": "The idempotency table's ARN"}},
    )
    assert resolved_table(stack.name) == tables["Records"]


def test_without_an_output_the_stacks_one_table_keyed_by_id_is_the_table(stack):
    tables = stack({"Records": table_resource(), "Orders": table_resource(key="orderId")})
    assert resolved_table(stack.name) == tables["Records"]


def test_of_several_tables_keyed_by_id_the_one_expiring_on_expiration_is_the_table(behaviour):
    table = behaviour.table_name("Idempotency")
    assert behaviour.table_name("SideEffects") != table
    assert resolved_table("Behaviour") == table


def test_a_stack_whose_tables_cannot_be_told_apart_names_them_and_asks_for_the_table(stack):
    tables = stack({"First": table_resource(), "Second": table_resource()})
    line = one_line_error(run_cli("list", "--stack", stack.name))
    assert f"stack '{stack.name}' has several tables that may hold idempotency records" in line
    assert f"First={tables['First']}" in line and f"Second={tables['Second']}" in line and "pass the table name" in line


def test_a_stack_without_an_idempotency_table_says_so(stack):
    stack({"Orders": table_resource(key="orderId")})
    line = one_line_error(run_cli("list", "--stack", stack.name))
    assert f"stack '{stack.name}' has no idempotency table" in line


def test_an_unknown_stack_or_table_says_so_in_one_line(emulator):
    assert "stack 'NoSuchStack' not found in region us-east-1" in one_line_error(run_cli("list", "--stack", "NoSuchStack"))
    assert "table 'no-such-table' not found in region us-east-1" in one_line_error(
        run_cli("show", "a#b", "--table", "no-such-table")
    )


def test_the_table_comes_from_table_or_stack_but_not_both_or_neither(emulator, monkeypatch):
    monkeypatch.delenv(schema.TABLE_NAME_ENV, raising=False)
    neither, both = run_cli("list"), run_cli("list", "--table", "t", "--stack", "s")
    assert neither.exit_code == both.exit_code == 2
    assert "name the table with --table NAME" in neither.stderr and "pass one of them" in both.stderr


def test_the_table_may_come_from_idempotency_table_name(scratch):
    table = scratch(item("Orders#1", schema.COMPLETED))
    result = run_cli("list", "--json", env={schema.TABLE_NAME_ENV: table})
    assert [record["id"] for record in json.loads(result.stdout)["records"]] == ["Orders#1"]


# --- credentials, region, endpoint ----------------------------------------------------------------
@pytest.fixture
def no_aws_configuration(monkeypatch, tmp_path):
    """No credentials anywhere botocore looks (moto still intercepts requests: it cannot sign them)."""
    for name in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_SECURITY_TOKEN",
        "AWS_PROFILE",
        "AWS_DEFAULT_PROFILE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_ROLE_ARN",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def test_without_credentials_the_tool_says_so_in_one_line(scratch, no_aws_configuration):
    line = one_line_error(run_cli("list", "--table", scratch.name))
    assert line == (
        "Error: no AWS credentials found: pass --profile or set AWS_PROFILE, or set AWS_ACCESS_KEY_ID "
        "and AWS_SECRET_ACCESS_KEY (any values for a local emulator)"
    )


def test_an_unknown_profile_or_no_region_says_so_in_one_line(scratch, no_aws_configuration, monkeypatch):
    assert "The config profile (nobody) could not be found" in one_line_error(
        run_cli("list", "--table", scratch.name, "--profile", "nobody")
    )
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    assert "no AWS region: pass --region or set AWS_REGION" in one_line_error(run_cli("list", "--table", scratch.name))


def test_the_region_comes_from_aws_region_as_for_the_aws_cli_and_the_cdk(scratch, monkeypatch):
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    monkeypatch.setenv("AWS_REGION", "eu-west-3")  # the emulator's table is in us-east-1: not found there
    assert f"table {scratch.name!r} not found in region eu-west-3" in one_line_error(
        run_cli("show", "a#b", "--table", scratch.name)
    )


class _Relay(http.server.BaseHTTPRequestHandler):
    """An HTTP endpoint in front of moto: hands each request to moto as if it went to AWS."""

    targets: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        from botocore.awsrequest import AWSPreparedRequest, HTTPHeaders
        from moto.core.models import botocore_stubber

        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        region, service = re.search(r"Credential=[^/]+/\d+/([^/]+)/([^/]+)/", self.headers["Authorization"]).groups()
        headers = HTTPHeaders()
        for name, value in self.headers.items():
            headers[name] = value
        self.targets.append(self.headers.get("X-Amz-Target", service))
        status, response_headers, response_body = botocore_stubber.process_request(
            AWSPreparedRequest(
                method="POST",
                url=f"https://{service}.{region}.amazonaws.com{self.path}",
                headers=headers,
                body=body,
                stream_output=False,
            )
        )
        response_body = response_body.encode() if isinstance(response_body, str) else response_body
        self.send_response(status)
        for name, value in response_headers.items():
            if name.lower() not in ("content-length", "server", "date"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(response_body)))
        self.end_headers()
        self.wfile.write(response_body)

    def log_message(self, *args: object) -> None:
        pass


def test_the_tool_talks_to_the_endpoint_in_aws_endpoint_url(scratch):
    table = scratch(item("Orders#1", schema.COMPLETED))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Relay)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        endpoint = f"http://127.0.0.1:{server.server_address[1]}"
        result = run_cli("show", "Orders#1", "--json", "--table", table, env={"AWS_ENDPOINT_URL": endpoint})
    finally:
        server.shutdown()
        server.server_close()
    assert json.loads(result.stdout)["id"] == "Orders#1"
    assert "DynamoDB_20120810.GetItem" in _Relay.targets


def test_an_unreachable_endpoint_says_so_in_one_line(scratch):
    line = one_line_error(
        run_cli("list", "--table", scratch.name, env={"AWS_ENDPOINT_URL": "http://127.0.0.1:9", "AWS_MAX_ATTEMPTS": "1"})
    )
    assert "cannot reach AWS in region us-east-1 at http://127.0.0.1:9" in line and "check AWS_ENDPOINT_URL" in line


# --- startup --------------------------------------------------------------------------------------
def test_the_tool_imports_neither_the_cdk_nor_boto3_until_a_command_needs_them():
    probe = (
        "import sys, idempotent_constructs.cli, idempotent_constructs.operations; "
        "print(sorted(m for m in ('aws_cdk', 'jsii', 'boto3', 'rich') if m in sys.modules))"
    )
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"


def test_every_public_name_still_imports_from_the_package():
    probe = (
        "import sys, idempotent_constructs as package; before = 'aws_cdk' in sys.modules; "
        "from idempotent_constructs import *; from idempotent_constructs import IdempotencyTable; "
        "print(before, all(getattr(package, name) is globals()[name] for name in package.__all__), "
        "IdempotencyTable.__module__)"
    )
    shown = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert shown.split() == ["False", "True", "idempotent_constructs.table"]
