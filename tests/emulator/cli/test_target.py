"""Emulator end-to-end: the table a command works on, and how it reaches AWS (idempotent_constructs/cli/target.py)."""

from __future__ import annotations

import http.server
import json
import re
import threading
import uuid
from typing import ClassVar

import pytest

from idempotent_constructs.lambda_src import schema
from tests.emulator.cli.helpers import item, one_line_error, run_cli


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


def test_of_several_tables_keyed_by_id_the_one_expiring_on_expiration_is_the_table(composition):
    table = composition.table_name("Idempotency")
    assert composition.table_name("SideEffects") != table
    assert resolved_table("Composition") == table


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
