"""Shared by the command-line tool's emulator tests: invoking the tool, its one-line errors, records.

moto runs in this process, so the tool is invoked in-process (click's CliRunner) and its boto3
clients reach moto like any other; one test relays real HTTP from AWS_ENDPOINT_URL to moto instead.
Every invocation lets exceptions through (``catch_exceptions=False``): a test fails on any traceback.
"""

from __future__ import annotations

import uuid

from click.testing import CliRunner, Result

from idempotent_constructs.cli import cli
from idempotent_constructs.lambda_src import schema

OWNER = "arn:aws:states:us-east-1:123456789012:execution:Orders:run-1"

Item = dict[str, dict[str, str]]
"""A record in DynamoDB JSON."""


def run_cli(*args: str, input: str | None = None, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=input, env=env, catch_exceptions=False, prog_name="idempotent-constructs")


def one_line_error(result: Result) -> str:
    """The error an operator sees: exit status 1 and exactly one line, on stderr."""
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("Error: ")
    return line


def item(
    record_id: str, status: str, *, expiration: int | None = None, owner: str | None = OWNER, **extra: dict[str, str]
) -> Item:
    """A record in DynamoDB JSON."""
    attributes = {schema.ID: {"S": record_id}, schema.STATUS: {"S": status}, **extra}
    if expiration is not None:
        attributes[schema.EXPIRATION] = {"N": str(expiration)}
    if owner is not None:
        attributes[schema.OWNER] = {"S": f"{owner}#{uuid.uuid4().hex}"}
    return attributes
