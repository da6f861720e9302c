"""`key-changes`: what a deploy will do to the records of earlier work, read from two templates; `key-migrate`:
earlier work's records copied to the ids a changed key computes; and the key settings of the guards a template
holds, which `key --from` computes ids with."""

from __future__ import annotations

import json
from pathlib import Path

import click

from .._readers import key_settings
from .group import cli
from .render import echo_json
from .target import Target, with_table


def settings_in(source: Path) -> dict[str, key_settings.KeySettings]:
    """Every guard's key settings in a template (``*.template.json``, as synthesized or as CloudFormation's
    GetTemplate returns it) or in each template of a cloud assembly directory, by place: the state machine's
    construct path (or stack and logical id) and the guard's ``Acquire`` state."""
    from .._readers.assembly import UnreadableTemplate, machines_in

    found: dict[str, key_settings.KeySettings] = {}
    try:
        for machine in machines_in(source):
            for state, settings in key_settings.in_definition(machine.definition).items():
                found[f"{machine.name} {state}"] = settings
    except UnreadableTemplate as error:
        raise click.ClickException(str(error)) from None
    return found


@cli.command("key-changes", short_help="Tell, before a deploy, which changes will run earlier work again.")
@click.argument("before", type=click.Path(exists=True, path_type=Path))
@click.argument("after", type=click.Path(exists=True, path_type=Path), default="cdk.out")
@click.option("--json", "as_json", is_flag=True, help="Print the changes as JSON.")
def key_changes(before: Path, after: Path, as_json: bool) -> None:
    """Compare the key settings of every guard in BEFORE (the template deployed now, or the cloud assembly
    it came from) with AFTER (the one about to be deployed; default: cdk.out), and print each change that
    will make duplicates of earlier work run again (a namespace, a key, the canonical key's format) or fail
    with Idempotency.PayloadMismatch (a payload selection). A respelled path that selects the same field is
    no change. Exit status 1 if any change runs earlier work again, so that a pipeline can stop the deploy.
    Reads files only: get the deployed template with `aws cloudformation get-template --stack-name NAME
    --query TemplateBody > before.template.json`.
    """
    changes = key_settings.changes(settings_in(before), settings_in(after))
    if as_json:
        echo_json(
            [
                {"namespace": c.namespace, "where": c.where, "change": c.message, "reruns": c.reruns, "fails": c.fails}
                for c in changes
            ]
        )
    elif not changes:
        click.echo("No change to any record id: duplicates of earlier work are found as before.")
    for change in [] if as_json else changes:
        mark = "RERUNS" if change.reruns else "FAILS" if change.fails else "note"
        click.echo(f"{mark}  {change.namespace} ({change.where}): {change.message}")
    if any(change.reruns for change in changes):
        raise SystemExit(1)


@cli.command("key-migrate", short_help="Copy earlier work's records to the ids a changed key computes.")
@click.argument("before", type=click.Path(exists=True, path_type=Path))
@click.argument("after", type=click.Path(exists=True, path_type=Path), default="cdk.out")
@click.option(
    "--inputs",
    type=click.Path(exists=True, dir_okay=False, allow_dash=True),
    help="A file of JSON lines, each an input a guard was given (what an Express workflow was started with).",
)
@click.option("--dry-run", is_flag=True, help="Say what would be copied, copy nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print what was done as JSON.")
@with_table
def key_migrate(before: Path, after: Path, inputs: str | None, dry_run: bool, as_json: bool, target: Target) -> None:
    """For each guard whose record ids change between BEFORE (the template deployed now) and AFTER (the one
    about to be deployed; default: cdk.out), copy each finished record of its namespace to the id the new key
    computes from the record's input, so that a duplicate of earlier work replays after the deploy.

    The input is read from the holder's execution history (Standard workflows; 90 days after they end) and
    from --inputs. A record in progress is left: run again once its holder ended. A copy is written only
    where the new id has no record. Exit status 1 if a record is left (in progress, without a matching
    input, or with a result in S3 under a namespace that changes). To lose no duplicate, run it while no
    work arrives and no execution of the workflow runs, and deploy before work resumes: see
    docs/guides/keys-and-payloads.md.
    """
    from ..runtime import key_migration

    failed = False
    documents = [json.loads(line) for line in click.open_file(inputs).read().splitlines() if line.strip()] if inputs else []
    stepfunctions = target.stepfunctions if target.session is not None else None
    report = []
    for where, old, new in key_settings.migrations(settings_in(before), settings_in(after)):
        prefix = where.partition(" ")[2].removesuffix("Acquire")  # "{state machine} {its Acquire state}"
        try:
            done = key_migration.migrate(
                target.table,
                old,
                new,
                dynamodb=target.dynamodb,
                stepfunctions=stepfunctions,
                guard_states=tuple(prefix + state for state in key_migration.ENTRY_STATES),
                inputs=documents,
                dry_run=dry_run,
            )
        except ValueError as error:
            raise click.ClickException(f"{where}: {error}") from None
        report.append({"where": where, "namespace": old.namespace, "to": new.namespace, **vars(done)})
        if not as_json:
            verb = "would copy" if dry_run else "copied"
            click.echo(
                f"{where} ({old.describe()} -> {new.describe()}): {verb} {len(done.copied)}, kept {len(done.present)} "
                f"already there, {len(done.same)} with the same id, {len(done.unkeyable)} the new key cannot key, "
                f"{len(done.in_s3)} with a result in S3 under the old namespace, {len(done.unmatched)} without a "
                f"matching input, {len(done.in_progress)} in progress"
            )
        if not done.complete:
            failed = True
    if as_json:
        echo_json(report)
    elif not report:
        click.echo("No guard's record ids change: nothing to copy.")
    if failed:
        raise SystemExit(1)
