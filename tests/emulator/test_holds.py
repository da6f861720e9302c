"""Holding a state (idempotent_constructs/testing/holds.py, LocalEmulator.hold): executions stop before
the state until the test lets them go on."""

from __future__ import annotations

import pytest


def test_a_held_state_keeps_the_execution_before_it_until_released(behaviour, emulator, unique):
    with emulator.hold("SlowWork") as body:
        holder = behaviour.start("Slow", {"id": unique}, name=f"{unique}-holder")
        assert body.arrived() == [holder]
        history = [event.get("stateEnteredEventDetails", {}).get("name") for event in behaviour.history(holder)]
        assert "SlowSlow" in history and "SlowWork" not in history
        assert emulator.client("stepfunctions").describe_execution(executionArn=holder)["status"] == "RUNNING"
        body.release()
        assert behaviour.wait(holder).status == "SUCCEEDED"
        assert body.waiting == []


def test_the_end_of_the_block_releases_what_it_held_even_when_the_test_fails(behaviour, emulator, unique):
    with pytest.raises(RuntimeError), emulator.hold("SlowWork") as body:
        holder = behaviour.start("Slow", {"id": unique}, name=f"{unique}-holder")
        body.arrived()
        raise RuntimeError("the test failed")
    assert behaviour.wait(holder).status == "SUCCEEDED"


def test_waiting_for_more_arrivals_than_come_times_out_naming_the_state(emulator):
    with emulator.hold("NeverReached") as gate, pytest.raises(TimeoutError, match="0 of 1 executions reached NeverReached"):
        gate.arrived(timeout=0.2)


def test_an_execution_stopped_while_held_never_enters_the_held_state(behaviour, emulator, unique):
    with emulator.hold("SlowWork") as body:
        holder = behaviour.start("Slow", {"id": unique}, name=f"{unique}-stopped")
        body.arrived()
        emulator.client("stepfunctions").stop_execution(executionArn=holder)
    stopped = behaviour.wait(holder)
    assert stopped.status == "ABORTED"
    assert "SlowWork" not in stopped.entered_states()
