"""The table a command works on (--table, --stack), and the options that name it."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import click

from ..lambda_src import schema
from ..runtime import operations

# --- connecting to the table ----------------------------------------------------------------------
TARGET = "idempotent_constructs.target"


@dataclass
class Target:
    """The table a command works on, and the DynamoDB client to reach it with."""

    table: str
    dynamodb: Any
    session: Any = None  # boto3's, for the other clients a command may need

    @property
    def stepfunctions(self) -> Any:
        return self.session.client("stepfunctions")

    def total(self) -> int | None:
        """DynamoDB's item count (refreshed about every six hours), to size a progress bar; ``None``
        (a bar without a total) if DescribeTable is not allowed."""
        try:
            return self.dynamodb.describe_table(TableName=self.table)["Table"].get("ItemCount") or None
        except self.dynamodb.exceptions.ClientError as error:
            if error.response["Error"]["Code"] in ("AccessDeniedException", "UnauthorizedOperation"):
                return None
            raise


def with_table(command: Callable[..., Any]) -> Callable[..., Any]:
    """Adds --table, --stack, --region and --profile, and hands the command a connected Target."""

    @functools.wraps(command)
    def run(*args: Any, table: str | None, stack: str | None, region: str | None, profile: str | None, **kwargs: Any) -> Any:
        ctx = click.get_current_context()
        if stack is not None and ctx.get_parameter_source("table") == click.core.ParameterSource.ENVIRONMENT:
            table = None  # an explicit --stack wins over IDEMPOTENCY_TABLE_NAME
        if (table is None) == (stack is None):
            raise click.UsageError(
                "name the table with --table NAME (or IDEMPOTENCY_TABLE_NAME) or a deployed stack with --stack NAME"
                if table is None
                else "--table and --stack both name the table: pass one of them"
            )
        return command(*args, target=connect(ctx, table, stack, region, profile), **kwargs)

    for option in reversed(
        (
            click.option(
                "--table",
                envvar=schema.TABLE_NAME_ENV,
                metavar="NAME",
                help=f"The idempotency table (or set {schema.TABLE_NAME_ENV}).",
            ),
            click.option("--stack", metavar="NAME", help="A deployed stack whose idempotency table to use."),
            # boto3 reads AWS_DEFAULT_REGION, not AWS_REGION (which the AWS CLI and the CDK read first).
            click.option(
                "--region",
                metavar="REGION",
                envvar="AWS_REGION",
                help="AWS region. Default: AWS_REGION, AWS_DEFAULT_REGION or your profile's.",
            ),
            click.option("--profile", metavar="NAME", help="AWS profile. Default: AWS_PROFILE or the default one."),
        )
    ):
        run = option(run)
    return run


def connect(ctx: click.Context, table: str | None, stack: str | None, region: str | None, profile: str | None) -> Target:
    import boto3

    context = ctx.meta.setdefault(TARGET, {})
    context.update(table=table, stack=stack, profile=profile)
    session = boto3.Session(profile_name=profile, region_name=region)
    dynamodb = session.client("dynamodb")
    context.update(region=dynamodb.meta.region_name, endpoint=dynamodb.meta.endpoint_url)
    if stack is not None:
        table = operations.table_of_stack(stack, cloudformation=session.client("cloudformation"), dynamodb=dynamodb)
        context["table"] = table
    if table is None:
        raise click.UsageError("name the table with --table (or IDEMPOTENCY_TABLE_NAME) or a deployed stack with --stack")
    return Target(table=table, dynamodb=dynamodb, session=session)


def check_record_id(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None or schema.ID_SEPARATOR in value:
        return value
    raise click.BadParameter(
        f"{value!r} is not a record id: ids look like NAMESPACE#HASH; find them with `list`, or compute one with `key`"
    )
