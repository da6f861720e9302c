"""`show`, `list`, `reset` and `purge-expired`: the records of a table."""

from __future__ import annotations

from itertools import islice
from typing import Any

import click

from ..errors import RecordInProgressError, RecordNotFoundError
from ..lambda_src import schema
from ..runtime import operations
from .group import STATUSES, cli
from .key_command import check_namespace
from .render import console, count, echo_json, execution, fields_of, filters, lease, listing, progress, summary
from .target import Target, check_record_id, with_table


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
@click.option(
    "--namespace",
    "namespace_filter",
    metavar="NAMESPACE",
    callback=check_namespace,
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
@cli.command(short_help="Delete one record, so that its work runs again.")
@click.argument("record_id", metavar="RECORD_ID", callback=check_record_id)
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@click.option("--force", is_flag=True, help="Reset a record in progress too (only if its execution is gone).")
@with_table
def reset(record_id: str, yes: bool, force: bool, target: Target) -> None:
    """Delete one record, so that the next request with its key runs the work again."""
    record = operations.plain(get(target, record_id))
    if record.get(schema.STATUS) == schema.INPROGRESS and not force:
        raise in_progress(record)
    click.echo(f"{record_id}: {summary(record)}")
    if not yes:
        try:
            click.confirm("Reset it, so that the next request with this key runs the work again?", abort=True)
        except click.Abort:
            raise click.ClickException("not reset: not confirmed (pass --yes to reset without asking)") from None
    try:
        deleted = operations.plain(operations.reset(target.table, record_id, force=force, client=target.dynamodb))
    except RecordInProgressError:  # acquired again since it was read
        raise in_progress(operations.plain(get(target, record_id))) from None
    click.echo(f"Reset {record_id}: its {deleted.get(schema.STATUS, 'record')} record is deleted.")
    if schema.DATA_LOCATION in deleted:
        click.echo(f"Its result object {deleted[schema.DATA_LOCATION]} is left to the results bucket's lifecycle rule.")


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
    reset --force deletes one on purpose.
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
            "(see `list --status INPROGRESS`; reset --force deletes one whose execution is gone)."
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


def in_progress(record: dict[str, Any]) -> click.ClickException:
    return click.ClickException(
        f"not reset: {record[schema.ID]} is in progress, held by {execution(record, full=True) or 'an execution'} "
        f"({lease(record)}), which may still be running; a reset now would let a duplicate run the work alongside it. "
        "Wait for it to finish, or pass --force if you know the execution is gone"
    )
