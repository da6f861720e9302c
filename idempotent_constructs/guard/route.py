"""What a run that found its key taken does: read the record (``Inspect``) and follow the route.

The route is one ordered table of (condition, state): the first rule that holds wins. The same
conditions, on the record a poll read, decide whether a waiter keeps waiting (``wait``).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from aws_cdk import aws_stepfunctions as sfn

from .._jsonata.key_expressions import literal
from .._synth import read_once
from ..lambda_src import schema
from . import marker, record_tasks
from .owner_check import holder_fields, owner_check
from .protocol import (
    HOLDER,
    ID,
    MEMBERS,
    OWNER,
    OWNER_GONE_ERRORS,
    QUERY_FAILED,
    RECORD,
    VALIDATION,
    expression,
)
from .tasks import SAME_INPUT, GuardState, fail, invoke, item_task, kit, retry_transient

if TYPE_CHECKING:
    from . import IdempotencyGuard


def owner_done(holder: str) -> str:
    """The owner check's verdict lets a takeover go ahead when the holder's execution has ended, or
    when it is this very execution (a branch cancelled mid-body: its own lease is all there is)."""
    ended = ", ".join(f"'{status}'" for status in schema.EXECUTION_ENDED)
    return f"{holder}.Status in [{ended}] or {holder}.ExecutionArn = $states.context.Execution.Id"


@functools.lru_cache(maxsize=1024)
def condition(text: str) -> sfn.Condition:
    """The Choice rule's condition ``text`` (JSONata), made once a process: a condition is a value, and
    each one made is a call into the CDK's Node.js process."""
    return sfn.Condition.jsonata(expression(text))


def inspect(guard: IdempotencyGuard) -> GuardState:
    facts = guard.facts
    task = item_task(
        guard,
        "Inspect",
        config=guard.config,
        action="getItem",
        arguments=record_tasks.read(guard.config, facts),
        assign={
            facts.name: expression(
                f"$merge([${facts.name}, {{'{RECORD}': $exists($states.result.Item) ? $states.result.Item : null}}])"
            )
        },
    )
    return task


def mismatch_cause(guard: IdempotencyGuard) -> str:
    """JSONata for ``PayloadMismatch``'s cause: the record's id, and the payload's members whose digests differ
    from those the record keeps (``schema.PAYLOAD_MEMBERS``), by name, where both sides have them: never a value."""
    facts = guard.facts
    kept, mine = facts.record(schema.PAYLOAD_MEMBERS, "M"), facts(MEMBERS)
    differ = (
        f"($s := {kept}; $m := {mine}; $count($keys($s)) > 0 and $count($keys($m)) > 0 ? "
        "$sort($filter($distinct($append($keys($s), $keys($m))), function($n) {$not($lookup($s, $n).S = $lookup($m, $n).S)})))"
    )
    text = literal("The idempotency key was already used with a different payload (record ")
    return f"($d := $append([], {differ}); {text} & {facts(ID)} & ')' & ($count($d) > 0 ? '; the members that differ: ' & $join($d, ', ') : ''))"


