"""IdempotencyGuard.extend_lease() (issue 15): a body nearly three leases long that extends its lease as it
goes is never taken over, even by a guard without the owner check; one that extends too late is
taken over, and its next extension fails it with Idempotency.LeaseLost; extensions in a Parallel branch
and in each item of a Map keep the lease as well (issue 24)."""

from __future__ import annotations

from idempotent_constructs.lambda_src import schema
from tests.stacks import counted


def start_holder_and_duplicate(control, state_machine: str, guard: str, unique: str, body: str | None = None):
    """The holder and the duplicate started once the holder entered its body (``guard``'s Body, or ``body``,
    the state that runs bare as the body)."""
    payload = {"id": unique}
    holder = control.start(state_machine, payload, name=f"{unique}-holder")
    control.wait_for_state(holder, body or f"{guard}.Body")  # the holder holds the key
    duplicate = control.start(state_machine, payload, name=f"{unique}-duplicate")
    return control.wait(holder), control.wait(duplicate)


def test_a_body_that_extends_its_lease_is_never_taken_over(control, unique):
    holder, duplicate = start_holder_and_duplicate(control, "Extending", "Extended", unique)
    assert (holder.status, holder.output) == ("SUCCEEDED", {"ticks": 10})
    assert holder.entered_states().count("Extended.ExtendLease") == 11  # after each of the 11 ticks
    # The duplicate waited out the whole body (11 s, nearly three 4 s leases) and replayed the result.
    assert (duplicate.status, duplicate.output) == ("SUCCEEDED", {"ticks": 10})
    assert "Extended.Takeover" not in duplicate.entered_states()
    assert "ExtendedTick" not in duplicate.entered_states()


def test_a_body_that_extends_too_late_is_taken_over_and_fails_with_lease_lost(control, unique):
    holder, duplicate = start_holder_and_duplicate(control, "ExtendingLate", "Late", unique)
    assert "Late.Takeover" in duplicate.entered_states()
    assert (duplicate.status, duplicate.output) == ("SUCCEEDED", {"ticks": 1})
    assert (holder.status, holder.error) == ("FAILED", schema.LEASE_LOST)
    assert "Late.ExtendLease.LeaseLost" in holder.entered_states()
    # Counted from its state machine's log by metric_lease_lost (guard.outcome_metrics(log_group)).
    assert counted(control, "Late", holder)["Late.ExtendLease.LeaseLost"] == 1


def test_a_body_that_extends_its_lease_in_a_parallel_branch_is_never_taken_over(control, unique):
    # The body, a Parallel alone, runs bare: its branch's ExtendLease is the guard's all the same.
    holder, duplicate = start_holder_and_duplicate(control, "ExtendingInBranch", "InBranch", unique, body="Branch")
    assert holder.entered_states()[:2] == ["InBranch.Acquire", "Branch"]
    assert (holder.status, holder.output) == ("SUCCEEDED", {"ticks": 10})
    assert holder.entered_states().count("InBranch.BranchExtend") == 11
    assert (duplicate.status, duplicate.output) == ("SUCCEEDED", {"ticks": 10})
    assert "InBranch.Takeover" not in duplicate.entered_states()


def test_a_body_that_extends_its_lease_in_each_item_of_a_map_is_never_taken_over(control, unique):
    # The body, a Map alone, runs bare: its item processor's ExtendLease is the guard's all the same.
    holder, duplicate = start_holder_and_duplicate(control, "ExtendingPerItem", "PerItem", unique, body="EachItem")
    assert holder.entered_states()[:2] == ["PerItem.Acquire", "EachItem"]
    assert holder.status == "SUCCEEDED"
    assert holder.entered_states().count("PerItem.ItemExtend") == 6  # one per item, 6 s of 4 s leases
    assert (duplicate.status, duplicate.output) == ("SUCCEEDED", holder.output)
    assert "PerItem.Takeover" not in duplicate.entered_states()
    assert "ItemTick" not in duplicate.entered_states()


def test_each_extension_is_one_state_of_five_history_events(control, unique):
    execution = control.run("KeepingAlive", {"id": unique})
    types = [event["type"] for event in execution.history]
    entered = execution.entered_states().index("Idempotency.ExtendLease")
    start = [i for i, event in enumerate(execution.history) if "stateEnteredEventDetails" in event][entered]
    assert types[start : start + 5] == ["TaskStateEntered", "TaskScheduled", "TaskStarted", "TaskSucceeded", "TaskStateExited"]
    assert types[start + 5] == "ParallelStateSucceeded"  # it ends the body: nothing more of it
