"""How records, listings, counts and times are shown: rich tables on a terminal, JSON for scripts."""

from __future__ import annotations

import base64
import contextlib
import gzip
import json
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import click

from ..lambda_src import schema


# --- output ---------------------------------------------------------------------------------------
def console() -> Any:
    """The console for tables: on a terminal as wide as it is; piped, as wide as the table, so that
    no record id is ever folded across lines."""
    from rich.console import Console

    console = Console(highlight=False)
    if not console.is_terminal:
        console.width = 10_000
    return console


def echo_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, ensure_ascii=False))


@contextlib.contextmanager
def progress(description: str, total: int | None) -> Iterator[Callable[[int], None]]:
    """A progress bar on stderr, on a terminal only: a scan of a large table takes a while."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    counter = "{task.completed} of ~{task.total} records" if total else "{task.completed} records"
    columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TextColumn(counter), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True, disable=not console.is_terminal) as progress:
        task = progress.add_task(description, total=total)
        yield lambda scanned: progress.advance(task, scanned)


def listing(records: list[dict[str, Any]], title: str) -> Any:
    from rich.table import Table

    now = time.time()
    table = Table(title=title, caption=count(len(records), "record"))
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
            escape(record[schema.ID]),
            f"[red]{status}[/]" if status == schema.FAILED else f"[yellow]{status}[/]" if status == schema.INPROGRESS else status,
            ("[dim]" if expired else "") + (when(expiration, now) if expired or expiration is None else at(expiration)),
            escape(execution(record)),
            result(record),
        )
    return table


def fields_of(record: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """The record's attributes, readable: times as UTC dates, results decoded."""
    now = time.time()
    order = schema.ATTRIBUTES  # the schema's order; attributes of other writers after them
    for name in sorted(record, key=lambda name: (order.index(name) if name in order else len(order), name)):
        value = record[name]
        if name == schema.EXPIRATION and isinstance(value, (int, float)):
            text = f"{at(value)} ({when(value, now)})"
        elif name == schema.IN_PROGRESS_EXPIRATION and isinstance(value, (int, float)):
            text = at(value / 1000)
            if record.get(schema.STATUS) == schema.INPROGRESS:
                text += f" ({when(value / 1000, now, 'lease ends in', 'lease ended')})"
        elif name == schema.DATA:
            text = pretty(value)
        elif name == schema.DATA_GZIP:
            text = f"{len(base64.b64decode(value))} bytes gzip of: " + gunzipped(value)
        else:
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        yield name, text


def summary(record: dict[str, Any]) -> str:
    parts = [record.get(schema.STATUS, "?")]
    if record.get(schema.EXPIRATION) is not None:
        parts.append(when(record[schema.EXPIRATION], time.time()))
    if execution(record):
        parts.append(f"written by execution {execution(record)}")
    return ", ".join(parts)


def result(record: dict[str, Any]) -> str:
    status = record.get(schema.STATUS)
    if status == schema.INPROGRESS:
        return lease(record)
    if schema.ERROR in record:
        return escape(f"error {record[schema.ERROR]}")
    if schema.DATA in record:
        return f"{len(str(record[schema.DATA]).encode())} B inline"
    if schema.DATA_GZIP in record:
        return f"{len(base64.b64decode(record[schema.DATA_GZIP]))} B gzip"
    if schema.DATA_LOCATION in record:
        return escape(str(record[schema.DATA_LOCATION]))
    return ""


def lease(record: dict[str, Any]) -> str:
    lease = record.get(schema.IN_PROGRESS_EXPIRATION)
    if not isinstance(lease, (int, float)):
        return "no lease"
    return f"lease until {at(lease / 1000)}" if lease / 1000 > time.time() else f"lease ended {at(lease / 1000)}"


def execution(record: dict[str, Any], *, full: bool = False) -> str:
    """The name (or whole ARN) of the execution that wrote the record: the owner token is
    "{execution ARN}#{holder}" (a Powertools record has none). The name is enough in a listing, whose
    record ids already name the workflow."""
    arn = schema.owner_execution(str(record.get(schema.OWNER, "")))
    return arn if full else arn.rpartition(":")[2]


def at(epoch_seconds: float) -> str:
    return datetime.fromtimestamp(epoch_seconds, UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def when(epoch_seconds: Any, now: float, future: str = "expires in", past: str = "expired") -> str:
    """How far ``epoch_seconds`` is from now, in its two largest units: "expires in 1d 0h"."""
    if not isinstance(epoch_seconds, (int, float)):
        return "never expires"
    seconds = int(abs(epoch_seconds - now))
    parts = [(seconds // 86400, "d"), (seconds % 86400 // 3600, "h"), (seconds % 3600 // 60, "m"), (seconds % 60, "s")]
    first = next((index for index, (amount, _) in enumerate(parts) if amount), len(parts) - 1)
    span = " ".join(f"{amount}{unit}" for amount, unit in parts[first : first + 2])
    return f"{future} {span}" if epoch_seconds > now else f"{past} {span} ago"


def gunzipped(value: str) -> str:
    try:
        return pretty(gzip.decompress(base64.b64decode(value)).decode())
    except (OSError, EOFError, ValueError) as error:  # not what the result function writes
        return f"(unreadable: {error})"


def pretty(text: Any) -> str:
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(text)


def escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


def filters(namespace: str | None, status: str | None) -> str:
    chosen = [f"namespace {namespace}" if namespace else "", f"status {status.upper()}" if status else ""]
    return "".join(f", {part}" for part in chosen if part)


def count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"
