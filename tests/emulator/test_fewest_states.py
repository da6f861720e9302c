"""Emulator end-to-end: a guard whose body is one Task, Parallel or Map state runs it bare
(guard.finish.bare): a first run enters two states of the guard's, Acquire and Complete, around it, and
every promise of a body in a Parallel holds (its output replayed exactly, a failure releasing the key), in
a whole workflow and in a guard of your own alike.

The whole workflows are the behaviour stack's results workflows (tests/stacks.py ``_sized_results``): one
LambdaInvoke each, Standard and Express, whose function returns a result of ``kib`` KiB and raises
``KeyError`` when the input names no size. The guards of your own are the lost-replies stack's ``BareTask``
(the same LambdaInvoke) and ``BareFan`` (a Parallel whose branch echoes its input, or fails with ``Boom``
on ``{"fail": true}``); the lease extensions in a bare Parallel's branch and a bare Map's items are
test_extend_lease.py's, the lost replies around a bare body test_faults.py's."""

from __future__ import annotations

import json
import time

import pytest

ACQUIRE, COMPLETE = "Idempotency.Acquire", "Idempotency.Complete"
REPLAY = ["Idempotency.Acquire", "Idempotency.Inspect", "Idempotency.Replay"]


def wrapper_states(states: list[str], body: str) -> list[str]:
    return [state for state in states if state != body]


@pytest.mark.parametrize("workflow", ["InlineResults", "ExpressInlineResults"])
def test_a_whole_workflow_of_one_task_enters_two_states_of_its_guard_on_a_first_run_and_replays_exactly(
    behaviour, unique, workflow
):
    first = behaviour.run(workflow, {"id": unique, "kib": 1})
    replay = behaviour.run(workflow, {"id": unique, "kib": 1})
    assert first.status == replay.status == "SUCCEEDED"
    assert first.entered_states() == [ACQUIRE, f"{workflow}Make", COMPLETE]
    assert len(wrapper_states(first.entered_states(), f"{workflow}Make")) == 2
    assert replay.entered_states() == REPLAY and replay.lambda_invocations() == 0
    assert json.dumps(replay.output) == json.dumps(first.output) and first.output["id"] == unique


def test_a_bare_task_that_fails_releases_the_key_so_that_the_next_run_runs_it_again(behaviour, unique):
    failed = behaviour.run("InlineResults", {"id": unique})  # no size: the function raises KeyError
    assert (failed.status, failed.error) == ("FAILED", "KeyError"), failed.cause
    assert failed.entered_states() == [ACQUIRE, "InlineResultsMake", "Idempotency.Release", "Idempotency.Failed"]
    assert not behaviour.records_of(failed, "Idempotency")
    retried = behaviour.run("InlineResults", {"id": unique, "kib": 1})
    assert retried.status == "SUCCEEDED" and retried.entered_states() == [ACQUIRE, "InlineResultsMake", COMPLETE]


def test_a_large_result_of_a_bare_task_is_stored_by_the_result_function_and_replayed_exactly(behaviour, unique):
    first = behaviour.run("LargeResults", {"id": unique, "kib": 100})
    replay = behaviour.run("LargeResults", {"id": unique, "kib": 100})
    assert first.entered_states() == [ACQUIRE, "LargeResultsMake", COMPLETE, "Idempotency.StoreResult"]
    assert replay.status == "SUCCEEDED" and json.dumps(replay.output) == json.dumps(first.output)


