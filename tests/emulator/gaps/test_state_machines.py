"""testing.gaps.state_machines: a state machine that CloudFormation created runs; moto alone creates it
where nothing can run it."""

from __future__ import annotations

import json

import pytest

from .conftest import deploy_without


def test_a_state_machine_created_by_cloudformation_runs(emulator, gaps_deployed):
    execution = gaps_deployed.run("Machine", {"n": 1})
    assert (execution.status, execution.output) == ("SUCCEEDED", {"n": 1})


def test_without_the_workaround_moto_cannot_start_it(emulator, deployment_gaps):
    deployment = deploy_without(emulator, deployment_gaps, "state_machines")
    client = emulator.client("stepfunctions")
    with pytest.raises(client.exceptions.StateMachineDoesNotExist):
        client.start_execution(stateMachineArn=deployment.state_machine_arn("Machine"), input=json.dumps({}))
