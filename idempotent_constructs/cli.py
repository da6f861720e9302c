"""``idempotent-constructs``: compute a workflow's key, inspect, list, reset and purge its records, and
draw the states its guard generates.

For operators at a terminal and for scripts (``--json``). It imports no CDK (the package loads its
constructs lazily) and imports boto3 and rich only when a command needs them, so it starts fast.
Every operator mistake ends in one ``Error: ...`` line that says what went wrong and what to do, with
exit status 1 (2 for a malformed command line), never a traceback; a traceback means a bug.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import gzip
import json
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import islice
from pathlib import Path
from typing import Any

import click

from . import jsonata_key, operations
from .errors import IdempotencyError, RecordInProgressError, RecordNotFoundError
from .lambda_src import canonical, schema

STATUSES = (schema.INPROGRESS, schema.COMPLETED, schema.FAILED)


class _Cli(click.Group):
    """Turns the errors an operator can cause or fix into one-line messages."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.Abort, click.exceptions.Exit):
            raise
        except Exception as error:
            message = _explain(error, ctx.meta.get(_TARGET, {}))
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


# --- key ------------------------------------------------------------------------------------------
def _check_namespace(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
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
    required=True,
    callback=_check_namespace,
    help="The workflow's namespace: the part of its record ids before '#' (by default "
    "the construct path, for example Stack/Orders).",
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
@click.option("--json", "as_json", is_flag=True, help="Print the id with the key spec and the selection, as JSON.")
@click.argument("payload", type=click.Path(exists=True, dir_okay=False, allow_dash=True), default="-")
def key(
    namespace: str,
    whole_input: bool,
    jmespath: str | None,
    paths: tuple[str, ...],
    jsonata: str | None,
    as_json: bool,
    payload: str,
) -> None:
    """Print the record id a workflow uses for PAYLOAD (a JSON file, or - for stdin, the default).

    It is computed as ``IdempotencyKey.record_id`` computes it, to the canonical key spec the states follow,
    so the id printed is the id of the record that the workflow reads and writes for this input.
    """
    if sum((whole_input, jmespath is not None, bool(paths), jsonata is not None)) > 1:
        raise click.UsageError(
            "choose one key spec: --whole-input, --jmespath EXPR, --path JSONPATH (repeatable) or --jsonata EXPR"
        )
    kind, expression = _key_spec(jmespath, paths, jsonata)
    document = _read_json(payload)
    try:
        selection = jsonata_key.select(document, kind, expression)
        record_id = canonical.selection_id(namespace, kind, expression, selection)
        canonical.payload_digest(document)  # the workflow hashes the whole payload too, and fails where this fails
    except canonical.KeyMissing as error:
        raise click.ClickException(
            f"{schema.KEY_MISSING}: {error}; the workflow fails this input before writing any record"
        ) from None
    if as_json:
        _echo_json({"id": record_id, "namespace": namespace, "kind": kind, "expression": expression, "selection": selection})
    else:
        click.echo(record_id)


def _key_spec(jmespath: str | None, paths: tuple[str, ...], jsonata: str | None) -> tuple[str, Any]:
    if jsonata is not None:
        reason = jsonata_key.syntax_problem(jsonata)
        if reason is not None:
            raise click.BadParameter(f"{jsonata!r} is not a JSONata expression ({reason})", param_hint="--jsonata") from None
        return schema.KIND_JSONATA, jsonata
    if jmespath is not None:
        reason = canonical.jmespath_problem(jmespath)
        if reason is not None:
            raise click.BadParameter(f"{jmespath!r} is not a JMESPath expression ({reason})", param_hint="--jmespath") from None
        return schema.KIND_JMESPATH, jmespath
    if paths:
        for path in paths:
            try:
                canonical.parse_path(path)
            except ValueError as error:
                raise click.BadParameter(str(error), param_hint="--path") from None
        return schema.KIND_PATHS, list(paths)
    return schema.KIND_WHOLE_INPUT, None


def _read_json(path: str) -> Any:
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
    from . import graph as graphs
    from .assembly import construct_paths, state_machine_definitions

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


# --- connecting to the table ----------------------------------------------------------------------
_TARGET = "idempotent_constructs.target"


@dataclass
class Target:
    """The table a command works on, and the DynamoDB client to reach it with."""

    table: str
    dynamodb: Any

    def total(self) -> int | None:
        """DynamoDB's item count (refreshed about every six hours), to size a progress bar; ``None``
        (a bar without a total) if DescribeTable is not allowed."""
        try:
            return self.dynamodb.describe_table(TableName=self.table)["Table"].get("ItemCount") or None
        except self.dynamodb.exceptions.ClientError as error:
            if error.response["Error"]["Code"] in ("AccessDeniedException", "UnauthorizedOperation"):
                return None
            raise


def _with_table(command: Callable[..., Any]) -> Callable[..., Any]:
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
        return command(*args, target=_connect(ctx, table, stack, region, profile), **kwargs)

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


def _connect(ctx: click.Context, table: str | None, stack: str | None, region: str | None, profile: str | None) -> Target:
    import boto3

    context = ctx.meta.setdefault(_TARGET, {})
    context.update(table=table, stack=stack, profile=profile)
    session = boto3.Session(profile_name=profile, region_name=region)
    dynamodb = session.client("dynamodb")
    context.update(region=dynamodb.meta.region_name, endpoint=dynamodb.meta.endpoint_url)
    if stack is not None:
        table = operations.table_of_stack(stack, cloudformation=session.client("cloudformation"), dynamodb=dynamodb)
        context["table"] = table
    if table is None:
        raise click.UsageError("name the table with --table (or IDEMPOTENCY_TABLE_NAME) or a deployed stack with --stack")
    return Target(table=table, dynamodb=dynamodb)


def _check_record_id(ctx: click.Context, param: click.Parameter, value: str) -> str:
    if "#" in value:
        return value
    raise click.BadParameter(
        f"{value!r} is not a record id: ids look like NAMESPACE#HASH; find them with `list`, or compute one with `key`"
    )


# --- show, list -----------------------------------------------------------------------------------
@cli.command(short_help="Show one record.")
@click.argument("record_id", metavar="RECORD_ID", callback=_check_record_id)
@click.option("--json", "as_json", is_flag=True, help="Print the record as JSON.")
@_with_table
def show(record_id: str, as_json: bool, target: Target) -> None:
    """Show one record: status, expiry, holder, result or error."""
    record = operations.plain(_get(target, record_id))
    if as_json:
        _echo_json(record)
        return
    described = list(_described(record))
    width = max(len(name) for name, _ in described) + 2
    for name, value in described:
        click.echo(f"{name:<{width}}" + value.replace("\n", "\n" + " " * width))


@cli.command("list", short_help="List records, by namespace and status, a page at a time.")
@click.option(
    "--namespace",
    "namespace_filter",
    metavar="NAMESPACE",
    callback=_check_namespace,
    help="Only this namespace's records; a trailing * takes every namespace starting with the rest.",
)
@click.option(
    "--status",
    type=click.Choice(STATUSES, case_sensitive=False),
    metavar="[" + "|".join(STATUSES) + "]",
    help="Only records with this status.",
)
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True, help="Records per page.")
@click.option("--all", "everything", is_flag=True, help="Every matching record, in one page.")
@click.option("--after", metavar="RECORD_ID", help="Start after this record: the `next` of the previous page.")
@click.option("--json", "as_json", is_flag=True, help='Print {"records": [...], "next": RECORD_ID or null} as JSON.')
@_with_table
def list_(
    namespace_filter: str | None,
    status: str | None,
    limit: int,
    everything: bool,
    after: str | None,
    as_json: bool,
    target: Target,
) -> None:
    """List records, a page at a time, in the table's order (scans the table)."""
    wanted = None if everything else limit
    with _progress("Listing records", target.total()) as advance:
        found = operations.list_records(
            target.table,
            namespace=namespace_filter,
            status=status and status.upper(),
            after=after,
            client=target.dynamodb,
            on_page=advance,
        )
        records = [operations.plain(item) for item in islice(found, None if wanted is None else wanted + 1)]
    following = records[wanted - 1]["id"] if wanted is not None and len(records) > wanted else None
    records = records[:wanted]
    if as_json:
        _echo_json({"records": records, "next": following})
        return
    if not records:
        click.echo(f"No records in table {target.table}" + _filters(namespace_filter, status) + ".")
        return
    _console().print(_listing(records, target.table + _filters(namespace_filter, status)))
    if following is not None:
        click.echo(f"More records: add --after '{following}' for the next page, or --all.")


