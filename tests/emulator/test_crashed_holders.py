"""Emulator end-to-end: holders that overrun their lease, are aborted, time out or die (contract B7)."""

from __future__ import annotations

import itertools
import time

from idempotent_constructs.guard import EVENTS_PER_POLL


def body_started_at(execution, body_state: str) -> float:
    (event,) = [e for e in execution.history if e.get("stateEnteredEventDetails", {}).get("name") == body_state]
    return event["timestamp"].timestamp()


def test_a_standard_holder_still_running_past_its_lease_is_never_taken_over(behaviour, unique):
    payload = {"id": unique}
    holder = behaviour.start("PastItsLease", payload, name=f"{unique}-holder")
    behaviour.wait_for_state(holder, "PastItsLeaseSlow")
    time.sleep(2.5)  # the 2 s lease has lapsed; the 15 s body is still running
    duplicate = behaviour.run("PastItsLease", payload)
    held = behaviour.wait(holder)
    assert held.status == duplicate.status == "SUCCEEDED"
    assert "PastItsLeaseWork" not in duplicate.entered_states()
    assert "Idempotency.OwnerCheck" in duplicate.entered_states()
    assert duplicate.output == held.output
    # The history bound the construct promises (and checks at synth time) holds for such polls: each
    # poll past the lease adds at most EVENTS_PER_POLL events.
    assert duplicate.entered_states().count("Idempotency.PollOwner") >= 1
    polls = [
        n for n, e in enumerate(duplicate.history) if e.get("stateEnteredEventDetails", {}).get("name") == "Idempotency.Poll"
    ]
    per_poll = [later - earlier for earlier, later in itertools.pairwise(polls)]
    assert per_poll and max(per_poll) <= EVENTS_PER_POLL, (per_poll, [e["type"] for e in duplicate.history])


def test_a_waiter_past_the_lease_of_a_holder_with_a_large_escaped_input_waits_and_replays(behaviour, unique):
    """B16: 67,000 quotes are 132 KiB once JSON escapes them twice (the holder's input in a
    DescribeExecution response; its echoed result in a native write): neither may fail the waiter
    with States.DataLimitExceeded, and the result is kept without an oversized task."""
    payload = {"id": unique, "quotes": '"' * 67_000}
    holder = behaviour.start("PastItsLease", payload, name=f"{unique}-holder")
    behaviour.wait_for_state(holder, "PastItsLeaseSlow")
    time.sleep(2.5)  # past the 2 s lease: the waiter asks whether the holder still runs
    waiter = behaviour.run("PastItsLease", payload)
    held = behaviour.wait(holder)
    assert held.status == "SUCCEEDED", (held.error, held.cause)
    assert waiter.status == "SUCCEEDED", (waiter.error, waiter.cause)
    assert waiter.output == held.output == {"echo": payload, "done": True}
    assert "Idempotency.PollOwner" in waiter.entered_states() and "PastItsLeaseWork" not in waiter.entered_states()
    assert "Idempotency.StoreResult" in held.entered_states()  # too large to write natively


def test_without_the_release_event_an_aborted_standard_holder_is_taken_over_once_its_lease_lapses(behaviour, emulator, unique):
    payload = {"id": unique}
    holder = behaviour.start("ShortLease", payload, name=f"{unique}-aborted")
    behaviour.wait_for_state(holder, "ShortLeaseSlow")
    with emulator.status_change_events.dropped():
        emulator.client("stepfunctions").stop_execution(executionArn=holder)
        aborted_at = time.time()
        duplicate = behaviour.run("ShortLease", payload)
    assert behaviour.wait(holder).status == "ABORTED"
    assert duplicate.status == "SUCCEEDED"
    assert "Idempotency.Takeover" in duplicate.entered_states()
    assert "ShortLeaseWork" in duplicate.entered_states()
    recovery = body_started_at(duplicate, "ShortLeaseSlow") - aborted_at
    assert 0 < recovery < 2 + 5  # the rest of the 2 s lease, plus a few polls


def test_a_holder_that_dies_uncatchably_frees_its_key_once_its_lease_lapses(behaviour, emulator, unique):
    payload = {"id": unique}
    holder = behaviour.start("ShortLease", payload, name=f"{unique}-dies")
    behaviour.wait_for_state(holder, "ShortLeaseSlow")
    # What an uncatchable failure leaves behind: the record in progress, the execution over.
    with emulator.status_change_events.dropped():
        emulator.client("stepfunctions").stop_execution(executionArn=holder, error="States.Runtime", cause="died")
        duplicate = behaviour.run("ShortLease", payload)
    assert duplicate.status == "SUCCEEDED" and "ShortLeaseWork" in duplicate.entered_states()


def test_an_express_holder_that_timed_out_is_taken_over_once_its_lease_lapses(behaviour, unique):
    payload = {"id": unique}
    holder = behaviour.run("ExpressShortLease", payload, name=f"{unique}-timeout")
    assert holder.status == "TIMED_OUT"  # its 6 s body overran the 3 s timeout; the record stayed
    assert behaviour.records_of(holder, "Idempotency")
    duplicate = behaviour.run("ExpressShortLease", payload)
    # Express has no owner check and AWS keeps no history for it: what shows the takeover is the
    # table. The lapsed lease alone let the duplicate take the record over and run the body, which
    # times out again (the body always takes 6 s), leaving the record to the duplicate.
    assert duplicate.status == "TIMED_OUT"
    assert not behaviour.records_of(holder, "Idempotency")
    (record,) = behaviour.records_of(duplicate, "Idempotency").values()
    assert record["status"]["S"] == "INPROGRESS"


def test_the_emulator_shows_the_states_of_an_express_execution_though_aws_keeps_no_history(behaviour, emulator, unique):
    express = behaviour.run("ExpressShortLease", {"id": unique})
    assert express.express and express.entered_states()[:2] == ["Idempotency.Acquire", "Idempotency.Body"]
    assert emulator.history(express.arn) == express.history
    running = behaviour.start("ExpressShortLease", {"id": f"{unique}-running"})
    behaviour.wait_for_state(running, "Idempotency.Body")  # while it runs, as a hold or a fault test needs
    behaviour.wait(running)


def test_the_key_of_an_aborted_standard_holder_is_released_within_seconds_not_at_lease_expiry(behaviour, emulator, unique):
    payload = {"id": unique}
    holder = behaviour.start("LongLease", payload, name=f"{unique}-aborted")  # a 10 minute lease
    behaviour.wait_for_state(holder, "LongLeaseSlow")
    duplicate = behaviour.start("LongLease", payload, name=f"{unique}-duplicate")
    behaviour.wait_for_state(duplicate, "Idempotency.Await")
    emulator.client("stepfunctions").stop_execution(executionArn=holder)
    aborted_at = time.time()
    waited = behaviour.wait(duplicate)
    assert waited.status == "SUCCEEDED" and "LongLeaseWork" in waited.entered_states()
    assert "Idempotency.Takeover" not in waited.entered_states()  # the record was gone: a plain acquire
    recovery = body_started_at(waited, "LongLeaseSlow") - aborted_at
    assert recovery < 10
