"""Emulator end-to-end: a guard that runs once per execution whose body is one Task state runs it bare
(guard.finish.bare): a first run enters two states of the guard's, Acquire and Complete, around the Task,
and every promise of a body in a Parallel holds (its output replayed exactly, a failure releasing the key).

The workflows are the behaviour stack's results workflows (tests/stacks.py ``_sized_results``): one
LambdaInvoke each, Standard and Express, whose function returns a result of ``kib`` KiB and raises
``KeyError`` when the input names no size."""

from __future__ import annotations

import json

import pytest

ACQUIRE, COMPLETE = "Idempotency.Acquire", "Idempotency.Complete"
REPLAY = ["Idempotency.Acquire", "Idempotency.Inspect", "Idempotency.Route", "Idempotency.Replay"]


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
