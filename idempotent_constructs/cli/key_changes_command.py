"""`key-changes`: what a deploy will do to the records of earlier work, read from two templates; and the
key settings of the guards a template holds, which `key --from` computes ids with."""

from __future__ import annotations

from pathlib import Path

import click

from .._readers import key_settings
from .group import cli
from .render import echo_json


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
