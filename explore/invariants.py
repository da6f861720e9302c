"""The promises the explorer checks, each named after the contract's (docs/explanation/contract.md), and the
exceptions the contract names to them, which the explorer shows happening rather than forbids.

The checks judge what happened (an item as it was before a write and after it, which run wrote it, where a
run is), never the conditions the states wrote: a condition that fails to fence shows as the harm it lets
through. ``Watch`` (in ``world``) is what they remember between transitions.
"""

from __future__ import annotations

import base64
import gzip
import json
from dataclasses import dataclass
from typing import Any

from idempotent_constructs.guard.protocol import Facts
from idempotent_constructs.lambda_src import schema

from . import services
from .configurations import Configuration
from .world import Event, Run, Watch, World, text, value


@dataclass(frozen=True)
class Promise:
    name: str
    contract: str
    text: str


ONCE = Promise(
    "once_per_record",
    "B2, B4",
    "the body starts at most once while its record lives, and only under the key its run took: a duplicate "
    "of a completed run replays it",
)
FENCED = Promise(
    "fenced_writes", "B8", "no stale owner token ever writes: every write after the one that took the key is its holder's own"
)
REPLAYED = Promise(
    "replay_exact", "B1, B4", "a replay returns exactly the output the completing run stored, and a run its own output"
)
LIVE = Promise(
    "live_holder_kept",
    "B7",
    "a live holder within its lease (by its own clock, within the skew bound) is never taken over; with the owner check, "
    "a running holder never is",
)
KEPT = Promise("completed_kept", "B11, B14", "a finished record is never taken, overwritten nor deleted before it expires")
FREE = Promise("no_key_stuck", "B6, B7", "every execution can still end, and once all have, the key is free or completed")
ACCEPTED = Promise("requests_accepted", "B15", "every request the states build is one the service accepts")
REDRIVABLE = Promise(
    "kept_for_redrive",
    "B24",
    "with FailurePolicy.KEEP_FOR_REDRIVE, an execution that ended without finishing keeps its key: no other run takes "
    "it, and its redrive resumes with it",
)
PROMISES = (ONCE, FENCED, REPLAYED, LIVE, KEPT, FREE, ACCEPTED, REDRIVABLE)


@dataclass(frozen=True)
class Exemption:
    """A case the contract names where the body runs again, which the explorer shows (its first trace)."""

    name: str
    contract: str
    text: str


ENDED = Exemption(
    "ended_holder_taken_over", "B7", "a holder that ended without finishing its record (it crashed, or lost it) is taken over"
)
LAPSED = Exemption("lapsed_holder_taken_over", "B7", "without the owner check, a holder running past its lease is taken over")
RELEASED = Exemption("failed_body_runs_again", "B6", "a body that failed (a lost reply included) released its key: it runs again")
EXPIRED = Exemption("expired_record_runs_again", "B11", "a finished record past its expiration counts as absent")
SIBLING = Exemption(
    "same_execution_holder_taken_over",
    "B7",
    "with the owner check, a holder of the taker's own execution (another iteration of its inline Map, a branch "
    "cancelled mid-body) past its lease is taken over: the check cannot tell a running one from a cancelled one",
)
REDRIVEN = Exemption(
    "redrive_resumes_without_its_key",
    "B6, B7",
    "a redriven execution resumes its body where it stopped, its key freed or taken over after it ended; or, "
    "redriven while it took its key, finds its own earlier record and waits for it (issue 53)",
)
EXEMPTIONS = (ENDED, LAPSED, SIBLING, RELEASED, EXPIRED, REDRIVEN)


class Violation(Exception):
    """A promise broken; ``happened`` is the transition that broke it, in words, once known."""

    def __init__(self, promise: Promise, what: str) -> None:
        super().__init__(f"{promise.name} ({promise.contract}): {what}")
        self.promise, self.what = promise, what
        self.happened: list[str] = []


