"""One state of the explored world, as immutable values (named tuples: they hash and compare fast), so that
a state reached twice is one state.

The world is a clock, the idempotency table's items, the executions and their runs (a run is one thread
of an execution: the execution itself, or one iteration of an inline Map), the status-change events the
release function has not yet received, what is left of the bounds, and what the invariants remember
(``Watch``). Every JSON value is held as its text (``text``), which hashes fast and compares exactly.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, NamedTuple

# The explorer's clock starts here (2027-01-15T08:00:00Z) and moves in ticks of a second.
EPOCH_MS = 1_800_000_000_000
TICK_MS = 1_000
ACCOUNT, REGION = "123456789012", "us-east-1"


def text(value: Any) -> str:
    """A JSON value as the explorer holds it: compact, keys in order."""
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


@lru_cache(maxsize=65536)
def value(held: str) -> Any:
    """The JSON value held as ``held``; shared, never to be changed."""
    return json.loads(held)


def iso(millis: int) -> str:
    """A time as the context object writes it (``State.EnteredTime``): ISO 8601 UTC, milliseconds."""
    return datetime.fromtimestamp(millis / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{millis % 1000:03d}Z"


def execution_arn(machine: str, execution: str) -> str:
    return f"arn:aws:states:{REGION}:{ACCOUNT}:execution:{machine}:{execution}"


class Frame(NamedTuple):
    """Where a run is in one scope: the state it is in (entered, not yet left), its input, when it was
    entered (the run's clock), the attempts each retrier has made; for a Parallel or Map state waiting on
    its branches or items, their results so far, and what they are run on (``items``: a Map's items, or the
    input of a Parallel's branches)."""

    scope: str
    state: str
    input: str
    entered: int
    retries: tuple[int, ...] = ()
    results: tuple[str, ...] = ()
    items: str = "[]"


class Run(NamedTuple):
    """A thread of an execution: its frames (outermost first), the variables it assigned, how many
    ``$uuid()`` values it drew, and how it ended (``None`` while it runs). A run that ended keeps its
    frames: a redrive resumes it where it stopped."""

    name: str
    execution: str
    frames: tuple[Frame, ...]
    variables: str = "{}"
    drawn: int = 0
    ended: str | None = None  # "SUCCEEDED" or "FAILED" (or "ABORTED", crashed)
    output: str | None = None  # the output it ended with, or its {"Error", "Cause"}

    @property
    def running(self) -> bool:
        return self.ended is None

    @property
    def top(self) -> Frame:
        return self.frames[-1]


class Execution(NamedTuple):
    """An execution: its clock's skew (milliseconds ahead of the true clock), its status as
    ``DescribeExecution`` reads it, its redrives, and the requests of its ``updateItem`` tasks, as its
    history holds them (the release function reads them)."""

    name: str
    arn: str
    skew: int
    status: str = "RUNNING"
    redrives: int = 0


class Budget(NamedTuple):
    """What the bounds still allow: faults (a call failed before its effect, or applied with its reply
    lost), crashes, redrives, status-change events delivered twice, ticks of the clock, restarts of an
    asynchronous Express execution."""

    faults: int
    crashes: int
    redrives: int
    duplicates: int
    ticks: int
    restarts: int = 0


class Watch(NamedTuple):
    """What the invariants remember of the key's record: the life it is in (a new one each time it is
    written from absent or from finished and expired), whether a run completed it in this life, the runs
    that started the body in it (and in any life), each run's owner tokens, and the runs whose results a
    record held."""

    life: int = 0
    completed: bool = False
    starters: tuple[str, ...] = ()
    ran: tuple[str, ...] = ()  # the runs that ever started the body, in any life
    # (owner token, its run, the redrives of the run's execution when the run last wrote with it)
    tokens: tuple[tuple[str, str, int], ...] = ()
    stored: tuple[str, ...] = ()

    def owner(self, token: str | None) -> str | None:
        return next((run for held, run, _ in self.tokens if held == token), None)

    def mine(self, run: str) -> set[str]:
        """The owner tokens ``run`` wrote as the holder."""
        return {token for token, owner, _ in self.tokens if owner == run}

    def written(self, token: str | None) -> int:
        """The redrives of the holder's execution when it last wrote with ``token``."""
        return next((redrives for held, _, redrives in self.tokens if held == token), 0)

    def wrote(self, token: str, run: str, redrives: int) -> Watch:
        """``run`` wrote with ``token`` after its execution's ``redrives`` redrives."""
        kept = tuple(entry for entry in self.tokens if entry[0] != token)
        return self._replace(tokens=(*kept, (token, run, redrives)))


class Event(NamedTuple):
    """A status-change event the release function has yet to receive."""

    execution: str
    status: str
    redrives: int
    duplicate: bool = False  # a second delivery of one it received


class World(NamedTuple):
    now: int  # the true clock, epoch milliseconds
    items: tuple[tuple[str, str], ...]  # (record id, the item in DynamoDB's typed form), by id
    executions: tuple[Execution, ...]
    runs: tuple[Run, ...]
    events: tuple[Event, ...]
    budget: Budget
    watch: Watch = Watch()

    def execution(self, name: str) -> Execution:
        return next(execution for execution in self.executions if execution.name == name)

    def by_arn(self, arn: str) -> Execution | None:
        return next((execution for execution in self.executions if execution.arn == arn), None)

    def run(self, name: str) -> Run:
        return next(run for run in self.runs if run.name == name)

    def clock(self, run: Run) -> int:
        """What ``$millis()`` reads in ``run``'s execution."""
        return self.now + self.execution(run.execution).skew

    def item(self, record_id: str) -> dict[str, Any] | None:
        held = dict(self.items).get(record_id)
        return None if held is None else value(held)

    def with_item(self, record_id: str, item: dict[str, Any] | None) -> World:
        items = {key: held for key, held in self.items if key != record_id}
        if item is not None:
            items[record_id] = text(item)
        return self._replace(items=tuple(sorted(items.items())))

    def with_run(self, run: Run) -> World:
        return self._replace(runs=tuple(run if other.name == run.name else other for other in self.runs))

    def with_execution(self, execution: Execution) -> World:
        return self._replace(executions=tuple(execution if other.name == execution.name else other for other in self.executions))

    @property
    def ended(self) -> bool:
        """Whether every run has ended."""
        return all(not run.running for run in self.runs)


@lru_cache(maxsize=4096)
def describe_token(token: str) -> str:
    """An owner token in a few words: its execution, and the state entry or draw that made it."""
    arn, _, holder = token.partition("#")
    execution = arn.rsplit(":", 1)[-1]
    state, at, entered = holder.partition("@")
    if at:
        moment = datetime.strptime(entered, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
        return f"{execution}'s {state} at {(moment.timestamp() * 1000 - EPOCH_MS) / 1000:g} s"
    return f"{execution}'s {holder}" if holder else execution


def describe_item(item: dict[str, Any] | None) -> str:
    """A record in a few words: its status, its owner, its lease, in seconds of the explorer's clock."""
    if item is None:
        return "absent"
    status = str(item.get("status", {}).get("S", "no status"))
    owner = item.get("owner", {}).get("S")
    lease = item.get("in_progress_expiration", {}).get("N")
    said = status + (f" by {describe_token(owner)}" if owner else " without an owner")
    return said + (f", lease to {(int(lease) - EPOCH_MS) / 1000:g} s" if lease and status == "INPROGRESS" else "")
