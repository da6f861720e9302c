"""Emulator end-to-end: the behaviour contract (B1 to B6, B10; docs/explanation/contract.md) of IdempotentStateMachine."""

from __future__ import annotations

import datetime as dt
import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from idempotent_constructs import IdempotencyKey
from idempotent_constructs.lambda_src import schema
from idempotent_constructs.runtime.executions import IdempotentStart, in_flight_holder
from idempotent_constructs.testing import Deployment, Execution
from tests.stacks import counted


def ran_body(execution: Execution, body_state: str) -> bool:
    return body_state in execution.entered_states()


def record(behaviour: Deployment, id_prefix: str) -> list[dict]:
    return [item for item in behaviour.items("Idempotency") if item["id"]["S"].startswith(id_prefix)]


def test_the_body_gets_exactly_the_input_and_every_run_returns_its_output_byte_for_byte(behaviour, unique):
    payload = {"z": [1, 1.5, {"k": None}], "a": "é", "id": unique, "n": 1.0, "t": True}
    first = behaviour.run("Echo", payload)
    replay = behaviour.run("Echo", payload)
    assert first.status == replay.status == "SUCCEEDED"
    assert ran_body(first, "Identity") and not ran_body(replay, "Identity")
    # The identity body returns its input: what it received is what the caller sent, as JSONata reads
    # JSON (the guard's states are JSONata, in a JSONPath state machine too): 1.0 is the number 1.
    assert json.dumps(first.output) == json.dumps({**payload, "n": 1})
    assert json.dumps(replay.output) == json.dumps(first.output)


def test_a_duplicate_after_success_replays_the_stored_result_without_running_the_body(behaviour, unique):
    payload = {"id": unique}
    first = behaviour.run("Slow", payload)
    replay = behaviour.run("Slow", payload)
    assert ran_body(first, "SlowWork") and not ran_body(replay, "SlowWork")
    assert replay.output == first.output == {"echo": payload, "done": True}
    assert replay.entered_states()[-1] == "Idempotency.Replay"


def test_twenty_concurrent_executions_with_one_key_run_the_body_once_and_all_get_its_output(behaviour, unique):
    payload = {"id": unique}
    with ThreadPoolExecutor(max_workers=20) as pool:
        arns = list(pool.map(lambda i: behaviour.start("Slow", payload, name=f"{unique}-{i}"), range(20)))
        executions = list(pool.map(behaviour.wait, arns))
    assert [e.status for e in executions] == ["SUCCEEDED"] * 20
    assert sum(ran_body(e, "SlowWork") for e in executions) == 1
    assert all(e.output == {"echo": payload, "done": True} for e in executions)


def test_key_order_whitespace_and_integral_floats_do_not_change_the_key(behaviour, unique):
    first = behaviour.run("Echo", {"a": 1, "b": [2, {"c": 3}], "id": unique})
    # The same JSON value sent with other key order, whitespace, and 2.0 / 3.0 / 1.0 for 2 / 3 / 1.
    reordered = behaviour.run("Echo", json.loads(f'{{ "id" : "{unique}", "b": [2.0, {{"c": 3.0}}],  "a": 1.0 }}'))
    assert ran_body(first, "Identity") and not ran_body(reordered, "Identity")


def test_different_namespaces_never_share_a_record(behaviour, unique):
    payload = {"id": unique}
    assert ran_body(behaviour.run("Echo", payload), "Identity")
    assert ran_body(behaviour.run("EchoTwin", payload), "TwinIdentity")


def test_keys_in_one_namespace_that_select_the_same_value_share_its_record_and_other_values_do_not(behaviour, unique):
    # One operation reached from two entry points, each keyed where its input holds the identity.
    both = {"a": unique, "b": unique}
    first = behaviour.run("ByFieldA", both)
    assert ran_body(first, "Fielda")
    again = behaviour.run("ByFieldB", both)
    assert not ran_body(again, "Fieldb") and again.output == first.output
    assert ran_body(behaviour.run("ByFieldB", {"a": unique, "b": f"{unique}-b"}), "Fieldb")


def test_a_duplicate_during_a_run_waits_and_then_returns_the_holders_result(behaviour, emulator, unique):
    payload = {"id": unique}
    with emulator.hold("SlowWork") as body:  # the holder stops in its body, holding the key
        holder = behaviour.start("Slow", payload, name=f"{unique}-holder")
        body.arrived()
        waiting = behaviour.start("Slow", payload, name=f"{unique}-waiter")
        behaviour.wait_for_state(waiting, "Idempotency.Busy")
    waiter, held = behaviour.wait(waiting), behaviour.wait(holder)
    assert held.status == waiter.status == "SUCCEEDED"
    assert ran_body(held, "SlowWork") and not ran_body(waiter, "SlowWork")
    assert "Idempotency.Await" in waiter.entered_states()
    assert waiter.output == held.output


