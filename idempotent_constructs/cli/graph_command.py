"""`graph`: the states a workflow's guard generates, as a Mermaid flowchart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from .group import cli


# --- graph ----------------------------------------------------------------------------------------
@cli.command(short_help="Draw the states a workflow's guard generates, as a Mermaid flowchart.")
@click.argument("source", type=click.Path(exists=True, path_type=Path), default="cdk.out")
@click.option(
    "--state-machine",
    "wanted",
    metavar="NAME",
    help="Its construct id, part of its construct path, or its logical id, e.g. Orders (needed when there are "
    "several); or the construct id of a guard in one, e.g. ChargeOnce, to draw that guard.",
)
@click.option(
    "--collapse-guards",
    is_flag=True,
    help="Draw each guard inside the body as one node instead of its states.",
)
def graph(source: Path, wanted: str | None, collapse_guards: bool) -> None:
    """Print, as a Mermaid flowchart, the states that the outermost guard of a synthesized state
    machine generates, with the path of each outcome (first run, replay, wait, takeover, failure)
    labelled and coloured, and listed at the end, and inside its Body the states it runs: Parallel
    branches and Map item processors as subgraphs, each guard among them as a subgraph titled by its
    construct id (one node with --collapse-guards). SOURCE: a template (*.template.json) or a cloud
    assembly directory (default: cdk.out). Reads files only: no AWS, no CDK.

    --state-machine finds one by construct id, construct path or logical id, in a cloud assembly as in
    a template alone (whose construct paths come from the manifest beside it, the template's own path
    metadata, or else the logical ids CDK derives from them). When no state machine matches, it finds
    the one holding a guard of that construct id (its states X.Acquire, X.Body, ... at any depth) and
    draws that guard as the outermost one.
    """
    from .._readers import graph as graphs
    from .._readers.assembly import UnreadableTemplate, machines_in, names_resource

    found: dict[str, dict[str, Any]] = {}
    guarded: dict[str, dict[str, Any]] = {}  # the state machines holding a guard named `wanted`
    every: list[str] = []  # every state machine's name and its guards', for a --state-machine that matches none
    try:
        machines = list(machines_in(source))
    except UnreadableTemplate as error:
        raise click.ClickException(str(error)) from None
    for machine in machines:
        guards = graphs.guard_names(machine.definition)
        every.append(machine.name)
        every += [f"guard {guard} in {machine.name}" for guard in guards]
        if wanted is None or names_resource(wanted, stack_name=machine.stack, logical_id=machine.logical_id, path=machine.path):
            found[machine.name] = machine.definition
        elif wanted in guards:
            guarded[machine.name] = machine.definition
    guard = None
    if not found and guarded:  # a state machine of that name is preferred to a guard of it
        found, guard = guarded, wanted
    if not found and wanted is not None:
        raise click.ClickException(
            f"no state machine in {source} matches {wanted!r} (there are: {', '.join(sorted(every)) or 'none'}): "
            "name one with --state-machine by its construct id, construct path or logical id, or a guard in one "
            "by its construct id"
        )
    if len(found) != 1:
        listed = ", ".join(sorted(found)) or "none"
        raise click.ClickException(
            f"{len(found)} state machines in {source} match{f' {wanted!r}' if wanted else ''} ({listed}): "
            "name one with --state-machine"
        )
    ((path, definition),) = found.items()
    title = f"{path}: guard {guard}" if guard else path
    try:
        click.echo(graphs.mermaid(definition, title=title, guard=guard, collapse_guards=collapse_guards), nl=False)
    except graphs.NoGuard as error:
        raise click.ClickException(f"{path}: {error}") from None
