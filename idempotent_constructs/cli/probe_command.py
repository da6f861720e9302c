"""`probe`: the generated JSONata run by Step Functions on your account (TestState), each result compared
with Python's (``runtime.probe``)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import click

from ..runtime import probe as probing
from ..runtime import redrive_probe
from .group import cli

EMULATOR_ROLE = "arn:aws:iam::123456789012:role/redrive-probe"  # the emulator assumes no role


@cli.command(short_help="Check, with TestState, that Step Functions computes the keys Python computes.")
@click.option("--region", help="The AWS Region (default: the usual AWS settings).")
@click.option("--profile", help="The AWS profile (default: the usual AWS settings).")
@click.option("--role-arn", metavar="ARN", help="A role for TestState to assume (a Pass state needs no permissions).")
@click.option("--emulator", is_flag=True, help="Run the probe on the local emulator instead (the testing extra).")
@click.option(
    "--redrive",
    is_flag=True,
    help="Probe RedriveExecution instead: create a state machine run by --role-arn (which needs no permission), "
    "run it, redrive it and delete it.",
)
def probe(region: str | None, profile: str | None, role_arn: str | None, emulator: bool, redrive: bool) -> None:
    """Run the key, payload and size expressions the generated states compute through Step Functions'
    TestState API (no state machine deployed, nothing written), on a corpus of inputs (long texts, emoji,
    escapes, numbers of every size), and compare each result with Python's: one PASS or FAIL line a case,
    and a SEEN line for each telling probe (how the engine writes numbers and strings and runs regular
    expressions). Run it once per account and Region before production; it exits with status 1 if a case
    fails. A FAIL means a record id computed natively there would differ from the one the command line
    and the key function compute: report it (docs/explanation/canonical-key.md, section 7).

    With --redrive, it asks instead what AWS does not document of a redrive (runtime.redrive_probe): whether
    variables survive it, the entry time of a state entered again, the execution's start time. A FAIL there
    means the emulator's RedriveExecution differs from AWS's: report it (docs/project/emulator-gaps.md)."""
    failed = passed = 0
    with _lines(region, profile, role_arn, emulator, redrive) as lines:
        for line in lines:
            click.echo(str(line))
            failed += line.verdict == "FAIL"
            passed += line.verdict == "PASS"
    click.echo(f"{passed} passed, {failed} failed")
    if failed:
        raise click.exceptions.Exit(1)


@contextlib.contextmanager
def _lines(
    region: str | None, profile: str | None, role_arn: str | None, emulator: bool, redrive: bool
) -> Iterator[Iterator[probing.Line]]:
    if not redrive:
        with _evaluator(region, profile, role_arn, emulator) as evaluate:
            yield probing.run(evaluate)
        return
    if emulator:
        with _emulator() as local:
            yield redrive_probe.run(local.client("stepfunctions"), EMULATOR_ROLE)
        return
    if role_arn is None:
        raise click.UsageError("--redrive creates a state machine: give it a role with --role-arn (it needs no permission)")
    import boto3

    yield redrive_probe.run(boto3.Session(profile_name=profile, region_name=region).client("stepfunctions"), role_arn)


@contextlib.contextmanager
def _emulator() -> Iterator[Any]:
    try:
        from ..testing import LocalEmulator
    except ImportError:
        raise click.ClickException("--emulator needs the testing extra: pip install 'idempotent-constructs[testing]'") from None
    with LocalEmulator() as local:
        yield local


@contextlib.contextmanager
def _evaluator(region: str | None, profile: str | None, role_arn: str | None, emulator: bool) -> Iterator[probing.Evaluate]:
    if not emulator:
        import boto3

        client = boto3.Session(profile_name=profile, region_name=region).client("stepfunctions")
        yield probing.test_state(client, role_arn)
        return
    with _emulator() as local:
        yield on_emulator(local)


def on_emulator(emulator: Any) -> probing.Evaluate:
    """An ``Evaluate`` that runs each case as a one-state execution on the local emulator (``LocalEmulator``)."""

    def evaluate(expression: str, document: Any) -> probing.Outcome:
        execution = emulator.run_definition({"StartAt": "Probe", "States": {"Probe": probing.state(expression)}}, document)
        if execution.status == "SUCCEEDED":
            return probing.Outcome(value=execution.output)
        return probing.Outcome(error=execution.error, cause=execution.cause)

    return evaluate
