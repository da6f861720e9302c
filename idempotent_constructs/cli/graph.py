"""`graph`: the states a workflow's guard generates, as a Mermaid flowchart."""

from __future__ import annotations

import json
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
    help="Part of the state machine's construct path, e.g. Orders (needed when there are several).",
)
def graph(source: Path, wanted: str | None) -> None:
    """Print, as a Mermaid flowchart, the states that the outermost guard of a synthesized state
    machine generates, with the path of each outcome (first run, replay, wait, takeover, failure)
    labelled and coloured, and listed at the end. SOURCE: a template (*.template.json) or a cloud
    assembly directory (default: cdk.out). Reads files only: no AWS, no CDK.
    """
    from .. import graph as graphs
    from ..assembly import construct_paths, state_machine_definitions

    templates = sorted(source.glob("*.template.json")) if source.is_dir() else [source]
    found: dict[str, dict[str, Any]] = {}
    for template_path in templates:
        try:
            template = json.loads(template_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise click.ClickException(f"cannot read the template {template_path}: {error}") from None
        stack = template_path.name.removesuffix(".template.json")
        paths = construct_paths(source, stack) if (source / "manifest.json").exists() else {}
        for logical_id, definition in state_machine_definitions(template).items():
            metadata = template["Resources"][logical_id].get("Metadata", {})
            path = paths.get(logical_id) or metadata.get("aws:cdk:path") or f"{stack}/{logical_id}"
            if wanted is None or f"/{wanted}/" in f"/{path}/":
                found[path.removesuffix("/Resource")] = definition
    if len(found) != 1:
        listed = ", ".join(sorted(found)) or "none"
        raise click.ClickException(
            f"{len(found)} state machines in {source} match{f' {wanted!r}' if wanted else ''} ({listed}): "
            "name one with --state-machine"
        )
    ((path, definition),) = found.items()
    try:
        click.echo(graphs.mermaid(definition, title=path), nl=False)
    except graphs.NoGuard as error:
        raise click.ClickException(f"{path}: {error}") from None