def test_with_the_fail_policy_a_duplicate_during_a_run_fails_at_once_with_in_flight(behaviour, emulator, unique):
    payload = {"id": unique}
    with emulator.hold("FailFastWork") as body:
        holder = behaviour.start("SlowFailFast", payload, name=f"{unique}-holder")
        body.arrived()
        duplicate = behaviour.run("SlowFailFast", payload)
    assert duplicate.status == "FAILED"
    assert duplicate.error == schema.IN_FLIGHT
    assert not ran_body(duplicate, "FailFastWork")
    assert behaviour.wait(holder).status == "SUCCEEDED"


def test_in_flight_names_the_holder_its_lease_and_the_record_so_the_caller_can_attach_to_it(behaviour, emulator, unique):
    payload = {"id": unique, "card": "4111 1111 1111 1111"}
    with emulator.hold("FailFastWork") as body:
        holder = behaviour.start("SlowFailFast", payload, name=f"{unique}-holder")
        body.arrived()
        duplicate = behaviour.run("SlowFailFast", payload)
        cause = json.loads(duplicate.cause)
        (item,) = [item for item in behaviour.items("Idempotency") if item["owner"]["S"].startswith(holder + "#")]
        attached = in_flight_holder(duplicate.arn, client=emulator.client("stepfunctions"))
    assert cause == {
        "record_id": item["id"]["S"],
        "holder_execution_arn": holder,
        "lease_expires_at": aws_time(int(item["in_progress_expiration"]["N"])),
    }
    assert "4111" not in duplicate.cause  # never a payload
    assert attached == IdempotentStart(holder, started=False, status="RUNNING", same_input=True, followed_from=duplicate.arn)
    assert in_flight_holder(holder, client=emulator.client("stepfunctions")) is None  # not an InFlight failure
    assert behaviour.wait(holder).status == "SUCCEEDED"