# --- reset, purge ---------------------------------------------------------------------------------
@cli.command(short_help="Delete one record, so that its work runs again.")
@click.argument("record_id", metavar="RECORD_ID", callback=_check_record_id)
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@click.option("--force", is_flag=True, help="Reset a record in progress too (only if its execution is gone).")
@_with_table
def reset(record_id: str, yes: bool, force: bool, target: Target) -> None:
    """Delete one record, so that the next request with its key runs the work again."""
    record = operations.plain(_get(target, record_id))
    if record.get(schema.STATUS) == schema.INPROGRESS and not force:
        raise _in_progress(record)
    click.echo(f"{record_id}: {_summary(record)}")
    if not yes:
        try:
            click.confirm("Reset it, so that the next request with this key runs the work again?", abort=True)
        except click.Abort:
            raise click.ClickException("not reset: not confirmed (pass --yes to reset without asking)") from None
    try:
        deleted = operations.plain(operations.reset(target.table, record_id, force=force, client=target.dynamodb))
    except RecordInProgressError:  # acquired again since it was read
        raise _in_progress(operations.plain(_get(target, record_id))) from None
    click.echo(f"Reset {record_id}: its {deleted.get(schema.STATUS, 'record')} record is deleted.")
    if schema.DATA_LOCATION in deleted:
        click.echo(f"Its result object {deleted[schema.DATA_LOCATION]} is left to the results bucket's lifecycle rule.")