def _status(item: dict[str, Any] | None) -> str | None:
    return None if item is None else item.get(schema.STATUS, {}).get("S")


def _owner(item: dict[str, Any] | None) -> str | None:
    return None if item is None else item.get(schema.OWNER, {}).get("S")


def _lease(item: dict[str, Any]) -> int:
    return int(item.get(schema.IN_PROGRESS_EXPIRATION, {}).get("N", 0))


def _expired(item: dict[str, Any], clock: int) -> bool:
    """Past its expiration as the write that took it saw the time (``clock``, epoch milliseconds)."""
    return int(item.get(schema.EXPIRATION, {}).get("N", 0)) < clock // 1000


def body_output(configuration: Configuration, run: str) -> str:
    """The output of ``run``'s body: the side effect's result, as its ``LambdaInvoke`` gives it."""
    return text(services.invoked(services.effect(run, configuration.padding)))


def stored_result(item: dict[str, Any]) -> str | None:
    """The result a completed record holds, as text (the inline JSON, or the compressed one)."""
    if schema.DATA in item:
        return text(json.loads(item[schema.DATA]["S"]))
    if schema.DATA_GZIP in item:
        return text(json.loads(gzip.decompress(base64.b64decode(item[schema.DATA_GZIP]["B"]))))
    return None


