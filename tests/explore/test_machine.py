"""explore/machine.py: the Amazon States Language as the explorer runs it, on small definitions of its own."""

from __future__ import annotations

from typing import Any

import pytest

from explore.configurations import Configuration
from explore.machine import FAULT, LOST, OK, Machine, Unsupported
from explore.transitions import Bounds, Transitions
from explore.world import EPOCH_MS, TICK_MS, World, iso, value

EFFECT = "arn:aws:lambda:us-east-1:123456789012:function:EffectE445669C"


def effect(name: str, **fields: Any) -> dict[str, Any]:
    """A Task invoking the side effect the explorer plays."""
    return {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "Arguments": {"FunctionName": EFFECT}, **fields}


def started(states: dict[str, Any], start: str, **definition: Any) -> tuple[Machine, World]:
    """One execution of a JSONata definition of ``states``, settled at its first visible state."""
    configuration = Configuration(
        name="test",
        summary="",
        definition={"QueryLanguage": "JSONata", "StartAt": start, "States": states, **definition},
        prefix="G.",
        body=frozenset(),
        standard=True,
        owner_check=False,
        lease_ms=2000,
        functions={"EffectE445669C": "effect"},
    )
    machine = Machine(configuration)
    (world, *_) = Transitions(configuration, Bounds(executions=1, skew=0), machine).initial()
    return machine, world


def stepped(machine: Machine, world: World, outcome: str = OK) -> World:
    (run,) = world.runs
    return machine.step(run, world, outcome).world


def test_a_retried_state_keeps_the_time_it_was_entered_and_counts_its_attempts():
    retried = effect(
        "Charge",
        Retry=[{"ErrorEquals": ["Effect.Failed"], "MaxAttempts": 2}],
        Output="{% {'entered': $states.context.State.EnteredTime, 'retries': $states.context.State.RetryCount} %}",
        End=True,
    )
    machine, world = started({"Charge": retried}, "Charge")
    world = stepped(machine, world, FAULT)
    (run,) = world.runs
    assert run.running and run.top.state == "Charge" and run.top.retries == (1,)
    world = stepped(machine, world._replace(now=world.now + TICK_MS))
    (run,) = world.runs
    assert run.ended == "SUCCEEDED"
    assert value(run.output or "") == {"entered": iso(EPOCH_MS), "retries": 1}


def test_a_catcher_takes_the_error_with_its_output_and_assign_and_goes_on():
    states = {
        "Charge": effect(
            "Charge",
            Catch=[
                {
                    "ErrorEquals": ["States.ALL"],
                    "Assign": {"failed": "{% $states.errorOutput.Error %}"},
                    "Output": "{% {'caught': $states.errorOutput.Error} %}",
                    "Next": "After",
                }
            ],
            End=True,
        ),
        "After": {"Type": "Pass", "Output": "{% {'caught': $states.input.caught, 'assigned': $failed} %}", "End": True},
    }
    machine, world = started(states, "Charge")
    (run,) = stepped(machine, world, FAULT).runs
    assert run.ended == "SUCCEEDED"
    assert value(run.output or "") == {"caught": "Effect.Failed", "assigned": "Effect.Failed"}  # the side effect's own


def replaying(items: str, **fields: Any) -> dict[str, Any]:
    """The side effect, then a Map over ``items`` (JSONata) of one Pass state: the shape of ``Replay``."""
    processor = {"ProcessorConfig": {"Mode": "INLINE"}, "StartAt": "Item", "States": {"Item": {"Type": "Pass", "End": True}}}
    return {
        "Charge": effect("Charge", Next="Replay"),
        "Replay": {"Type": "Map", "Items": items, "ItemProcessor": processor, "End": True, **fields},
        "Route": {"Type": "Pass", "End": True},
    }


def test_a_map_whose_items_raise_goes_to_its_own_catch():
    catch = [{"ErrorEquals": ["States.QueryEvaluationError"], "Output": "{% 'routed' %}", "Next": "Route"}]
    machine, world = started(replaying("{% $error('no result to replay') %}", Catch=catch), "Charge")
    (run,) = stepped(machine, world).runs
    assert (run.ended, run.output) == ("SUCCEEDED", '"routed"')


