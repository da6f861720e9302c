"""Emulator end-to-end: idempotent starts by execution name (idempotent_constructs.runtime.executions, issue 5)."""

from __future__ import annotations

from idempotent_constructs.lambda_src import schema
from idempotent_constructs.runtime.executions import IdempotentStart, _execution_arn, execution_name, start_idempotent_execution
from tests.samples import docs_sample


def test_an_execution_name_is_valid_deterministic_and_at_most_80_characters():
    name = execution_name('order 42/eu: {"a": 1}' * 10)
    assert name == execution_name('order 42/eu: {"a": 1}' * 10)
    assert len(name) <= 80 and all(c.isalnum() or c in "-_" for c in name)
    assert execution_name("order-1") != execution_name("order-2")


def test_an_execution_started_through_a_version_or_an_alias_is_named_under_its_state_machine():
    machine = "arn:aws:states:eu-west-1:123456789012:stateMachine:orders"
    execution = "arn:aws:states:eu-west-1:123456789012:execution:orders:n"
    assert (
        _execution_arn(machine, "n") == _execution_arn(f"{machine}:3", "n") == _execution_arn(f"{machine}:live", "n") == execution
    )


def test_a_second_start_for_the_same_key_returns_the_first_execution_instead_of_starting_another(behaviour, unique):
    client, arn = behaviour.emulator.client("stepfunctions"), behaviour.state_machine_arn("Echo")
    first = start_idempotent_execution(arn, {"order": unique}, key=f"order-{unique}", client=client)
    assert first.started and first.status == "RUNNING"
    behaviour.wait(first.execution_arn)
    again = start_idempotent_execution(arn, {"order": unique}, key=f"order-{unique}", client=client)
    assert (again.started, again.execution_arn, again.status, again.same_input) == (False, first.execution_arn, "SUCCEEDED", True)


def test_the_same_key_with_another_input_is_reported_as_not_the_same_input(behaviour, unique):
    client, arn = behaviour.emulator.client("stepfunctions"), behaviour.state_machine_arn("Echo")
    first = start_idempotent_execution(arn, {"order": unique, "amount": 1}, key=unique, client=client)
    behaviour.wait(first.execution_arn)
    other = start_idempotent_execution(arn, {"order": unique, "amount": 2}, key=unique, client=client)
    assert (other.started, other.execution_arn, other.same_input) == (False, first.execution_arn, False)


def test_without_a_key_equal_payloads_in_any_key_order_share_one_execution(behaviour, unique):
    client, arn = behaviour.emulator.client("stepfunctions"), behaviour.state_machine_arn("Echo")
    first = start_idempotent_execution(arn, {"a": unique, "b": 1.0}, client=client)
    behaviour.wait(first.execution_arn)
    again = start_idempotent_execution(arn, {"b": 1, "a": unique}, client=client)
    assert (again.started, again.execution_arn, again.same_input) == (False, first.execution_arn, True)
    assert unique not in first.execution_arn  # the name is a digest: no payload value in consoles or CloudTrail


def test_a_start_whose_execution_gave_up_in_flight_returns_the_holder_that_does_the_work(behaviour, unique):
    client, arn = behaviour.emulator.client("stepfunctions"), behaviour.state_machine_arn("SlowFailFast")
    payload = {"id": unique}
    with behaviour.emulator.hold("FailFastWork") as body:
        holder = behaviour.start("SlowFailFast", payload, name=f"{unique}-holder")  # started another way
        body.arrived()
        first = start_idempotent_execution(arn, payload, key=unique, client=client)
        assert behaviour.wait(first.execution_arn).error == schema.IN_FLIGHT
        again = start_idempotent_execution(arn, payload, key=unique, client=client)
    assert again == IdempotentStart(holder, started=False, status="RUNNING", same_input=True, followed_from=first.execution_arn)
    as_it_is = start_idempotent_execution(arn, payload, key=unique, client=client, follow_holder=False)
    assert (as_it_is.execution_arn, as_it_is.status, as_it_is.followed_from) == (first.execution_arn, "FAILED", None)
    assert behaviour.wait(holder).status == "SUCCEEDED"


def test_the_lock_control_guides_sample_follows_a_duplicate_that_gave_up_to_the_execution_doing_the_work(behaviour, unique):
    arn, payload = behaviour.state_machine_arn("SlowFailFast"), {"id": unique}
    with behaviour.emulator.hold("FailFastWork") as body:
        holder = behaviour.start("SlowFailFast", payload, name=f"{unique}-holder")
        body.arrived()
        gave_up = behaviour.start("SlowFailFast", payload, name=f"{unique}-duplicate")
        assert behaviour.wait(gave_up).error == schema.IN_FLIGHT
        followed, start = docs_sample("lock_control").follow(gave_up, arn, payload, unique)  # the default boto3 client
        assert followed is not None and (followed.execution_arn, followed.started) == (holder, False)
        assert start.started and start.execution_arn.endswith(execution_name(unique))  # named after the key
        assert behaviour.wait(start.execution_arn).error == schema.IN_FLIGHT  # the key is still held
    assert start_idempotent_execution(arn, payload, key=unique).execution_arn == holder  # a start now follows it