@cli.command("purge-expired", short_help="Delete expired finished records now, not when TTL does.")
@click.option("--dry-run", is_flag=True, help="Count what would be deleted, delete nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the counts as JSON.")
@_with_table
def purge_expired(dry_run: bool, as_json: bool, target: Target) -> None:
    """Delete the finished records whose expiration has passed (by more than 5 minutes, in case this
    machine's clock runs ahead), now rather than when DynamoDB's TTL gets to them (it can take
    days). The workflows already treat them as absent.

    A record that changes meanwhile is kept. A record in progress is never purged, even when its
    expiration has passed: the workflows take it over only through its lease, never by expiry;
    reset --force deletes one on purpose.
    """
    with _progress("Purging expired records", target.total()) as advance:
        summary = operations.purge_expired(target.table, dry_run=dry_run, client=target.dynamodb, on_page=advance)
    if as_json:
        _echo_json({"dry_run": dry_run, **vars(summary)})
        return
    verb = "Would delete" if dry_run else "Deleted"
    click.echo(f"{verb} {_count(summary.deleted, 'expired record')} of {summary.scanned} scanned in {target.table}.")
    if summary.in_progress:
        click.echo(
            f"Kept {_count(summary.in_progress, 'expired record')} in progress: a purge never deletes one "
            "(see `list --status INPROGRESS`; reset --force deletes one whose execution is gone)."
        )
    if summary.changed:
        click.echo(f"Kept {_count(summary.changed, 'record')} that changed while purging.")


# --- errors ---------------------------------------------------------------------------------------
def _get(target: Target, record_id: str) -> dict[str, Any]:
    try:
        return operations.get_record(target.table, record_id, client=target.dynamodb)
    except RecordNotFoundError:
        namespace = record_id.partition("#")[0]
        raise click.ClickException(
            f"no record {record_id!r} in table {target.table}: it was never written, was reset, or TTL deleted it; "
            f"check the id (`key` computes it), or list the namespace with `list --namespace {namespace}`"
        ) from None


def _in_progress(record: dict[str, Any]) -> click.ClickException:
    return click.ClickException(
        f"not reset: {record[schema.ID]} is in progress, held by {_execution(record, full=True) or 'an execution'} "
        f"({_lease(record)}), which may still be running; a reset now would let a duplicate run the work alongside it. "
        "Wait for it to finish, or pass --force if you know the execution is gone"
    )