def test_a_map_over_no_items_gives_its_output_of_an_empty_result():
    machine, world = started(replaying("{% [] %}", Output="{% {'items': $count($states.result)} %}"), "Charge")
    (run,) = stepped(machine, world).runs
    assert value(run.output or "") == {"items": 0}


def test_a_fail_state_in_a_branch_fails_its_parallel_into_the_parallels_catch():
    states = {
        "Body": {
            "Type": "Parallel",
            "Branches": [
                {
                    "StartAt": "Charge",
                    "States": {
                        "Charge": effect("Charge", Next="Boom"),
                        "Boom": {"Type": "Fail", "Error": "Boom", "Cause": "on purpose"},
                    },
                }
            ],
            "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Release"}],
            "End": True,
        },
        "Release": {"Type": "Pass", "End": True},
    }
    machine, world = started(states, "Body")
    (run,) = world.runs
    assert [frame.state for frame in run.frames] == ["Body", "Charge"]  # settled inside the branch
    (run,) = stepped(machine, world).runs
    assert value(run.output or "") == {"Error": "Boom", "Cause": "on purpose"}


def test_a_choice_that_reads_the_clock_is_a_step_of_its_own_and_one_that_does_not_is_not():
    states = {
        "Charge": effect("Charge", Next="Plain"),
        "Plain": {"Type": "Choice", "Choices": [{"Condition": "{% true %}", "Next": "Timed"}]},
        "Timed": {"Type": "Choice", "Choices": [{"Condition": "{% $millis() > 0 %}", "Next": "Done"}]},
        "Done": {"Type": "Succeed"},
    }
    machine, world = started(states, "Charge")
    world = stepped(machine, world)
    (run,) = world.runs
    assert run.top.state == "Timed"
    (run,) = stepped(machine, world).runs
    assert run.ended == "SUCCEEDED"


def test_a_run_that_fails_keeps_its_place_and_a_redrive_resumes_it_there():
    states = {"Charge": effect("Charge", Next="Boom"), "Boom": {"Type": "Fail", "Error": "Boom"}}
    machine, world = started(states, "Charge")
    world = stepped(machine, world)
    (run,) = world.runs
    assert (run.ended, run.top.state) == ("FAILED", "Boom")
    (resumed,) = machine.resume(run, world).world.runs
    assert (resumed.ended, resumed.top.state) == ("FAILED", "Boom")  # a Fail state fails again


def test_a_jsonpath_state_is_refused_rather_than_guessed_at():
    states = {"Charge": effect("Charge", Next="Old"), "Old": {"Type": "Pass", "QueryLanguage": "JSONPath", "End": True}}
    machine, world = started(states, "Charge")
    with pytest.raises(Unsupported, match="JSONata states only"):
        stepped(machine, world)


def test_a_failure_its_state_retries_is_not_an_outcome_and_the_side_effects_own_failure_is():
    service_retried = [{"ErrorEquals": ["Lambda.ServiceException", "Lambda.SdkClientException"], "MaxAttempts": 6}]
    machine, world = started({"Charge": effect("Charge", Retry=service_retried, End=True)}, "Charge")
    (run,) = world.runs
    # The side effect fails with its own error (which no service retrier takes), or acts and its reply is lost.
    assert machine.outcomes(run) == (OK, FAULT, LOST)
    assert machine.fault(machine.state("", "Charge")) == "Effect.Failed"
    describe = {"Type": "Task", "Resource": "arn:aws:states:::aws-sdk:sfn:describeExecution", "End": True}
    retried = {**describe, "Retry": [{"ErrorEquals": ["Sfn.ThrottlingException"], "MaxAttempts": 3}]}
    for state, outcomes in ((describe, (OK, FAULT)), (retried, (OK,))):
        machine, world = started({"Check": state}, "Check")
        assert machine.outcomes(world.runs[0]) == outcomes
