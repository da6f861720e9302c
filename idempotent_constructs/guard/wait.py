"""What a duplicate does while another execution holds its key: fail at once, or wait for it.

One poll is one retry of the ``Await`` Parallel: its branch reads the record and fails while the
holder is busy, so the backoff and the ``max_wait`` bound cost no extra states. The delays are jittered,
so that duplicates that arrive together do not poll in lockstep; the bound is a deadline, which the first
wait (``Backoff``) sets in the guard's variable and the branch reads: a busy poll past it fails with
``Idempotency.WaitedOut`` instead, which the retrier leaves alone. The record it read reaches the
guard's variable through the Parallel's ``Assign`` (a branch may not assign it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_cdk import Duration
from aws_cdk import aws_stepfunctions as sfn

from .._synth import read_once
from ..lambda_src import schema
from ..policies import InFlightPolicy
from . import record_tasks
from .config import AtSynth, PollSchedule, poll_schedule
from .owner_check import HOLDER_FIELDS, owner_check
from .protocol import ENTERED_AT, OWNER_GONE_ERRORS, RECORD, UNTIL, Record, expression
from .route import condition, in_flight, owner_done
from .tasks import SAME_INPUT, fail, item_task, kit

if TYPE_CHECKING:
    from . import IdempotencyGuard


def wait_for_holder(guard: IdempotencyGuard) -> tuple[sfn.IChainable, sfn.Parallel | None]:
    """``(entry, Await)``; Await goes on to Replay once the holder is done (the caller wires it)."""
    config, facts = guard.config, guard.facts
    failing = in_flight(guard)
    if config.on_in_flight is InFlightPolicy.FAIL:
        return failing, None
    name = config.name

    def schedule() -> PollSchedule:  # read at synth: a default max_wait fits an Express run (fit_express)
        return poll_schedule(int(read_once.seconds(config.poll_interval)), int(read_once.seconds(config.max_wait)))

    poll = item_task(
        guard,
        "Poll",
        config=config,
        action="getItem",
        arguments=record_tasks.read(config, facts),
        output=expression(f"{{'{RECORD}': $exists($states.result.Item) ? $states.result.Item : null}}"),
    )
    record = Record(f"$states.input.{RECORD}")
    given_up = f"$millis() >= {facts(UNTIL)}"
    busy = fail(
        guard,
        config,
        "Busy",
        error=expression(f"{given_up} ? '{schema.WAITED_OUT}' : '{schema.STILL_IN_FLIGHT}'"),
    )
    settled = kit(guard).Succeed.jsonata(guard, "Settled", state_name=name("Settled"))
    check = (
        kit(guard)
        .Choice.jsonata(guard, "Check", state_name=name("Check"))
        .when(condition(record.absent), settled)
        .when(condition(record.within_lease), busy)
    )
    if config.owner_state_machine_name is not None:
        # Past the lease: still busy while the holder's execution runs (polls past a lease only).
        poll_owner = owner_check(
            guard,
            config,
            "PollOwner",
            owner=record(schema.OWNER),
            output=expression(f"$merge([$states.input, {{'holder': {HOLDER_FIELDS}}}])"),
        )
        poll_owner.add_catch(settled, errors=OWNER_GONE_ERRORS, outputs=SAME_INPUT)
        poll_owner.add_catch(busy, errors=["States.ALL"], outputs=SAME_INPUT)
        poll_owner.next(
            kit(guard)
            .Choice.jsonata(guard, "StillRunning", state_name=name("StillRunning"))
            .when(condition(owner_done("$states.input.holder")), settled)
            .otherwise(busy)
        )
        check.when(condition(record.status(schema.INPROGRESS)), poll_owner)
    check.otherwise(settled)
    waiting = (
        kit(guard)
        .Parallel.jsonata(
            guard,
            "Await",
            state_name=name("Await"),
            outputs=SAME_INPUT,
            assign={facts.name: expression(f"$merge([${facts.name}, {{'{RECORD}': $states.result[0].{RECORD}}}])")},
        )
        .branch(poll.next(check))
    )
    waiting.add_retry(
        errors=[schema.STILL_IN_FLIGHT],
        interval=config.poll_interval,
        backoff_rate=2,
        max_attempts=AtSynth.number(config, lambda: schedule().attempts),
        max_delay=Duration.seconds(AtSynth.number(config, lambda: schedule().max_delay)),
        jitter_strategy=sfn.JitterType.FULL,
    )
    waiting.add_catch(failing, errors=[schema.STILL_IN_FLIGHT, schema.WAITED_OUT])
    deadline = AtSynth.text(config, lambda: schedule().deadline * 1000)  # from its entry, whenever Assign runs
    backoff = kit(guard).Wait.jsonata(
        guard,
        "Backoff",
        state_name=name("Backoff"),
        time=kit(guard).WaitTime.duration(config.poll_interval),
        assign={facts.name: expression(f"$merge([${facts.name}, {{'{UNTIL}': {ENTERED_AT} + {deadline}}}])")},
    )
    return backoff.next(waiting), waiting