def _explain(error: Exception, target: dict[str, Any]) -> str | None:
    """The one-line message for an error an operator can fix; None for a bug (which keeps its traceback)."""
    if isinstance(error, IdempotencyError):  # a record or table that changed or vanished meanwhile, say
        return str(error)
    if "botocore" not in sys.modules:
        return None
    from botocore import exceptions

    endpoint = target.get("endpoint") or ""
    where = f"region {target.get('region')}" + (f" at {endpoint}" if endpoint and "amazonaws.com" not in endpoint else "")
    if isinstance(error, exceptions.NoCredentialsError):
        return (
            "no AWS credentials found: pass --profile or set AWS_PROFILE, or set AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY (any values for a local emulator)"
        )
    if isinstance(error, exceptions.NoRegionError):
        return "no AWS region: pass --region or set AWS_REGION (or give your profile a region)"
    if isinstance(error, exceptions.ProfileNotFound):
        return f"{error}: check --profile or AWS_PROFILE (`aws configure list-profiles` lists them)"
    if isinstance(error, exceptions.ConnectionError):
        return f"cannot reach AWS in {where}: {error}; check AWS_ENDPOINT_URL, the region and the network"
    if isinstance(error, exceptions.ClientError):
        code = error.response.get("Error", {}).get("Code", "")
        text = error.response.get("Error", {}).get("Message", "")
        if code == "ResourceNotFoundException":
            return (
                f"table {target.get('table')!r} not found in {where}: check --table (or the stack), "
                "--region and the account of your credentials"
            )
        if error.operation_name == "DescribeStacks" and "does not exist" in text:
            return f"stack {target.get('stack')!r} not found in {where}: check --stack, --region and the account"
        if code in (
            "UnrecognizedClientException",
            "InvalidClientTokenId",
            "ExpiredToken",
            "ExpiredTokenException",
            "InvalidSignatureException",
        ):
            return f"AWS refused your credentials ({code}: {text}): refresh them, or check --profile / AWS_PROFILE"
        if "AccessDenied" in code:
            return f"not allowed: {text} ({error.operation_name}); ask for that permission, or use another --profile"
        return f"AWS {error.operation_name} failed: {code}: {text}"
    if isinstance(error, exceptions.BotoCoreError):
        return str(error)
    return None


# --- output ---------------------------------------------------------------------------------------
def _console() -> Any:
    """The console for tables: on a terminal as wide as it is; piped, as wide as the table, so that
    no record id is ever folded across lines."""
    from rich.console import Console

    console = Console(highlight=False)
    if not console.is_terminal:
        console.width = 10_000
    return console


def _echo_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, ensure_ascii=False))


@contextlib.contextmanager
def _progress(description: str, total: int | None) -> Iterator[Callable[[int], None]]:
    """A progress bar on stderr, on a terminal only: a scan of a large table takes a while."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    counter = "{task.completed} of ~{task.total} records" if total else "{task.completed} records"
    columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TextColumn(counter), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True, disable=not console.is_terminal) as progress:
        task = progress.add_task(description, total=total)
        yield lambda scanned: progress.advance(task, scanned)


def _listing(records: list[dict[str, Any]], title: str) -> Any:
    from rich.table import Table

    now = time.time()
    table = Table(title=title, caption=_count(len(records), "record"))
    table.add_column("RECORD ID", overflow="fold", style="bold")
    table.add_column("STATUS")
    table.add_column("EXPIRES")
    table.add_column("EXECUTION", overflow="fold")
    table.add_column("RESULT", overflow="fold")
    for record in records:
        status = record.get(schema.STATUS, "?")
        expiration = record.get(schema.EXPIRATION)
        expired = isinstance(expiration, (int, float)) and expiration < now
        table.add_row(
            _escape(record[schema.ID]),
            f"[red]{status}[/]" if status == schema.FAILED else f"[yellow]{status}[/]" if status == schema.INPROGRESS else status,
            ("[dim]" if expired else "") + (_when(expiration, now) if expired or expiration is None else _at(expiration)),
            _escape(_execution(record)),
            _result(record),
        )
    return table


def _described(record: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """The record's attributes, readable: times as UTC dates, results decoded."""
    now = time.time()
    order = schema.ATTRIBUTES  # the schema's order; attributes of other writers after them
    for name in sorted(record, key=lambda name: (order.index(name) if name in order else len(order), name)):
        value = record[name]
        if name == schema.EXPIRATION and isinstance(value, (int, float)):
            text = f"{_at(value)} ({_when(value, now)})"
        elif name == schema.IN_PROGRESS_EXPIRATION and isinstance(value, (int, float)):
            text = _at(value / 1000)
            if record.get(schema.STATUS) == schema.INPROGRESS:
                text += f" ({_when(value / 1000, now, 'lease ends in', 'lease ended')})"
        elif name == schema.DATA:
            text = _pretty(value)
        elif name == schema.DATA_GZIP:
            text = f"{len(base64.b64decode(value))} bytes gzip of: " + _gunzipped(value)
        else:
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        yield name, text


