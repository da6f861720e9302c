"""`show`, `list`, `reset`, `stale` and `purge-expired`: the records of a table."""

from __future__ import annotations

import json
import time
from itertools import islice
from pathlib import Path
from typing import Any

import click

from ..errors import RecordInProgressError, RecordNotFoundError
from ..lambda_src import schema
from ..runtime import operations
from .group import STATUSES, cli
from .key_command import check_namespace
from .render import console, count, echo_json, execution, fields_of, filters, lease, listing, progress, summary
from .target import Target, check_record_id, with_table

NAMESPACE_FILTER = click.option(
    "--namespace",
    "namespace_filter",
    metavar="NAMESPACE",
    callback=check_namespace,
    help="Only this namespace's records; a trailing * takes every namespace starting with the rest.",
)

STATUS_FILTER = click.option(
    "--status",
    type=click.Choice(STATUSES, case_sensitive=False),
    metavar="[" + "|".join(STATUSES) + "]",
    help="Only records with this status (reset: with --namespace).",
)


# --- show, list -----------------------------------------------------------------------------------
@cli.command(short_help="Show one record.")
@click.argument("record_id", metavar="RECORD_ID", callback=check_record_id)
@click.option("--json", "as_json", is_flag=True, help="Print the record as JSON.")
@with_table
def show(record_id: str, as_json: bool, target: Target) -> None:
    """Show one record: status, expiry, holder, result or error."""
    record = operations.plain(get(target, record_id))
    if as_json:
        echo_json(record)
        return
    described = list(fields_of(record))
    width = max(len(name) for name, _ in described) + 2
    for name, value in described:
        click.echo(f"{name:<{width}}" + value.replace("\n", "\n" + " " * width))


@cli.command("list", short_help="List records, by namespace and status, a page at a time.")
@NAMESPACE_FILTER
@STATUS_FILTER
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True, help="Records per page.")
@click.option("--all", "everything", is_flag=True, help="Every matching record, in one page.")
@click.option("--after", metavar="RECORD_ID", help="Start after this record: the `next` of the previous page.")
@click.option("--json", "as_json", is_flag=True, help='Print {"records": [...], "next": RECORD_ID or null} as JSON.')
@with_table
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
    with progress("Listing records", target.total()) as advance:
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
        echo_json({"records": records, "next": following})
        return
    if not records:
        click.echo(f"No records in table {target.table}" + filters(namespace_filter, status) + ".")
        return
    console().print(listing(records, target.table + filters(namespace_filter, status)))
    if following is not None:
        click.echo(f"More records: add --after '{following}' for the next page, or --all.")


# --- reset, purge ---------------------------------------------------------------------------------
@cli.command(short_help="Delete a record, or a namespace's records, so that their work runs again.")
@click.argument("record_id", metavar="[RECORD_ID]", required=False, callback=check_record_id)
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@click.option(
    "--holder",
    metavar="EXECUTION_ARN",
    help="Reset a record in progress although its holder may still run: name that execution (`show` prints it).",
)
@NAMESPACE_FILTER
@STATUS_FILTER
@click.option("--dry-run", is_flag=True, help="With --namespace: say what would be reset and what kept, reset nothing.")
@click.option(
    "--log",
    "log_path",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    help="With --namespace: where to write what was reset, as JSON lines (default: "
    "idempotent-constructs-reset-{UTC time}.jsonl in the current directory).",
)
@with_table
def reset(
    record_id: str | None,
    yes: bool,
    holder: str | None,
    namespace_filter: str | None,
    status: str | None,
    dry_run: bool,
    log_path: Path | None,
    target: Target,
) -> None:
    """Delete one record (RECORD_ID), or every record of a namespace (--namespace, optionally --status), so
    that the next request with its key runs the work again.

    A record in progress is reset only once nothing can act on it: its Standard execution has ended (Step
    Functions is asked), or, for an Express one, its lease has lapsed. Otherwise name its holder with
    --holder to reset one anyway (a namespace's are kept, and listed); either way a record is deleted only
    while that execution holds it still. A namespace's reset writes a line of JSON for each record it
    deleted (its id, status, holder and when) to a log, and --dry-run shows what it would do.
    """
    if (record_id is None) == (namespace_filter is None):
        raise click.UsageError("give a RECORD_ID, or --namespace (with --status) to reset a namespace's records")
    if record_id is None:
        if holder is not None:
            raise click.UsageError("--holder names the holder of one record: give its RECORD_ID")
        assert namespace_filter is not None
        _reset_many(target, namespace_filter, status and status.upper(), yes=yes, dry_run=dry_run, log_path=log_path)
        return
    if status or dry_run or log_path:
        raise click.UsageError("--status, --dry-run and --log go with --namespace")
    found = get(target, record_id)
    record = operations.plain(found)
    holder, lease, note = resettable(found, holder, target)
    if note:
        click.echo(f"{record_id} is in progress, but its holder can no longer act on it: {note}.")
    click.echo(f"{record_id}: {summary(record)}")
    if not yes:
        try:
            click.confirm("Reset it, so that the next request with this key runs the work again?", abort=True)
        except click.Abort:
            raise click.ClickException("not reset: not confirmed (pass --yes to reset without asking)") from None
    try:
        deleted = operations.plain(operations.reset(target.table, record_id, holder=holder, lease=lease, client=target.dynamodb))
    except RecordInProgressError:  # acquired again, or taken over, since it was read
        raise in_progress(operations.plain(get(target, record_id)), "it changed since it was read") from None
    click.echo(f"Reset {record_id}: its {deleted.get(schema.STATUS, 'record')} record is deleted.")
    if schema.DATA_LOCATION in deleted:
        click.echo(f"Its result object {deleted[schema.DATA_LOCATION]} is left to the results bucket's lifecycle rule.")