class Checks:
    """The promises checked on one configuration's transitions; ``skew`` the bound of two clocks' difference
    (milliseconds). Each check returns the ``Watch`` after the transition, and the exemption it shows, if any."""

    def __init__(self, configuration: Configuration, skew: int) -> None:
        self.configuration, self.skew = configuration, skew
        self.variable = Facts(configuration.prefix).name

    # --- writes -------------------------------------------------------------------------------------------
    def write(
        self, world: World, run: Run, before: dict[str, Any] | None, after: dict[str, Any] | None
    ) -> tuple[Watch, Exemption | None]:
        """A write by ``run`` (its own, or the result function's for it) that changed the item."""
        watch = world.watch
        if after is not None:
            self._well_formed(after)
            self._lease_bounded(world, run, after)
        if (
            after is not None
            and _status(after) == schema.INPROGRESS
            and (before is None or _status(before) != schema.INPROGRESS or _owner(before) != _owner(after))
        ):
            return self._hold(world, run, before, after)
        mine = watch.mine(run.name)
        if before is None:
            if _status(after) not in (schema.COMPLETED, schema.FAILED):
                raise Violation(FENCED, f"{run.name} wrote a record that was gone, and made it {after}")
        elif _owner(before) not in mine:
            raise Violation(FENCED, f"{run.name} wrote the record of {watch.owner(_owner(before)) or _owner(before)}")
        else:
            watch = watch.wrote(_owner(before) or "", run.name, world.execution(run.execution).redrives)
        if before is not None and _status(before) != schema.INPROGRESS and after is None:
            raise Violation(KEPT, f"{run.name} deleted a {_status(before)} record")
        if after is not None and _status(after) == schema.COMPLETED and _status(before) != schema.COMPLETED:
            return self._completed(watch, run, after), None
        return watch, None

    def _well_formed(self, item: dict[str, Any]) -> None:
        missing = [name for name in (schema.STATUS, schema.OWNER, schema.EXPIRATION, schema.VALIDATION) if name not in item]
        if missing:
            raise Violation(FENCED, f"a write left a record without {', '.join(missing)}: {item}")

    def _lease_bounded(self, world: World, run: Run, after: dict[str, Any]) -> None:
        """A lease written runs at most the guard's ``lease`` from the writer's now: a holder that crashes frees
        its key within that (B7)."""
        if _status(after) == schema.INPROGRESS and _lease(after) > world.clock(run) + self.configuration.lease_ms:
            ends = (_lease(after) - world.clock(run)) / 1000
            raise Violation(FREE, f"{run.name} wrote a lease ending {ends:g} s from its now, past the guard's lease")

    def _hold(
        self, world: World, run: Run, before: dict[str, Any] | None, after: dict[str, Any]
    ) -> tuple[Watch, Exemption | None]:
        watch = world.watch
        token = _owner(after) or ""
        if watch.owner(token) not in (None, run.name):
            raise Violation(FENCED, f"{run.name} took the key with the owner token of {watch.owner(token)}")
        exemption = None
        if before is None:
            watch = watch._replace(life=watch.life + 1, completed=False, starters=())
        elif _status(before) != schema.INPROGRESS:
            if not _expired(before, world.now + self.skew):
                raise Violation(KEPT, f"{run.name} took a {_status(before)} record before it expired")
            watch = watch._replace(life=watch.life + 1, completed=False, starters=())
            exemption = EXPIRED
        else:
            exemption = self._taken_over(world, run, before)
        return watch.wrote(token, run.name, world.execution(run.execution).redrives), exemption

    def _taken_over(self, world: World, run: Run, before: dict[str, Any]) -> Exemption | None:
        """``run`` took a record in progress over: its holder must be itself, ended, or past its lease by its own
        clock (within the skew bound); with the owner check, ended as the taker read it, and redriven since."""
        holder = world.watch.owner(_owner(before))
        if holder is None:
            raise Violation(LIVE, f"{run.name} took over a record no run holds: {before}")
        if holder == run.name:
            return None
        holding = world.run(holder)
        if not holding.running:
            if self.configuration.kept_for_redrive and world.execution(holding.execution).status != "SUCCEEDED":
                raise Violation(REDRIVABLE, f"{run.name} took the key over from {holder}, whose execution can be redriven")
            return ENDED
        held = world.clock(holding)
        if held < _lease(before) - self.skew:
            raise Violation(
                LIVE,
                f"{run.name} took the key over from {holder}, which still runs {(_lease(before) - held) / 1000:g} s "
                "before its lease ends by its own clock",
            )
        execution = world.execution(holding.execution)
        redriven = execution.redrives > world.watch.written(_owner(before))  # it ended after it wrote it, then resumed
        if self.configuration.owner_check and holding.execution == run.execution:
            return SIBLING
        if self.configuration.owner_check:
            described = value(run.variables).get(self.variable, {}).get("holder") or {}
            if redriven and described.get("ExecutionArn") == execution.arn and described.get("Status") in schema.EXECUTION_ENDED:
                return REDRIVEN
            raise Violation(LIVE, f"{run.name} took the key over from {holder}, which still runs, despite the owner check")
        return REDRIVEN if redriven else LAPSED

    def _completed(self, watch: Watch, run: Run, after: dict[str, Any]) -> Watch:
        stored = stored_result(after)
        if stored is None:
            raise Violation(REPLAYED, f"{run.name} completed the record without a result it can give back: {after}")
        if stored != body_output(self.configuration, run.name):
            raise Violation(REPLAYED, f"{run.name} completed the record with a result not its body's: {stored[:120]}")
        return watch._replace(completed=True, stored=tuple(sorted({*watch.stored, run.name})))

    def released(self, world: World, execution: str, before: dict[str, Any] | None) -> None:
        """The release function deleted the record ``before`` on a status-change event of ``execution``."""
        holder = world.watch.owner(_owner(before))
        if _status(before) != schema.INPROGRESS:
            raise Violation(KEPT, f"the release function deleted a {_status(before)} record")
        if holder is None or world.run(holder).execution != execution:
            raise Violation(FENCED, f"the release function, for {execution}, deleted the record of {holder or _owner(before)}")
        if world.run(holder).running:
            raise Violation(LIVE, f"the release function freed the key of {holder}, which still runs")

    def delivered(self, world: World, event: Event) -> None:
        """The release function got ``event``, and its execution is still over, not redriven since: no key the
        execution holds is left held."""
        execution = event.execution
        ended = world.execution(execution)
        if ended.status not in schema.EXECUTION_ENDED_WITHOUT_RELEASE or ended.redrives != event.redrives:
            return
        for _, held in world.items:
            item = value(held)
            holder = world.watch.owner(_owner(item))
            if _status(item) == schema.INPROGRESS and holder is not None and world.run(holder).execution == execution:
                raise Violation(FREE, f"the release function left the key of {holder}, whose execution ended, held: {item}")

    def expired(self, world: World, before: dict[str, Any]) -> Exemption | None:
        """DynamoDB's TTL deleted ``before``: past its expiration; a holder's record only once it lapsed."""
        if _status(before) == schema.INPROGRESS:
            holder = world.watch.owner(_owner(before))
            if holder is not None and world.run(holder).running and world.clock(world.run(holder)) < _lease(before) - self.skew:
                raise Violation(LIVE, f"TTL deleted the record of {holder} within its lease")
        return EXPIRED

    # --- runs ---------------------------------------------------------------------------------------------
    def body(self, world: World, run: Run) -> tuple[Watch, Exemption | None]:
        """``run`` started its body: under the key it holds, in a life of the record no run completed, and once."""
        watch = world.watch
        item = next((world.item(record_id) for record_id, _ in world.items), None)
        if item is None or _status(item) != schema.INPROGRESS or _owner(item) not in watch.mine(run.name):
            raise Violation(ONCE, f"{run.name} started the body without holding its key (the record: {item})")
        if watch.completed:
            raise Violation(ONCE, f"{run.name} started the body after a run completed it in this life of the record")
        if run.name in watch.starters:
            raise Violation(ONCE, f"{run.name} started the body a second time in this life of the record")
        released = not watch.starters and any(runner != run.name for runner in watch.ran)
        ran = watch.ran if run.name in watch.ran else (*watch.ran, run.name)
        return watch._replace(starters=(*watch.starters, run.name), ran=ran), RELEASED if released else None

    def ended(self, world: World, run: Run) -> Exemption | None:
        """``run`` ended: where it succeeded, with its own body's output, or one a completing run stored; where it
        failed, leaving no key of its own held (B6: a failure releases it, or is recorded), unless its policy
        leaves that to the release function (``FailurePolicy.RELEASE_WHEN_EXECUTION_FAILS``) or keeps it for a
        redrive (``KEEP_FOR_REDRIVE``), or it held the key before a redrive of its execution (which came back to it
        under another entry's token: issue 53)."""
        configuration = self.configuration
        if run.ended == "FAILED" and not (configuration.released_by_events or configuration.kept_for_redrive):
            for _, held in world.items:
                item = value(held)
                if _status(item) == schema.INPROGRESS and _owner(item) in world.watch.mine(run.name):
                    if world.watch.written(_owner(item)) < world.execution(run.execution).redrives:
                        return REDRIVEN
                    raise Violation(FREE, f"{run.name} failed and left its key held: {item}")
        if run.ended != "SUCCEEDED" or run.output is None:
            return None
        if run.name in world.watch.ran:
            if run.output != body_output(self.configuration, run.name):
                raise Violation(REPLAYED, f"{run.name} ran its body and ended with another output: {run.output[:120]}")
        elif not any(run.output == body_output(self.configuration, runner) for runner in world.watch.stored):
            raise Violation(REPLAYED, f"{run.name} replayed an output no completing run stored: {run.output[:120]}")
        return None

    def free(self, world: World) -> None:
        """Every run has ended: the key is free (absent, or held by a run that did not succeed, which its lease,
        the owner check or the release function frees) or finished."""
        for _, held in world.items:
            item = value(held)
            if _status(item) in (schema.COMPLETED, schema.FAILED):
                continue
            holder = world.watch.owner(_owner(item))
            if holder is None or world.run(holder).ended == "SUCCEEDED":
                raise Violation(FREE, f"every execution ended, and the key is still held by {holder or _owner(item)}: {item}")
