"""What a run that found its key taken does: read the record (``Inspect``) and follow the route.

The route is one ordered table of (condition, state): the first rule that holds wins. The same
conditions, on the record a poll read, decide whether a waiter keeps waiting (``wait``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_cdk import aws_stepfunctions as sfn

from ..lambda_src import schema
from . import marker, record_tasks
from .protocol import (
    HOLDER,
    ID,
    OWNER,
    OWNER_GONE_ERRORS,
    QUERY_FAILED,
    RECORD,
    TRANSIENT_DYNAMODB_ERRORS,
    VALIDATION,
    expression,
)
from .tasks import HOLDER_FIELDS, SAME_INPUT, ItemTask, fail, invoke, owner_check, retry_transient

if TYPE_CHECKING:
    from . import IdempotencyGuard


def owner_done(holder: str) -> str:
    """The owner check's verdict lets a takeover go ahead when the holder's execution has ended, or
    when it is this very execution (a branch cancelled mid-body: its own lease is all there is)."""
    ended = ", ".join(f"'{status}'" for status in schema.EXECUTION_ENDED)
    return f"{holder}.Status in [{ended}] or {holder}.ExecutionArn = $states.context.Execution.Id"


def condition(text: str) -> sfn.Condition:
    return sfn.Condition.jsonata(expression(text))


def inspect(guard: IdempotencyGuard) -> ItemTask:
    facts = guard.facts
    task = ItemTask(
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
    retry_transient(task, TRANSIENT_DYNAMODB_ERRORS)
    return task


def route(
    guard: IdempotencyGuard,
    *,
    acquire: sfn.IChainable,
    takeover: sfn.IChainable,
    wait: sfn.IChainable,
    replay_failure: sfn.IChainable | None,
) -> tuple[sfn.Choice, sfn.Map | None, list[sfn.INextable]]:
    """``(Route, Replay, the states that end the guard with a replayed result)``.

    ``Replay`` is where a run that read a record goes (after ``Inspect``, and after a wait): a Map state
    over no items, so that no state runs in it. Its ``Items`` raise (``States.QueryEvaluationError``,
    which its Catch takes to ``Route``) unless the record holds, inline, the result to replay, which its
    ``Output`` gives. So a replay enters ``Acquire, Inspect, Replay``, with no Choice state before it; a
    wait as many states as before, and a takeover, a mismatch or a restore one more (``Replay``, then
    ``Route``), which never goes back to ``Replay``. (An error in ``Items``, like one in a Task's
    ``Arguments``, fails the state before its work, where its own Catch takes it. One in a state's
    ``Output`` would not do: moto, whose interpreter is LocalStack's, evaluates ``Output`` after the Retry
    and Catch loop.) Without a replay (``on_completed=REJECT``) there is no ``Replay``: runs go to ``Route``."""
    config, facts = guard.config, guard.facts
    name = config.name
    record = facts.record
    stored = f"$parse({record(schema.DATA)})"
    replay = sfn.Map.jsonata(
        guard,
        "Replay",
        state_name=name("Replay"),
        items=sfn.ProvideItems.jsonata(expression(f"({replayable(guard)}) ? [] : $error('{NOT_REPLAYABLE}')")),
        outputs=expression(marker.marked(config, facts, stored)),
    ).item_processor(sfn.Pass.jsonata(guard, "NoItems", state_name=name("NoItems")))
    restore_options: dict[str, Any] = {}
    if config.replay_marker is not None:
        restore_options["outputs"] = expression(marker.marked(config, facts, "$states.result"))
    restore = invoke(
        guard,
        config,
        "Restore",
        guard.result_function,
        {
            "action": "restore",
            "table": config.table.table_name,
            "id": expression(facts(ID)),
            **({} if config.payload.kind == schema.KIND_NONE else {"validation": expression(facts(VALIDATION))}),
        },
        **restore_options,
    )
    restore.add_retry(errors=[schema.RESULT_MISSING], max_attempts=0)
    if config.replay_marker is not None:
        not_an_object = marker.not_an_object(guard)
        restore.add_retry(errors=[QUERY_FAILED], max_attempts=0)
        restore.add_catch(not_an_object, errors=[QUERY_FAILED])
    retry_transient(restore, ["States.ALL"])
    # In order; the first rule that holds wins.
    rules: list[tuple[str, sfn.IChainable]] = [(record.absent, acquire)]
    if config.payload.kind != schema.KIND_NONE:
        mismatch = fail(
            guard,
            config,
            "PayloadMismatch",
            error=schema.PAYLOAD_MISMATCH,
            cause="The idempotency key was already used with a different payload.",
        )
        # Another payload's record, unless it is in progress past its lease: a crashed holder's
        # payload must not block the key (it is taken over below, after the owner check).
        rules.append((f"{record(schema.VALIDATION)} != {facts(VALIDATION)} and $not({record.lapsed})", mismatch))
    if config.rejects_completed:
        rules.append((record.status(schema.COMPLETED), rejected(guard)))
    else:
        if config.replay_marker is not None:
            # Replay leaves a stored result that cannot carry the marker to the route, which tells it.
            rules.append(
                (
                    f"{record.status(schema.COMPLETED)} and $exists({record(schema.DATA)}) and $type({stored}) != 'object'",
                    not_an_object,
                )
            )
        # Completed, the result kept by the result function (compressed, or in S3): one held inline was
        # replayed by Replay, which is the only way into the route.
        rules.append((record.status(schema.COMPLETED), restore))
    if replay_failure is not None:
        rules.append((record.status(schema.FAILED), replay_failure))
    # A record in progress that is this run's own: a write that made it the holder, applied by DynamoDB
    # but reported failed, whose retry its condition refused (B12). Taken at once (fenced on what was
    # read, so that its lease starts again), never waited for. The run knows it by the owner token its
    # write wrote (record_tasks.owner_written), which it keeps; a guard that runs once per execution, by its
    # execution alone (any record its execution holds is its own), since each of its writes draws a token.
    if not config.once_per_execution:
        own = f"{record(schema.OWNER)} = {facts(OWNER)}"
    else:
        own = f"$substringBefore({record(schema.OWNER)}, '{schema.OWNER_SEPARATOR}') = $states.context.Execution.Id"
    rules.append((f"{record.status(schema.INPROGRESS)} and {own}", takeover))
    rules.append((record.within_lease, wait))
    if config.owner_state_machine_name is not None:
        check = owner_check(
            guard,
            config,
            "OwnerCheck",
            owner=record(schema.OWNER),
            output=SAME_INPUT,
            assign={facts.name: expression(f"$merge([${facts.name}, {{'{HOLDER}': {HOLDER_FIELDS}}}])")},
        )
        # Gone: take over. Any other error: we cannot tell, so the holder counts as running.
        check.add_catch(takeover, errors=OWNER_GONE_ERRORS, outputs=SAME_INPUT)
        check.add_catch(wait, errors=["States.ALL"], outputs=SAME_INPUT)
        check.next(
            sfn.Choice.jsonata(guard, "OwnerRunning", state_name=name("OwnerRunning"))
            .when(condition(owner_done(facts(HOLDER))), takeover)
            .otherwise(wait)
        )
        rules.append((record.status(schema.INPROGRESS), check))
    choice = sfn.Choice.jsonata(guard, "Route", state_name=name("Route"))
    for text, target in rules:
        choice.when(condition(text), target)
    choice.otherwise(takeover)
    if config.rejects_completed:
        return choice, None, []
    replay.add_catch(choice, errors=[QUERY_FAILED], outputs=SAME_INPUT)
    return choice, replay, [replay, restore]


NOT_REPLAYABLE = "no result to replay"


def replayable(guard: IdempotencyGuard) -> str:
    """JSONata: whether the record as last read holds, inline, the completed result of this payload that
    ``Replay`` outputs (with the replay marker, if any, for which it must be an object). Everything that
    the route takes before its replay is false here, so that the two agree."""
    config, record = guard.config, guard.facts.record
    holds = [record.status(schema.COMPLETED), f"$exists({record(schema.DATA)})"]
    if config.payload.kind != schema.KIND_NONE:
        # As the route's mismatch reads it: "!=" is false where either side is missing.
        holds.append(f"$not({record(schema.VALIDATION)} != {guard.facts(VALIDATION)})")
    if config.replay_marker is not None:
        holds.append(f"$type($parse({record(schema.DATA)})) = 'object'")
    return " and ".join(holds)


def _iso(epoch_millis: str) -> str:
    return f"$fromMillis({epoch_millis})"


def in_flight(guard: IdempotencyGuard) -> sfn.Fail:
    """The cause names the holder as this run last read the record, so that a caller can describe
    or await it; never a payload."""
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
        "InFlight",
        error=schema.IN_FLIGHT,
        cause=expression(f"$string({record_tasks.jsonata_object(holder_fields)})"),
    )


def rejected(guard: IdempotencyGuard) -> sfn.Fail:
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