def resettable(found: dict[str, Any], holder: str | None, target: Target) -> tuple[str | None, int | None, str]:
    """``(holder, lease, why)`` to reset ``found`` with (``operations.reset``'s fence, and why its holder no
    longer acts, for a record in progress); raises ``in_progress`` where its holder may still run and is not
    ``holder``, or a ClickException where ``holder`` is not its holder."""
    record = operations.plain(found)
    if record.get(schema.STATUS) != schema.INPROGRESS:
        return holder, None, ""
    held_by = operations.holder_of(found)
    if holder is not None:
        if holder != held_by:
            raise click.ClickException(f"not reset: {record[schema.ID]} is held by {held_by or 'an execution'}, not by {holder}")
        return holder, None, ""
    ended, why = operations.holder_state(found, stepfunctions=target.stepfunctions)
    if not ended:
        raise in_progress(record, why)
    # No owner token (another tool's record): deleted while its lease is the one read.
    return held_by, None if held_by else int(record.get(schema.IN_PROGRESS_EXPIRATION, 0)), why


def _reset_many(target: Target, namespace: str, status: str | None, *, yes: bool, dry_run: bool, log_path: Path | None) -> None:
    """``reset --namespace``: each record of the namespace that may be reset, after one confirmation."""
    chosen, kept = [], []
    with progress("Reading records", target.total()) as advance:
        for found in operations.list_records(
            target.table, namespace=namespace, status=status, client=target.dynamodb, on_page=advance
        ):
            try:
                chosen.append((found, *resettable(found, None, target)))
            except click.ClickException as refused:
                kept.append(refused.message.removeprefix("not reset: "))
    where = target.table + filters(namespace, status)
    for reason in kept:
        click.echo(f"Kept: {reason.split('; a reset now')[0]}")
    if dry_run or not chosen:
        verb = "Would reset" if dry_run else "Reset"
        click.echo(f"{verb} {count(len(chosen), 'record')} in {where}; {count(len(kept), 'record')} kept in progress.")
        for found, *_ in chosen:  # none unless a dry run
            click.echo(f"  {found[schema.ID]['S']}: {summary(operations.plain(found))}")
        return
    if not yes:
        try:
            click.confirm(f"Reset {count(len(chosen), 'record')} in {where}, so that their work runs again?", abort=True)
        except click.Abort:
            raise click.ClickException("not reset: not confirmed (pass --yes to reset without asking)") from None
    log_path = log_path or Path(f"idempotent-constructs-reset-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.jsonl")
    changed = 0
    with log_path.open("a", encoding="utf-8") as log:
        for found, holder, lease, _ in chosen:
            record_id = found[schema.ID]["S"]
            try:
                deleted = operations.plain(
                    operations.reset(target.table, record_id, holder=holder, lease=lease, client=target.dynamodb)
                )
            except (RecordInProgressError, RecordNotFoundError):  # taken again, or gone, since it was read
                changed += 1
                continue
            entry = {
                "id": record_id,
                "status": deleted.get(schema.STATUS),
                "holder": holder,
                "reset_at": time.time(),
                "table": target.table,
            }
            log.write(json.dumps(entry) + "\n")
    reset_count = len(chosen) - changed
    click.echo(
        f"Reset {count(reset_count, 'record')} in {where}"
        + (f"; {count(changed, 'record')} changed since read, kept" if changed else "")
        + (f"; {count(len(kept), 'record')} kept in progress" if kept else "")
        + f". What was reset is in {log_path}."
    )


