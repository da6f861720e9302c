"""The command group: turns every error an operator can cause or fix into one line."""

from __future__ import annotations

from typing import Any

import click

from ..lambda_src import schema
from .explain import explain
from .target import TARGET

STATUSES = (schema.INPROGRESS, schema.COMPLETED, schema.FAILED)


class _Cli(click.Group):
    """Turns the errors an operator can cause or fix into one-line messages."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.Abort, click.exceptions.Exit):
            raise
        except Exception as error:
            message = explain(error, ctx.meta.get(TARGET, {}))
            if message is None:
                raise
            raise click.ClickException(" ".join(message.split())) from None


@click.group(cls=_Cli, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="idempotent-constructs", prog_name="idempotent-constructs")
def cli() -> None:
    """Operate the idempotency records of AWS Step Functions workflows built with idempotent_constructs.

    Name the table with --table (or IDEMPOTENCY_TABLE_NAME) or a deployed stack with --stack.
    Credentials, region and endpoint come from the usual AWS settings (--profile, --region,
    AWS_PROFILE, AWS_REGION, AWS_ENDPOINT_URL for a local emulator).
    """


def main() -> None:
    """The console script."""
    cli(prog_name="idempotent-constructs")