def aws_time(epoch_millis: int) -> str:
    """JSONata's $fromMillis: ISO 8601 in UTC with milliseconds."""
    moment = dt.datetime.fromtimestamp(epoch_millis / 1000, tz=dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def test_a_failure_releases_the_key_and_the_next_duplicate_runs_the_body_again(behaviour, unique):
    # Flaky's key (tests/stacks.py): the same for both runs, whatever "fail" says.
    record_id = IdempotencyKey.from_jmespath("order.id").record_id({"order": {"id": unique}}, namespace="Behaviour/Flaky")
    failed = behaviour.run("Flaky", {"order": {"id": unique}, "fail": True})
    assert failed.status == "FAILED"
    assert (failed.error, failed.cause) == ("Boom", "the body failed on purpose")
    # This key's record is gone (deleted by Release), not merely out of progress.
    assert "Idempotency.Release" in failed.entered_states()
    assert counted(behaviour, "Flaky", failed) == {"Idempotency.Body": 1, "Idempotency.Failed": 1}  # metric_failed
    assert record(behaviour, record_id) == []
    retried = behaviour.run("Flaky", {"order": {"id": unique}, "fail": False})
    assert retried.status == "SUCCEEDED"
    assert ran_body(retried, "FlakyFine")
    assert retried.output == {"echo": {"order": {"id": unique}, "fail": False}}
    # The id is the one the workflow uses: its retry holds the record under it now.
    assert [item[schema.STATUS]["S"] for item in record(behaviour, record_id)] == [schema.COMPLETED]


def test_a_missing_null_or_empty_key_fails_with_key_missing_before_anything_is_written(behaviour, unique):
    for payload in ({"other": unique}, {"order": {"id": None}}, {"order": {"id": ""}}, {"order": {}}):
        execution = behaviour.run("Flaky", payload)
        assert execution.status == "FAILED"
        assert execution.error == schema.KEY_MISSING
        assert "Idempotency.Acquire" not in execution.entered_states()
        assert behaviour.records_of(execution, "Idempotency") == {}


def test_with_the_cache_policy_duplicates_get_the_original_error_without_running_the_body(behaviour, unique):
    payload = {"order": {"id": unique}, "fail": True}
    failed = behaviour.run("FlakyCached", payload)
    duplicate = behaviour.run("FlakyCached", payload)
    assert (failed.status, failed.error, failed.cause) == ("FAILED", "Boom", "the body failed on purpose")
    assert (duplicate.status, duplicate.error, duplicate.cause) == (failed.status, failed.error, failed.cause)
    assert ran_body(failed, "CachedShouldFail") and not ran_body(duplicate, "CachedShouldFail")


def test_with_cache_errors_listed_errors_are_replayed_and_others_release_the_key(behaviour, unique):
    declined = {"order": {"id": f"{unique}-1"}, "fail": True, "error": "Declined"}
    assert behaviour.run("FlakyCachedSome", declined).error == "Declined"
    replayed = behaviour.run("FlakyCachedSome", declined)
    assert replayed.error == "Declined" and not ran_body(replayed, "CachedSomeShouldFail")

    glitch = {"order": {"id": f"{unique}-2"}, "fail": True, "error": "Glitch"}
    assert behaviour.run("FlakyCachedSome", glitch).error == "Glitch"
    again = behaviour.run("FlakyCachedSome", glitch)
    assert again.error == "Glitch" and ran_body(again, "CachedSomeShouldFail")


def test_step_functions_own_errors_arrive_as_body_failed_with_the_original_error_in_the_cause(behaviour, unique):
    execution = behaviour.run("FlakyCachedSome", {"order": {"id": unique}, "step_functions_error": True})
    assert execution.error == schema.BODY_FAILED
    assert json.loads(execution.cause)["Error"] == "States.Timeout"


def test_the_same_key_with_another_payload_fails_with_payload_mismatch_naming_the_member_that_differs(behaviour, unique):
    assert behaviour.run("Flaky", {"order": {"id": unique}, "note": "first"}).status == "SUCCEEDED"
    other = behaviour.run("Flaky", {"order": {"id": unique}, "note": "second"})
    assert (other.status, other.error) == ("FAILED", schema.PAYLOAD_MISMATCH)
    assert not ran_body(other, "FlakyFine")
    # A JMESPath key: the key function computed the members' digests; never a value in the cause.
    record_id = IdempotencyKey.from_jmespath("order.id").record_id({"order": {"id": unique}}, namespace="Behaviour/Flaky")
    assert other.cause == (
        f"The idempotency key was already used with a different payload (record {record_id}); the members that differ: note"
    )


def test_a_mismatch_computed_natively_names_every_member_added_removed_or_changed(behaviour, unique):
    request = {"order": {"id": unique}, "region": "eu", "amount": 5, "note": "x"}
    assert behaviour.run("JsonataKey", request).status == "SUCCEEDED"
    other = behaviour.run("JsonataKey", {"order": {"id": unique}, "region": "eu", "amount": 6, "extra": True})
    assert (other.status, other.error) == ("FAILED", schema.PAYLOAD_MISMATCH)
    assert other.cause.endswith("; the members that differ: amount, extra, note")
    assert other.lambda_invocations() == 0


def test_a_duplicate_with_nothing_to_replay_goes_on_from_replay_to_route_which_the_replayed_metric_counts_against(
    behaviour, unique
):
    first = behaviour.run("Flaky", {"order": {"id": unique}, "note": "first"})
    replay = behaviour.run("Flaky", {"order": {"id": unique}, "note": "first"})
    other = behaviour.run("Flaky", {"order": {"id": unique}, "note": "second"})
    # Replay's Items raise where the record holds no result of this payload; its Catch goes to Route.
    assert wrapper_states(other) == [
        f"Idempotency.{s}" for s in ("ComputeKey", "Acquire", "Inspect", "Replay", "Route", "PayloadMismatch")
    ]

    def replayed(execution: Execution) -> int:  # as metric_replayed counts them
        states = execution.entered_states()
        return states.count("Idempotency.Replay") - states.count("Idempotency.Route")

    assert [replayed(execution) for execution in (first, replay, other)] == [0, 1, 0]


def wrapper_states(execution: Execution) -> list[str]:
    return [state for state in execution.entered_states() if state.startswith("Idempotency.")]


@pytest.mark.parametrize(
    ("workflow", "payload"),
    [
        ("Echo", {}),  # whole_input()
        ("ByFieldA", {"a": "x"}),  # from_paths("$.a")
        ("JsonataKey", {"order": {"id": 1}, "region": "eu"}),  # from_jsonata(...)
    ],
)
def test_a_first_run_costs_three_states_and_a_replay_three_and_neither_calls_a_lambda(behaviour, unique, workflow, payload):
    payload = {**payload, "nonce": unique}
    first = behaviour.run(workflow, payload)
    replay = behaviour.run(workflow, payload)
    assert wrapper_states(first) == [f"Idempotency.{s}" for s in ("Acquire", "Body", "Complete")]
    assert wrapper_states(replay) == [f"Idempotency.{s}" for s in ("Acquire", "Inspect", "Replay")]
    assert first.lambda_invocations() == replay.lambda_invocations() == 0


def test_a_jmespath_key_adds_the_key_function_to_each_path(behaviour, unique):
    first = behaviour.run("Flaky", {"order": {"id": unique}})
    replay = behaviour.run("Flaky", {"order": {"id": unique}})
    assert wrapper_states(first) == [f"Idempotency.{s}" for s in ("ComputeKey", "Acquire", "Body", "Complete")]
    assert wrapper_states(replay) == [f"Idempotency.{s}" for s in ("ComputeKey", "Acquire", "Inspect", "Replay")]
    assert first.lambda_invocations() == replay.lambda_invocations() == 1


def test_each_poll_while_the_holder_runs_costs_three_states(behaviour, emulator, unique):
    payload = {"id": unique}
    with emulator.hold("SlowWork") as body:
        holder = behaviour.start("Slow", payload, name=f"{unique}-holder")
        assert body.arrived() == [holder]
        waiting = behaviour.start("Slow", payload, name=f"{unique}-waiter")
        behaviour.wait_for_state(waiting, "Idempotency.Busy", times=2)
    waiter = behaviour.wait(waiting)
    states = wrapper_states(waiter)
    busy_polls = states.count("Idempotency.Busy")
    assert busy_polls >= 2
    # Every poll enters Poll and Check; a busy one also Busy, the last one Settled.
    assert states.count("Idempotency.Poll") == states.count("Idempotency.Check") == busy_polls + 1
    assert states.count("Idempotency.Settled") == 1
