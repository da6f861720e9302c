"""Emulator end-to-end: waiting bounds, fencing and expiry (contract B5, B8, B11)."""

from __future__ import annotations

import itertools
import json
import time

from idempotent_constructs.guard import poll_schedule
from idempotent_constructs.lambda_src import canonical, schema
from tests.stacks import counted


def record_id(namespace: str, payload: dict) -> str:
    return canonical.idempotency_id(namespace, payload, schema.KIND_PATHS, ["$.id"])


def test_a_waiting_duplicate_gives_up_after_max_wait_with_in_flight(behaviour, unique):
    payload = {"id": unique}
    with behaviour.emulator.hold("ImpatientWork") as body:  # the holder stays in its body throughout
        holder = behaviour.start("Impatient", payload, name=f"{unique}-holder")
        body.arrived()
        started = time.monotonic()
        waiter = behaviour.run("Impatient", payload)
        waited = time.monotonic() - started
    assert (waiter.status, waiter.error) == ("FAILED", schema.IN_FLIGHT)
    assert json.loads(waiter.cause)["holder_execution_arn"] == holder  # as the last poll read it
    assert "Idempotency.Await" in waiter.entered_states()
    assert counted(behaviour, "Impatient", waiter)["Idempotency.InFlight"] == 1  # metric_in_flight
    assert waited < 10  # it did not sit out the holder's 10 s body
    assert behaviour.wait(holder).status == "SUCCEEDED"


def entered(waiter, state: str) -> list[float]:
    """Seconds from the waiter's first wait (``Backoff``, whose entry sets the deadline) to each entry of ``state``."""
    moments = [
        (event["timestamp"].timestamp(), event["stateEnteredEventDetails"]["name"])
        for event in waiter.history
        if "stateEnteredEventDetails" in event
    ]
    (start,) = [moment for moment, name in moments if name == "Idempotency.Backoff"]
    return sorted(moment - start for moment, name in moments if name == f"Idempotency.{state}")


def test_duplicates_that_arrive_together_poll_at_jittered_moments_and_each_gives_up_at_its_deadline(behaviour, unique):
    payload = {"id": unique}
    schedule = poll_schedule(1, 5)
    with behaviour.emulator.hold("ImpatientWork") as body:
        holder = behaviour.start("Impatient", payload, name=f"{unique}-holder")
        body.arrived()
        waiters = [behaviour.start("Impatient", payload, name=f"{unique}-{n}") for n in range(2)]
        first, second = (behaviour.wait(waiter) for waiter in waiters)
    assert behaviour.wait(holder).status == "SUCCEEDED"
    slack = 0.05  # the history's clock and $millis() are read a moment apart
    for waiter in (first, second):
        assert (waiter.status, waiter.error) == ("FAILED", schema.IN_FLIGHT)
        busy = entered(waiter, "Busy")
        assert len(busy) > 2  # retried polls, then the one that gave up
        # Every busy poll but the last was retried, so each was entered before the deadline (it judged the
        # clock after its entry); the last gave up past the deadline (WaitedOut), with retries to spare. How
        # long all that takes in wall-clock time is the emulator's: a loaded machine interprets states slowly.
        assert all(moment < schedule.deadline + slack for moment in busy[:-1]), busy
        assert len(busy) <= schedule.attempts, busy
    # Each retry's delay is drawn up to its bound (1 s here), where without jitter it is the bound: a poll
    # follows the one before it sooner than that only with jitter, however loaded the machine.
    gaps = [later - earlier for waiter in (first, second) for earlier, later in itertools.pairwise(entered(waiter, "Poll"))]
    assert any(gap < schedule.max_delay - 0.3 for gap in gaps), gaps


def test_a_stale_holder_cannot_overwrite_the_record_of_the_owner_that_took_over(behaviour, emulator, unique):
    payload = {"id": unique}
    dynamodb = emulator.client("dynamodb")
    key = {"id": {"S": record_id("Behaviour/Slow", payload)}}
    with emulator.hold("SlowWork") as body:
        holder = behaviour.start("Slow", payload, name=f"{unique}-stale")
        body.arrived()
        # Another execution takes the key over while the first is still in its body.
        taken_over = dynamodb.get_item(TableName=behaviour.table_name("Idempotency"), Key=key, ConsistentRead=True)["Item"]
        taken_over["owner"] = {"S": "arn:aws:states:us-east-1:123456789012:execution:x:newer#holder"}
        dynamodb.put_item(TableName=behaviour.table_name("Idempotency"), Item=taken_over)

    stale = behaviour.wait(holder)
    assert (stale.status, stale.error) == ("FAILED", schema.LEASE_LOST)
    after = dynamodb.get_item(TableName=behaviour.table_name("Idempotency"), Key=key, ConsistentRead=True)["Item"]
    assert after == taken_over


def test_a_record_past_its_expiration_counts_as_absent_before_dynamodb_deletes_it(behaviour, emulator, unique):
    payload = {"id": unique}
    expired = {
        "id": {"S": record_id("Behaviour/Slow", payload)},
        "status": {"S": schema.COMPLETED},
        "expiration": {"N": str(int(time.time()) - 60)},
        "in_progress_expiration": {"N": str((int(time.time()) - 120) * 1000)},
        "in_progress_deadline": {"S": "2020-01-01T00:00:00Z"},
        "owner": {"S": "arn:aws:states:us-east-1:123456789012:execution:x:old#holder"},
        "validation": {"S": canonical.digest(payload)},
        "data": {"S": '{"stale": true}'},
    }
    emulator.client("dynamodb").put_item(TableName=behaviour.table_name("Idempotency"), Item=expired)
    execution = behaviour.run("Slow", payload)
    assert execution.status == "SUCCEEDED"
    assert "SlowWork" in execution.entered_states()
    assert execution.output == {"echo": payload, "done": True}


def test_a_holder_whose_record_was_released_meanwhile_still_stores_its_result(behaviour, emulator, unique):
    # What a redriven execution meets: the release function freed its key when it failed, and the
    # redrive finishes the body. Nobody else took the key, so its result is stored.
    payload = {"id": unique}
    key = {"id": {"S": record_id("Behaviour/Slow", payload)}}
    with emulator.hold("SlowWork") as body:
        holder = behaviour.start("Slow", payload, name=f"{unique}-redriven")
        body.arrived()
        emulator.client("dynamodb").delete_item(TableName=behaviour.table_name("Idempotency"), Key=key)
    finished = behaviour.wait(holder)
    assert finished.status == "SUCCEEDED"
    replay = behaviour.run("Slow", payload)
    assert "SlowWork" not in replay.entered_states() and replay.output == finished.output