def _summary(record: dict[str, Any]) -> str:
    parts = [record.get(schema.STATUS, "?")]
    if record.get(schema.EXPIRATION) is not None:
        parts.append(_when(record[schema.EXPIRATION], time.time()))
    if _execution(record):
        parts.append(f"written by execution {_execution(record)}")
    return ", ".join(parts)


def _result(record: dict[str, Any]) -> str:
    status = record.get(schema.STATUS)
    if status == schema.INPROGRESS:
        return _lease(record)
    if schema.ERROR in record:
        return _escape(f"error {record[schema.ERROR]}")
    if schema.DATA in record:
        return f"{len(str(record[schema.DATA]).encode())} B inline"
    if schema.DATA_GZIP in record:
        return f"{len(base64.b64decode(record[schema.DATA_GZIP]))} B gzip"
    if schema.DATA_LOCATION in record:
        return _escape(str(record[schema.DATA_LOCATION]))
    return ""


def _lease(record: dict[str, Any]) -> str:
    lease = record.get(schema.IN_PROGRESS_EXPIRATION)
    if not isinstance(lease, (int, float)):
        return "no lease"
    return f"lease until {_at(lease / 1000)}" if lease / 1000 > time.time() else f"lease ended {_at(lease / 1000)}"


def _execution(record: dict[str, Any], *, full: bool = False) -> str:
    """The name (or whole ARN) of the execution that wrote the record: the owner token is
    "{execution ARN}#{holder}" (a Powertools record has none). The name is enough in a listing, whose
    record ids already name the workflow."""
    arn = schema.owner_execution(str(record.get(schema.OWNER, "")))
    return arn if full else arn.rpartition(":")[2]


def _at(epoch_seconds: float) -> str:
    return datetime.fromtimestamp(epoch_seconds, UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def _when(epoch_seconds: Any, now: float, future: str = "expires in", past: str = "expired") -> str:
    """How far ``epoch_seconds`` is from now, in its two largest units: "expires in 1d 0h"."""
    if not isinstance(epoch_seconds, (int, float)):
        return "never expires"
    seconds = int(abs(epoch_seconds - now))
    parts = [(seconds // 86400, "d"), (seconds % 86400 // 3600, "h"), (seconds % 3600 // 60, "m"), (seconds % 60, "s")]
    first = next((index for index, (amount, _) in enumerate(parts) if amount), len(parts) - 1)
    span = " ".join(f"{amount}{unit}" for amount, unit in parts[first : first + 2])
    return f"{future} {span}" if epoch_seconds > now else f"{past} {span} ago"


def _gunzipped(value: str) -> str:
    try:
        return _pretty(gzip.decompress(base64.b64decode(value)).decode())
    except (OSError, EOFError, ValueError) as error:  # not what the result function writes
        return f"(unreadable: {error})"


def _pretty(text: Any) -> str:
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(text)


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


def _filters(namespace: str | None, status: str | None) -> str:
    chosen = [f"namespace {namespace}" if namespace else "", f"status {status.upper()}" if status else ""]
    return "".join(f", {part}" for part in chosen if part)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


if __name__ == "__main__":
    main()
