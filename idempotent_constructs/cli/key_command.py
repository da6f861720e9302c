"""`key`: the record id of a payload, computed as the workflow computes it."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from .._jsonata import check as jsonata_check
from .._jsonata import key_expressions
from ..lambda_src import canonical, schema
from .group import cli
from .render import echo_json


# --- key ------------------------------------------------------------------------------------------
def check_namespace(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    name = value[:-1] if value.endswith("*") and param.name == "namespace_filter" else value
    if schema.valid_namespace(name):
        return value
    raise click.BadParameter(
        f"{value!r} is not a namespace: use 1 to {schema.NAMESPACE_MAX_LENGTH} letters, digits or "
        "'_ . : / = + @ -' (the part of a record id before '#'), for example \"Orders/Checkout\""
    )


@cli.command(short_help="Compute the record id of a payload, as the workflow does.")
@click.option(
    "--namespace",
    callback=check_namespace,
    help="The workflow's namespace: the part of its record ids before '#' (by default "
    "the construct path, for example Stack/Orders).",
)
@click.option(
    "--from",
    "source",
    type=click.Path(exists=True, path_type=Path),
    help="Read the namespace, key and payload from a guard in this template or cloud assembly (cdk.out), "
    "as deployed: no key option is then given.",
)
@click.option(
    "--guard", metavar="NAME", help="With --from: the guard, by namespace or by part of its state machine's path or state name."
)
@click.option("--whole-input", is_flag=True, help="The whole payload is the key (the default).")
@click.option("--jmespath", metavar="EXPR", help='The key is what a JMESPath expression selects, e.g. "[order.id, customer.id]".')
@click.option(
    "--path",
    "paths",
    multiple=True,
    metavar="JSONPATH",
    help="The key is these scalar fields, e.g. --path $.order.id --path $.customer.id.",
)
@click.option("--jsonata", metavar="EXPR", help='The key is what a JSONata expression selects, e.g. "$states.input.order.id".')
@click.option(
    "--payload-path",
    "payload_paths",
    multiple=True,
    metavar="JSONPATH",
    help="The payload a duplicate must repeat is these fields, e.g. --payload-path '$[0].body' (default: the whole payload).",
)
@click.option(
    "--payload-jsonata",
    metavar="EXPR",
    help='The payload is what a JSONata expression selects, e.g. "$parse($states.input[0].body)".',
)
@click.option(
    "--payload-jmespath",
    metavar="EXPR",
    help='The payload is what a JMESPath expression selects, e.g. "[0].powertools_json(body)".',
)
@click.option("--no-payload", is_flag=True, help="No payload is compared (IdempotencyPayload.none()).")
@click.option(
    "--json", "as_json", is_flag=True, help="Print the id with the key spec, the selection and the payload's validation, as JSON."
)
@click.argument("payload", type=click.Path(exists=True, dir_okay=False, allow_dash=True), default="-")
def key(
    namespace: str | None,
    source: Path | None,
    guard: str | None,
    whole_input: bool,
    jmespath: str | None,
    paths: tuple[str, ...],
    jsonata: str | None,
    payload_paths: tuple[str, ...],
    payload_jsonata: str | None,
    payload_jmespath: str | None,
    no_payload: bool,
    as_json: bool,
    payload: str,
) -> None:
    """Print the record id a workflow uses for PAYLOAD (a JSON file, or - for stdin, the default).

    It is computed as ``IdempotencyKey.record_id`` computes it, to the canonical key spec the states follow,
    so the id printed is the id of the record that the workflow reads and writes for this input.
    """
    given = (whole_input, jmespath is not None, bool(paths), jsonata is not None)
    if sum(given) > 1:
        raise click.UsageError(
            "choose one key spec: --whole-input, --jmespath EXPR, --path JSONPATH (repeatable) or --jsonata EXPR"
        )
    if source is not None:
        if any(given) or namespace or payload_paths or payload_jsonata or payload_jmespath or no_payload:
            raise click.UsageError("--from reads the namespace, key and payload from the template: give none of them")
        settings = from_template(source, guard)
        namespace, kind, expression = settings.namespace, settings.key_kind, settings.key_expression
        payload_kind, payload_expression = settings.payload_kind, settings.payload_expression
    elif namespace is None:
        raise click.UsageError("give --namespace (with the key's options), or --from a template")
    else:
        kind, expression = spec(jmespath, paths, jsonata, "--")
        payload_kind, payload_expression = payload_spec(payload_paths, payload_jsonata, payload_jmespath, no_payload)
    document = read_json(payload)
    try:
        selection = key_expressions.select(document, kind, expression)
        record_id = canonical.selection_id(namespace, kind, selection)
        # The workflow computes the payload's validation too, and fails where this fails.
        validation = canonical.payload_validation(key_expressions.select_payload(document, payload_kind, payload_expression))
    except canonical.KeyMissing as error:
        raise click.ClickException(
            f"{schema.KEY_MISSING}: {error}; the workflow fails this input before writing any record"
        ) from None
    except canonical.PayloadMissing as error:
        raise click.ClickException(
            f"{schema.PAYLOAD_MISSING}: {error}; the workflow fails this input before writing any record"
        ) from None
    if as_json:
        echo_json(
            {
                "id": record_id,
                "namespace": namespace,
                "kind": kind,
                "expression": expression,
                "selection": selection,
                "payload_kind": payload_kind,
                "payload_expression": payload_expression,
                "validation": validation,
            }
        )
    else:
        click.echo(record_id)


def from_template(source: Path, wanted: str | None) -> Any:
    """The key settings of the one guard in ``source`` that ``wanted`` names (any, if there is one)."""
    from .key_changes_command import settings_in

    every = settings_in(source)
    found = {
        where: settings for where, settings in every.items() if wanted is None or wanted == settings.namespace or wanted in where
    }
    if len(found) != 1:
        listed = "; ".join(
            f"{where} (namespace {settings.namespace})" for where, settings in sorted(found.items() or every.items())
        )
        raise click.ClickException(
            f"{len(found)} guards in {source} match{f' {wanted!r}' if wanted else ''} ({listed or 'none'}): name one with --guard"
        )
    return next(iter(found.values()))


def payload_spec(paths: tuple[str, ...], jsonata: str | None, jmespath: str | None, no_payload: bool) -> tuple[str, Any]:
    """``(kind, expression)`` of the payload options (``--payload-path``, ``-jsonata``, ``-jmespath``,
    ``--no-payload``): the whole input when none is given."""
    if sum((bool(paths), jsonata is not None, jmespath is not None, no_payload)) > 1:
        raise click.UsageError(
            "choose one payload spec: --payload-path JSONPATH (repeatable), --payload-jsonata EXPR, --payload-jmespath EXPR "
            "or --no-payload"
        )
    return (schema.KIND_NONE, None) if no_payload else spec(jmespath, paths, jsonata, "--payload-")


def spec(jmespath: str | None, paths: tuple[str, ...], jsonata: str | None, flag: str) -> tuple[str, Any]:
    """``(kind, expression)`` of a key (``flag`` "--") or payload ("--payload-") spec, checked as the
    constructs check it."""
    if jsonata is not None:
        refused = jsonata_check.problems(jsonata)
        if refused:
            reasons = "; ".join(f"{code}: {message}" for code, message in refused)
            raise click.BadParameter(
                f"Step Functions would refuse {jsonata!r} ({reasons})", param_hint=f"{flag}jsonata"
            ) from None
        return schema.KIND_JSONATA, jsonata
    if jmespath is not None:
        reason = canonical.jmespath_problem(jmespath)
        if reason is not None:
            raise click.BadParameter(
                f"{jmespath!r} is not a JMESPath expression ({reason})", param_hint=f"{flag}jmespath"
            ) from None
        return schema.KIND_JMESPATH, jmespath
    if paths:
        for path in paths:
            try:
                canonical.parse_path(path)
            except ValueError as error:
                raise click.BadParameter(str(error), param_hint=f"{flag}path") from None
        return schema.KIND_PATHS, list(paths)
    return schema.KIND_WHOLE_INPUT, None


def read_json(path: str) -> Any:
    """The payload at ``path`` ("-": stdin) as JSON, as Step Functions would accept it (no NaN)."""
    if path == "-" and sys.stdin.isatty():
        raise click.UsageError("no payload: pass a JSON file, or pipe the workflow's input into stdin")
    name = "stdin" if path == "-" else path

    def no_constant(constant: str) -> Any:
        raise ValueError(f"{constant} is not a JSON value")

    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
        return json.loads(text, parse_constant=no_constant)
    except OSError as error:
        raise click.ClickException(f"cannot read the payload ({name}): {error.strerror or error}") from None
    except ValueError as error:  # JSONDecodeError and UnicodeDecodeError included
        raise click.ClickException(f"the payload ({name}) is not JSON: {error}; pass the workflow's input as JSON") from None