def route(
    guard: IdempotencyGuard,
    *,
    acquire: sfn.IChainable,
    takeover: sfn.IChainable,
    wait: sfn.IChainable,
    replay_failure: sfn.IChainable | None,
) -> tuple[sfn.Choice, sfn.Map | None]:
    """``(Route, Replay)``: Replay ends the guard with a replayed result.

    ``Replay`` is where a run that read a record goes (after ``Inspect``, and after a wait): a Map state
    over no items where the record holds the result inline, which its ``Output`` gives, and over one,
    which runs ``Restore``, where the result function keeps it. Its ``Items`` raise otherwise
    (``States.QueryEvaluationError``, which its Catch takes to ``Route``). So a replay enters ``Acquire,
    Inspect, Replay`` (and ``Restore``), with no Choice state before it; a wait that ends in a replay as
    many states as before, and anything else one more (``Replay``, then ``Route``), which never goes back to
    ``Replay``. (An error in ``Items``, like one in a Task's ``Arguments``, fails the state before its
    work, where its own Catch takes it. One in a state's ``Output`` would not do: moto, whose interpreter
    is LocalStack's, evaluates ``Output`` after the Retry and Catch loop. ``Output`` raises only for a
    result that cannot be given back: restored, but not an object for the replay marker, or held inline
    but not JSON; it fails the run there on moto, and in ``NotAnObject`` or ``Unreadable`` where the
    Catch takes it.) Without a replay (``on_completed=REJECT``) there is no ``Replay``: runs go to ``Route``."""
    config, facts = guard.config, guard.facts
    name = config.name
    record = facts.record
    # In order; the first rule that holds wins.
    rules: list[tuple[str, sfn.IChainable]] = [(record.absent, acquire)]
    if config.payload.kind != schema.KIND_NONE:
        mismatch = fail(guard, config, "PayloadMismatch", error=schema.PAYLOAD_MISMATCH, cause=expression(mismatch_cause(guard)))
        # Another payload's record, unless it is in progress past its lease: a crashed holder's
        # payload must not block the key (it is taken over below, after the owner check).
        rules.append((f"{record(schema.VALIDATION)} != {facts(VALIDATION)} and $not({record.lapsed})", mismatch))
    if config.rejects_completed:
        rules.append((record.status(schema.COMPLETED), rejected(guard)))
    else:
        # Replay, the only way into the route, takes every completed record of this payload: one here holds
        # a result that cannot carry the replay marker (not an object), or one Replay could not read back
        # (not JSON). Never back to Replay, which would hand it here again.
        cannot = marker.not_an_object(guard) if config.replay_marker is not None else unreadable(guard)
        rules.append((record.status(schema.COMPLETED), cannot))
    if replay_failure is not None:
        rules.append((record.status(schema.FAILED), replay_failure))
    # A record in progress that is this run's own: a write that made it the holder, applied by DynamoDB
    # but reported failed, whose retry its condition refused (B12). Taken at once (fenced on what was
    # read, so that its lease starts again), never waited for. The run knows it by the owner token its
    # write wrote (record_tasks.owner_written), which it keeps: not by its execution alone, which an
    # Express execution that AWS restarts (at-least-once) shares with its first attempt, maybe still running.
    # But a guard that runs once per execution, redriven, knows any record its execution holds as its own: only
    # an ended execution is redriven (Standard; never Express), so its earlier attempt is over.
    own = f"{record(schema.OWNER)} = {facts(OWNER)}"
    if config.once_per_execution:
        redriven = "$exists($states.context.Execution.RedriveCount) and $states.context.Execution.RedriveCount > 0"
        by_execution = f"$substringBefore({record(schema.OWNER)}, '{schema.OWNER_SEPARATOR}') = $states.context.Execution.Id"
        own = f"({own} or ({redriven} and {by_execution}))"
    rules.append((f"{record.status(schema.INPROGRESS)} and {own}", takeover))
    rules.append((record.within_lease, wait))
    if config.owner_state_machine_name is not None:
        keeps = config.keeps_for_redrive
        fields = holder_fields(redrive_status=keeps)
        check = owner_check(
            guard,
            config,
            "OwnerCheck",
            owner=record(schema.OWNER),
            output=SAME_INPUT,
            assign={facts.name: expression(f"$merge([${facts.name}, {{'{HOLDER}': {fields}}}])")},
        )
        # Gone: take over. Any other error: we cannot tell, so the holder counts as running.
        check.add_catch(takeover, errors=OWNER_GONE_ERRORS, outputs=SAME_INPUT)
        check.add_catch(wait, errors=["States.ALL"], outputs=SAME_INPUT)
        running = kit(guard).Choice.jsonata(guard, "OwnerRunning", state_name=name("OwnerRunning"))
        if keeps:
            # FailurePolicy.KEEP_FOR_REDRIVE: an ended holder that RedriveExecution can still resume keeps its key.
            redrivable = ", ".join(f"'{status}'" for status in schema.REDRIVABLE)
            running.when(condition(f"{facts(HOLDER)}.RedriveStatus in [{redrivable}]"), in_flight(guard, awaiting_redrive=True))
        check.next(running.when(condition(owner_done(facts(HOLDER))), takeover).otherwise(wait))
        rules.append((record.status(schema.INPROGRESS), check))
    choice = kit(guard).Choice.jsonata(guard, "Route", state_name=name("Route"))
    for text, target in rules:
        choice.when(condition(text), target)
    choice.otherwise(takeover)
    if config.rejects_completed:
        return choice, None
    return choice, replay(guard).add_catch(choice, errors=[QUERY_FAILED], outputs=SAME_INPUT)


