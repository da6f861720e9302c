"""What a run that found its key taken does: read the record (``Inspect``) and follow the route.

The route is one ordered table of (condition, state): the first rule that holds wins. The same
conditions, on the record a poll read, decide whether a waiter keeps waiting (``wait``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_cdk import aws_stepfunctions as sfn

from ..lambda_src import schema
from . import records
from .protocol import HOLDER, ID, OWNER_GONE_ERRORS, RECORD, TRANSIENT_DYNAMODB_ERRORS, VALIDATION, expression
from .tasks import HOLDER_FIELDS, SAME_INPUT, ItemTask, invoke, owner_check, retry_transient

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
        arguments=records.read(guard.config, facts),
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
) -> tuple[sfn.Choice, list[sfn.INextable]]:
    """``(Route, the states that end the guard with a replayed result)``."""
    config, facts = guard.config, guard.facts
    name = config.name
    record = facts.record
    replay = sfn.Pass.jsonata(guard, "Replay", state_name=name("Replay"), outputs=expression(f"$parse({record(schema.DATA)})"))
    restore = invoke(
        guard,
        config,
        "Restore",
        guard.result_function,
        {
            "action": "restore",
            "table": config.table.table_name,
            "id": expression(facts(ID)),
            "validation": expression(facts(VALIDATION)),
        },
    )
    restore.add_retry(errors=[schema.RESULT_MISSING], max_attempts=0)
    retry_transient(restore, ["States.ALL"])
    mismatch = sfn.Fail.jsonata(
        guard,
        "PayloadMismatch",
        state_name=name("PayloadMismatch"),
        error=schema.PAYLOAD_MISMATCH,
        cause="The idempotency key was already used with a different payload.",
    )
    # In order; the first rule that holds wins.
    rules: list[tuple[str, sfn.IChainable]] = [
        (record.absent, acquire),
        # Another payload's record, unless it is in progress past its lease: a crashed holder's
        # payload must not block the key (it is taken over below, after the owner check).
        (f"{record(schema.VALIDATION)} != {facts(VALIDATION)} and $not({record.lapsed})", mismatch),
        (f"{record.status(schema.COMPLETED)} and $exists({record(schema.DATA)})", replay),
        # Completed, the result kept by the result function (compressed, or in S3).
        (record.status(schema.COMPLETED), restore),
    ]
    if replay_failure is not None:
        rules.append((record.status(schema.FAILED), replay_failure))
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
    return choice, [replay, restore]


def in_flight(guard: IdempotencyGuard) -> sfn.Fail:
    return sfn.Fail.jsonata(
        guard,
        "InFlight",
        state_name=guard.config.name("InFlight"),
        error=schema.IN_FLIGHT,
        cause="Another execution holds this idempotency key and is still running.",
    )