def test_a_workflow_released_when_its_execution_fails_runs_its_chain_between_two_states_and_its_failure_frees_the_key(
    behaviour, unique
):
    first = behaviour.run("ReleasedAfter", {"order": {"id": unique}})
    assert first.status == "SUCCEEDED"
    assert first.entered_states() == [ACQUIRE, "ReleasedAfterShouldFail", "ReleasedAfterFine", COMPLETE]
    assert behaviour.run("ReleasedAfter", {"order": {"id": unique}}).entered_states() == REPLAY
    failing = {"order": {"id": f"{unique}-failing"}, "fail": True}
    failed = behaviour.run("ReleasedAfter", failing)
    # The chain's own error fails the execution: nothing of the guard's runs after it.
    assert (failed.status, failed.error) == ("FAILED", "Boom")
    assert failed.entered_states() == [ACQUIRE, "ReleasedAfterShouldFail", "ReleasedAfterBoom"]
    # The release function frees the key from the execution's status event (FAILED), seconds later.
    deadline = time.monotonic() + 20
    while behaviour.records_of(failed, "Idempotency") and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not behaviour.records_of(failed, "Idempotency")
    retried = behaviour.run("ReleasedAfter", {**failing, "fail": False})
    assert retried.status == "SUCCEEDED" and "ReleasedAfterFine" in retried.entered_states()
    assert "Idempotency.Inspect" not in retried.entered_states()


def guard_states(states: list[str], prefix: str) -> list[str]:
    return [state for state in states if state.startswith(f"{prefix}.")]


@pytest.mark.parametrize(
    ("machine", "prefix", "body", "payload"),
    [("BareTask", "TaskOnce", "BareMake", {"kib": 1}), ("BareFan", "FanOnce", "BareFanWork", {})],
    ids=["Task", "Parallel"],
)
def test_a_guard_of_your_own_whose_body_is_one_task_or_parallel_enters_two_states_and_replays_in_three(
    lost_replies, unique, machine, prefix, body, payload
):
    first = lost_replies.run(machine, {"id": unique, **payload})
    replay = lost_replies.run(machine, {"id": unique, **payload})
    assert first.status == replay.status == "SUCCEEDED", first.cause
    assert first.entered_states()[:2] == [f"{prefix}.Acquire", body] and first.entered_states()[-1] == f"{prefix}.Complete"
    assert guard_states(first.entered_states(), prefix) == [f"{prefix}.Acquire", f"{prefix}.Complete"]
    assert replay.entered_states() == [f"{prefix}.Acquire", f"{prefix}.Inspect", f"{prefix}.Replay"]
    assert json.dumps(replay.output) == json.dumps(first.output) and replay.lambda_invocations() == 0


@pytest.mark.parametrize(
    ("machine", "prefix", "body", "failing", "error"),
    [("BareTask", "TaskOnce", "BareMake", {}, "KeyError"), ("BareFan", "FanOnce", "BareFanWork", {"fail": True}, "Boom")],
    ids=["Task", "Parallel"],
)
def test_a_bare_body_of_a_guard_of_your_own_that_fails_releases_the_key_so_that_the_next_run_runs_it_again(
    lost_replies, unique, machine, prefix, body, failing, error
):
    failed = lost_replies.run(machine, {"id": unique, **failing})
    assert (failed.status, failed.error) == ("FAILED", error), failed.cause
    assert guard_states(failed.entered_states(), prefix) == [f"{prefix}.Acquire", f"{prefix}.Release", f"{prefix}.Failed"]
    assert not lost_replies.records_of(failed, "Idempotency")
    retried = lost_replies.run(machine, {"id": unique, "kib": 1})
    assert retried.status == "SUCCEEDED" and retried.entered_states().count(body) == 1


def test_a_large_result_of_a_bare_task_in_a_guard_of_your_own_is_stored_by_the_result_function_and_replayed_exactly(
    lost_replies, unique
):
    first = lost_replies.run("BareTask", {"id": unique, "kib": 200})  # past what the native write keeps
    replay = lost_replies.run("BareTask", {"id": unique, "kib": 200})
    assert first.entered_states() == ["TaskOnce.Acquire", "BareMake", "TaskOnce.Complete", "TaskOnce.StoreResult"]
    assert replay.status == "SUCCEEDED" and json.dumps(replay.output) == json.dumps(first.output)
    assert replay.entered_states()[:3] == ["TaskOnce.Acquire", "TaskOnce.Inspect", "TaskOnce.Replay"]