def replay(guard: IdempotencyGuard) -> GuardState:
    """``Replay``, and in it ``Restore``: the stored result, the record's own or the result function's."""
    config, facts = guard.config, guard.facts
    stored = f"$parse({facts.record(schema.DATA)})"
    restore = invoke(
        guard,
        config,
        "Restore",
        guard.result_function,
        {
            "action": "restore",
            "table": read_once.table(config.table).name,
            "id": expression(facts(ID)),
            # The record's owner as read: the function reads only the record that token holds.
            "owner": expression(facts.record(schema.OWNER)),
            **({} if config.payload.kind == schema.KIND_NONE else {"validation": expression(facts(VALIDATION))}),
        },
    )
    restore.add_retry(errors=[schema.RESULT_MISSING], max_attempts=0)
    retry_transient(restore, ["States.ALL"])
    # The function's ResultMissing ends the run in a Fail state of the guard's, as the same error of an inline
    # result does (``Unreadable``), so that the execution log names it (metric_result_missing).
    missing = fail(
        guard,
        config,
        "ResultMissing",
        error=schema.RESULT_MISSING,
        cause=expression("$exists($states.input.Cause) ? $states.input.Cause : ''"),
    )
    return (
        kit(guard)
        .Map.jsonata(
            guard,
            "Replay",
            state_name=config.name("Replay"),
            items=kit(guard).ProvideItems.jsonata(expression(replay_items(guard))),
            outputs=expression(marker.marked(config, facts, f"($count($states.result) = 0 ? {stored} : $states.result[0])")),
        )
        .item_processor(restore)
        .add_catch(missing, errors=[schema.RESULT_MISSING], outputs=expression("$states.errorOutput"))
    )


NOT_REPLAYABLE = "no result to replay"


def replay_items(guard: IdempotencyGuard) -> str:
    """JSONata: ``Replay``'s items. None where the record as last read is the completed run of this payload
    and holds its result inline (for the replay marker, if any, an object); one, which ``Restore`` gets,
    where the result function keeps it (compressed, or in S3). Otherwise it raises, for the route, whose
    mismatch reads the payloads alike ("!=" is false where either side is missing)."""
    config, record = guard.config, guard.facts.record
    ours = record.status(schema.COMPLETED)
    if config.payload.kind != schema.KIND_NONE:
        ours += f" and $not({record(schema.VALIDATION)} != {guard.facts(VALIDATION)})"
    refused = f"$error('{NOT_REPLAYABLE}')"
    inline = "[]" if config.replay_marker is None else f"$type($parse({record(schema.DATA)})) = 'object' ? [] : {refused}"
    return f"({ours}) ? ($exists({record(schema.DATA)}) ? {inline} : [0]) : {refused}"


def unreadable(guard: IdempotencyGuard) -> GuardState:
    """A completed record of this payload whose inline result ``Replay`` could not read back (not JSON:
    written by something else than a guard)."""
    cause = "The record says the work completed, but its result cannot be read back: reset the record to run again"
    return fail(guard, guard.config, "Unreadable", error=schema.RESULT_MISSING, cause=cause, record=guard.facts)


def _iso(epoch_millis: str) -> str:
    return f"$fromMillis({epoch_millis})"


def in_flight(guard: IdempotencyGuard, *, awaiting_redrive: bool = False) -> GuardState:
    """The cause names the holder as this run last read the record, so that a caller can describe
    or await it (or, ``awaiting_redrive``, redrive it: ``AwaitingRedrive``); never a payload."""
    facts, record = guard.facts, guard.facts.record
    holder_fields = dict(
        zip(
            schema.INFLIGHT_CAUSE_FIELDS,
            (
                facts(ID),
                f"$substringBefore({record(schema.OWNER)}, '{schema.OWNER_SEPARATOR}')",
                _iso(f"$number({record(schema.IN_PROGRESS_EXPIRATION, 'N')})"),
            ),
            strict=True,
        )
    )
    return fail(
        guard,
        guard.config,
        "AwaitingRedrive" if awaiting_redrive else "InFlight",
        error=schema.AWAITING_REDRIVE if awaiting_redrive else schema.IN_FLIGHT,
        cause=expression(f"$string({record_tasks.jsonata_object(holder_fields)})"),
    )


def rejected(guard: IdempotencyGuard) -> GuardState:
    """``on_completed=REJECT``: the work completed ``expires_after`` before the record expires."""
    config, facts = guard.config, guard.facts
    fields = dict(zip(schema.COMPLETED_CAUSE_FIELDS, (facts(ID), marker.completed_at(config, facts)), strict=True))
    return fail(
        guard,
        config,
        "Rejected",
        error=schema.ALREADY_COMPLETED,
        cause=expression(f"$string({record_tasks.jsonata_object(fields)})"),
    )
