"""idempotent_constructs/executions.py without an emulator: which execution a start returns when the
one of its name gave up with ``Idempotency.InFlight``, whatever its cause says (botocore's Stubber
answers the Step Functions calls, and fails the test on any call not expected)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import boto3
import pytest
from botocore.stub import Stubber

from idempotent_constructs.lambda_src import schema
from idempotent_constructs.runtime.executions import (
    IdempotentStart,
    execution_name,
    in_flight_holder,
    start_idempotent_execution,
)

PREFIX = "arn:aws:states:eu-west-1:123456789012"
MACHINE = f"{PREFIX}:stateMachine:orders"
PAYLOAD = {"order": 42}
NAME = execution_name("order-42")
GAVE_UP = f"{PREFIX}:execution:orders:{NAME}"
SAME_MACHINE_HOLDER = f"{PREFIX}:execution:orders:first-try"
OTHER_MACHINE_HOLDER = f"{PREFIX}:execution:billing:nested-guard-holder"


def cause(holder: str) -> str:
    return json.dumps({"record_id": "orders#abc", "holder_execution_arn": holder, "lease_expires_at": "2030-01-01T00:00:00Z"})


def described(arn: str, status: str, **fields: str) -> dict[str, object]:
    return {
        "executionArn": arn,
        "stateMachineArn": MACHINE,
        "status": status,
        "startDate": datetime(2030, 1, 1, tzinfo=UTC),
        **fields,
    }


@pytest.fixture
def client():
    client = boto3.client("stepfunctions", region_name="eu-west-1", aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(client) as stubber:
        client.stubber = stubber
        yield client
        stubber.assert_no_pending_responses()


def a_start_finds_the_execution_that_gave_up(client, why: str) -> None:
    client.stubber.add_client_error("start_execution", "ExecutionAlreadyExists")
    client.stubber.add_response(
        "describe_execution",
        described(GAVE_UP, "FAILED", input=json.dumps(PAYLOAD), error=schema.IN_FLIGHT, cause=why),
        {"executionArn": GAVE_UP},
    )


def returned_as_it_is(start: IdempotentStart) -> bool:
    return start == IdempotentStart(GAVE_UP, started=False, status="FAILED", same_input=True)


def test_a_start_follows_a_holder_of_the_same_state_machine(client):
    a_start_finds_the_execution_that_gave_up(client, cause(SAME_MACHINE_HOLDER))
    client.stubber.add_response("describe_execution", described(SAME_MACHINE_HOLDER, "RUNNING"))
    start = start_idempotent_execution(MACHINE, PAYLOAD, key="order-42", client=client)
    assert start == IdempotentStart(SAME_MACHINE_HOLDER, started=False, status="RUNNING", same_input=True, followed_from=GAVE_UP)


def test_a_start_does_not_follow_a_holder_of_another_state_machine(client):
    a_start_finds_the_execution_that_gave_up(client, cause(OTHER_MACHINE_HOLDER))  # a nested guard's, say
    assert returned_as_it_is(start_idempotent_execution(MACHINE, PAYLOAD, key="order-42", client=client))


@pytest.mark.parametrize(
    "why",
    [
        "The warehouse is busy",  # the user's own Fail state, with a cause of its own
        json.dumps({"record_id": "orders#abc"}),  # JSON without a holder
        json.dumps(["not", "an", "object"]),
        cause("not an ARN"),
        "",
    ],
)
def test_a_start_returns_the_execution_as_it_is_when_the_cause_is_not_the_guards(client, why):
    a_start_finds_the_execution_that_gave_up(client, why)
    assert returned_as_it_is(start_idempotent_execution(MACHINE, PAYLOAD, key="order-42", client=client))


def test_a_start_returns_the_execution_as_it_is_when_the_holder_is_gone(client):
    a_start_finds_the_execution_that_gave_up(client, cause(SAME_MACHINE_HOLDER))
    client.stubber.add_client_error("describe_execution", "ExecutionDoesNotExist")  # past Step Functions' 90 days
    assert returned_as_it_is(start_idempotent_execution(MACHINE, PAYLOAD, key="order-42", client=client))


def test_in_flight_holder_is_none_for_a_cause_that_names_no_holder(client):
    client.stubber.add_response(
        "describe_execution", described(GAVE_UP, "FAILED", error=schema.IN_FLIGHT, cause="The warehouse is busy")
    )
    assert in_flight_holder(GAVE_UP, client=client) is None