@cli.command(short_help="Report records in progress whose holder can no longer act on them.")
@NAMESPACE_FILTER
@click.option("--json", "as_json", is_flag=True, help='Print [{"id", "holder", "why"}, ...] as JSON.')
@with_table
def stale(namespace_filter: str | None, as_json: bool, target: Target) -> None:
    """Report the records in progress whose holder has ended: its Standard execution, as Step Functions
    says, or an Express one (or one Step Functions cannot be asked about) whose lease has lapsed. Each
    keeps its key from duplicates until one takes it over, or `reset` deletes it. Deletes nothing."""
    found: list[dict[str, str]] = []
    stepfunctions = target.stepfunctions
    with progress("Checking holders", target.total()) as advance:
        for item in operations.list_records(
            target.table, namespace=namespace_filter, status=schema.INPROGRESS, client=target.dynamodb, on_page=advance
        ):
            ended, why = operations.holder_state(item, stepfunctions=stepfunctions)
            if ended:
                found.append({"id": item[schema.ID]["S"], "holder": operations.holder_of(item), "why": why})
    if as_json:
        echo_json(found)
        return
    for entry in found:
        click.echo(f"{entry['id']}: held by {entry['holder'] or 'an execution'}; {entry['why']}")
    click.echo(
        f"{count(len(found), 'record')} in progress whose holder has ended in {target.table}"
        + filters(namespace_filter, None)
        + ("; `reset RECORD_ID` deletes one." if found else ".")
    )


@cli.command("purge-expired", short_help="Delete expired finished records now, not when TTL does.")
@click.option("--dry-run", is_flag=True, help="Count what would be deleted, delete nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the counts as JSON.")
@with_table
def purge_expired(dry_run: bool, as_json: bool, target: Target) -> None:
    """Delete the finished records whose expiration has passed (by more than 5 minutes, in case this
    machine's clock runs ahead), now rather than when DynamoDB's TTL gets to them (it can take
    days). The workflows already treat them as absent.

    A record that changes meanwhile is kept. A record in progress is never purged, even when its
    expiration has passed: the workflows take it over only through its lease, never by expiry;
    reset deletes one whose holder has ended.
    """
    with progress("Purging expired records", target.total()) as advance:
        summary = operations.purge_expired(target.table, dry_run=dry_run, client=target.dynamodb, on_page=advance)
    if as_json:
        echo_json({"dry_run": dry_run, **vars(summary)})
        return
    verb = "Would delete" if dry_run else "Deleted"
    click.echo(f"{verb} {count(summary.deleted, 'expired record')} of {summary.scanned} scanned in {target.table}.")
    if summary.in_progress:
        click.echo(
            f"Kept {count(summary.in_progress, 'expired record')} in progress: a purge never deletes one "
            "(see `list --status INPROGRESS`; reset deletes one whose holder has ended)."
        )
    if summary.changed:
        click.echo(f"Kept {count(summary.changed, 'record')} that changed while purging.")


# --- errors ---------------------------------------------------------------------------------------
def get(target: Target, record_id: str) -> dict[str, Any]:
    try:
        return operations.get_record(target.table, record_id, client=target.dynamodb)
    except RecordNotFoundError:
        namespace = schema.split_id(record_id)[0]
        raise click.ClickException(
            f"no record {record_id!r} in table {target.table}: it was never written, was reset, or TTL deleted it; "
            f"check the id (`key` computes it), or list the namespace with `list --namespace {namespace}`"
        ) from None


def in_progress(record: dict[str, Any], why: str) -> click.ClickException:
    holder = execution(record, full=True)
    return click.ClickException(
        f"not reset: {record[schema.ID]} is in progress, held by {holder or 'an execution'} ({lease(record)}), which "
        f"may still be running ({why}); a reset now would let a duplicate run the work alongside it. Wait for it to "
        f"finish, or pass --holder {holder or '<its execution ARN>'} to reset it anyway"
    )
