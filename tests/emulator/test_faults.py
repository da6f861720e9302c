"""Emulator end-to-end: throttling and transient service errors never change the outcome (contract B12)."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from idempotent_constructs import IdempotencyKey
from idempotent_constructs.lambda_src import schema
from idempotent_constructs.testing import Faults

BY_ID = IdempotencyKey.from_paths("$.id")


def test_with_30_percent_faults_40_concurrent_executions_over_8_keys_all_succeed_and_run_each_body_once(
    behaviour, emulator, unique
):
    payloads = [{"id": f"{unique}-{n % 8}"} for n in range(40)]
    with (
        emulator.faults(Faults(dynamodb=0.3, lambda_invocations=0.3, seed=20261122)) as faults,
        ThreadPoolExecutor(max_workers=40) as pool,
    ):
        arns = list(pool.map(lambda n: behaviour.start("SlowPatient", payloads[n], name=f"{unique}-{n}"), range(40)))
        executions = list(pool.map(lambda arn: behaviour.wait(arn, timeout=300), arns))
    assert faults.injected["dynamodb"] > 20
    assert [e.status for e in executions] == ["SUCCEEDED"] * 40, [(e.error, e.cause) for e in executions if e.error]
    runs = {f"{unique}-{k}": 0 for k in range(8)}
    for payload, execution in zip(payloads, executions, strict=False):
        runs[payload["id"]] += "PatientWork" in execution.entered_states()
        assert execution.output == {"echo": payload, "done": True}
    assert set(runs.values()) == {1}


def test_with_lambda_faults_a_jmespath_key_computed_by_the_key_function_runs_each_body_once(behaviour, emulator, unique):
    payloads = [{"order": {"id": f"{unique}-{n % 4}"}} for n in range(20)]
    with (
        emulator.faults(Faults(dynamodb=0.3, lambda_invocations=0.5, seed=20261123)) as faults,
        ThreadPoolExecutor(max_workers=20) as pool,
    ):
        arns = list(pool.map(lambda n: behaviour.start("Flaky", payloads[n], name=f"{unique}-{n}"), range(20)))
        executions = list(pool.map(lambda arn: behaviour.wait(arn, timeout=300), arns))
    # Every fault injected into the key function was retried: more key function calls than executions. (Other
    # invocations meanwhile, the release function's for an earlier test's execution, draw faults of their own.)
    key_function = behaviour.physical_id("AWS::Lambda::Function", "IdempotencyKeyFunction")
    assert faults.failed_invocations[key_function] >= 1
    assert sum(e.lambda_invocations() for e in executions) == 20 + faults.failed_invocations[key_function]
    assert [e.status for e in executions] == ["SUCCEEDED"] * 20, [(e.error, e.cause) for e in executions if e.error]
    assert sum("FlakyFine" in e.entered_states() for e in executions) == 4


@pytest.mark.parametrize("error", ["AmazonDynamoDBException", "SdkClientException"])
def test_dynamodb_failures_under_the_integrations_unspecific_names_are_retried_too(behaviour, emulator, unique, error):
    payloads = [{"id": f"{unique}-{n % 3}"} for n in range(12)]
    with (
        emulator.faults(Faults(dynamodb=0.3, dynamodb_error=error, seed=20261126)) as faults,
        ThreadPoolExecutor(max_workers=12) as pool,
    ):
        arns = list(pool.map(lambda n: behaviour.start("SlowPatient", payloads[n], name=f"{unique}-{n}"), range(12)))
        executions = list(pool.map(lambda arn: behaviour.wait(arn, timeout=300), arns))
    assert faults.injected["dynamodb"] > 3
    assert [e.status for e in executions] == ["SUCCEEDED"] * 12, [(e.error, e.cause) for e in executions if e.error]
    assert sum("PatientWork" in e.entered_states() for e in executions) == 3


def test_a_dynamodb_fault_is_drawn_once_per_request_whatever_moto_calls_inside(emulator, scratch_table):
    """moto's UpdateItem reads the item before it writes it: faults drawn per backend call failed it
    at 51% for a rate of 30%, which exhausted a state's retries about once in 40 runs of the test above."""

    class CountingDraws(Faults):
        draws = 0

        def hit(self, kind: str, call, occurrence: int) -> bool:
            self.draws += kind == "dynamodb"
            return False

    client = emulator.client("dynamodb")
    client.put_item(TableName=scratch_table, Item={"id": {"S": "k"}, "n": {"N": "1"}})
    with emulator.faults(CountingDraws(dynamodb=0.3)) as faults:
        client.update_item(
            TableName=scratch_table,
            Key={"id": {"S": "k"}},
            UpdateExpression="SET n = n + :one",
            ConditionExpression="attribute_exists(id)",
            ExpressionAttributeValues={":one": {"N": "1"}},
            ReturnValues="ALL_NEW",
        )
        client.get_item(TableName=scratch_table, Key={"id": {"S": "k"}})
    assert faults.draws == 2
    assert faults.calls[scratch_table] == 2


def test_a_whole_workflow_whose_acquire_was_applied_but_reported_failed_resumes_at_once_on_its_own_record(
    behaviour, emulator, unique
):
    # The retried Acquire finds the record its first attempt wrote, under another holder token: without
    # once_per_execution it would wait out its own 10-minute lease (here: fail InFlight after max_wait).
    with emulator.faults(Faults(lost_reply_writes=(1,))) as faults:
        execution = behaviour.run("LongLease", {"id": unique})
    assert faults.injected["dynamodb_lost_replies"] == 1
    assert (execution.status, execution.output) == ("SUCCEEDED", {"echo": {"id": unique}, "done": True}), execution.cause
    states = execution.entered_states()
    assert states[:5] == [
        "Idempotency.Acquire",
        "Idempotency.Inspect",
        "Idempotency.Replay",
        "Idempotency.Route",
        "Idempotency.Takeover",
    ]
    assert states.count("LongLeaseSlow") == 1 and "Idempotency.Backoff" not in states


# --- a guard on its own (B12): the writes whose reply is lost, by number (Faults.lost_reply_writes) -------


def record(deployment, namespace: str, payload: dict, key: IdempotencyKey = BY_ID) -> dict | None:
    item_key = {schema.ID: {"S": key.record_id(payload, namespace=namespace)}}
    client = deployment.emulator.client("dynamodb")
    return client.get_item(TableName=deployment.table_name("Idempotency"), Key=item_key, ConsistentRead=True).get("Item")


def run_losing_replies(deployment, machine: str, payload: dict, *writes: int):
    """Runs ``machine`` with the replies of the writes numbered ``writes`` lost, each once."""
    with deployment.emulator.faults(Faults(lost_reply_writes=writes)) as faults:
        execution = deployment.run(machine, payload)
    assert faults.injected["dynamodb_lost_replies"] == len(writes)
    return execution


def resumed_on_its_own_record(execution, prefix: str) -> None:
    """The retried write found its own record, took it at once (``Takeover``, fenced on what it read)
    and never waited for it."""
    states = execution.entered_states()
    assert f"{prefix}.Inspect" in states and f"{prefix}.Takeover" in states, states
    assert f"{prefix}.Backoff" not in states and f"{prefix}.Await" not in states, states


@pytest.mark.parametrize(
    ("machine", "prefix", "work"),
    [
        ("Alone", "AloneOnce", "AloneFine"),
        ("AloneJmespath", "JmespathOnce", "JmespathWork"),
        ("BareFan", "FanOnce", "BareFanWork"),  # its body, one Parallel, runs bare: Takeover goes to it
    ],
)
def test_a_guard_whose_acquire_was_applied_but_reported_failed_resumes_at_once_on_its_own_record(
    lost_replies, unique, machine, prefix, work
):
    # The guard's own record, not another holder's: it never waits out its own 10-minute lease, nor
    # fails with Idempotency.InFlight naming its own execution as the holder.
    payload = {"id": unique}
    execution = run_losing_replies(lost_replies, machine, payload, 1)
    assert (execution.status, execution.error) == ("SUCCEEDED", None), execution.cause
    outputs = {"Alone": {"echo": payload}, "AloneJmespath": {"echo": payload, "done": True}, "BareFan": [{"echo": payload}]}
    assert execution.output == outputs[machine]
    resumed_on_its_own_record(execution, prefix)
    assert execution.entered_states().count(work) == 1
    key = IdempotencyKey.from_jmespath("id") if machine == "AloneJmespath" else BY_ID
    stored = record(lost_replies, f"LostReplies/{prefix}", payload, key)
    assert stored is not None and stored[schema.STATUS]["S"] == schema.COMPLETED
    assert schema.owner_execution(stored[schema.OWNER]["S"]) == execution.arn
    # A duplicate replays it.
    again = lost_replies.run(machine, payload)
    assert (again.status, again.output) == ("SUCCEEDED", execution.output)
    assert work not in again.entered_states()


def test_a_takeover_applied_but_reported_failed_resumes_at_once_on_its_own_record(lost_replies, emulator, unique):
    payload = {"id": unique}
    crashed = {
        schema.ID: {"S": BY_ID.record_id(payload, namespace="LostReplies/AloneOnce")},
        schema.STATUS: {"S": schema.INPROGRESS},
        schema.OWNER: {"S": f"arn:aws:states:us-east-1:123456789012:execution:Other:{unique}#crashed"},
        schema.VALIDATION: {"S": "another payload's"},
        schema.IN_PROGRESS_EXPIRATION: {"N": str(int(time.time() * 1000) - 1_000)},  # lapsed
        schema.EXPIRATION: {"N": str(int(time.time()) + 3_600)},
    }
    emulator.client("dynamodb").put_item(TableName=lost_replies.table_name("Idempotency"), Item=crashed)
    # The first write is the takeover (the acquire is refused by its condition, so it applies nothing).
    execution = run_losing_replies(lost_replies, "Alone", payload, 1)
    assert (execution.status, execution.output) == ("SUCCEEDED", {"echo": payload}), execution.cause
    states = execution.entered_states()
    assert states.count("AloneOnce.Takeover") == 2 and "AloneOnce.Backoff" not in states, states
    assert states.count("AloneFine") == 1
    stored = record(lost_replies, "LostReplies/AloneOnce", payload)
    assert stored is not None and schema.owner_execution(stored[schema.OWNER]["S"]) == execution.arn


@pytest.mark.parametrize("items", [["a", "b", "c"], ["a", "a"]], ids=["distinct", "one-key-twice"])
def test_a_guard_in_a_map_whose_acquire_was_applied_but_reported_failed_runs_each_key_once(lost_replies, unique, items):
    # The first write is one iteration's Acquire. That iteration resumes on its own record; a sibling
    # under the same key in the same execution is another holder (B8): it waits, then replays.
    payload = {"items": [{"sku": f"{unique}-{sku}"} for sku in items]}
    execution = run_losing_replies(lost_replies, "PerItem", payload, 1)
    assert execution.status == "SUCCEEDED", (execution.error, execution.cause)
    assert execution.output == [{"echo": item, "done": True} for item in payload["items"]]
    states = execution.entered_states()
    assert states.count("ItemWork") == len(set(items))
    # Replay's entries less Route's (entered only from a Replay with no result to give): the replays.
    assert states.count("ItemOnce.Replay") - states.count("ItemOnce.Route") == len(items) - len(set(items))
    assert "ItemOnce.Takeover" in states and "ItemOnce.LeaseLost" not in states


@pytest.mark.parametrize("lost", [1, 2, 3, 4], ids=["first-acquire", "first-complete", "second-acquire", "second-complete"])
def test_two_guards_in_one_execution_each_survive_a_lost_reply_of_any_of_their_writes(lost_replies, unique, lost):
    payload = {"id": unique}
    execution = run_losing_replies(lost_replies, "InSequence", payload, lost)
    assert (execution.status, execution.output) == ("SUCCEEDED", {"id": unique, "first": "ran", "second": "ran"}), execution.cause
    states = execution.entered_states()
    assert states.count("FirstWork") == states.count("SecondWork") == 1
    assert not any(state.endswith((".Backoff", ".InFlight", ".LeaseLost")) for state in states), states
    for prefix in ("First", "Second"):
        stored = record(lost_replies, f"LostReplies/{prefix}", payload)
        assert stored is not None and stored[schema.STATUS]["S"] == schema.COMPLETED


@pytest.mark.parametrize(("machine", "prefix"), [("Alone", "AloneOnce"), ("BareFan", "FanOnce")])
def test_a_release_applied_but_reported_failed_still_fails_with_the_bodys_error_and_frees_the_key(
    lost_replies, unique, machine, prefix
):
    payload = {"id": unique, "fail": True}
    # Write 1 is the acquire, write 2 the release (a delete): retried, it finds its record gone.
    failed = run_losing_replies(lost_replies, machine, payload, 2)
    assert (failed.status, failed.error) == ("FAILED", "Boom")
    assert f"{prefix}.Release" in failed.entered_states()
    assert record(lost_replies, f"LostReplies/{prefix}", payload) is None
    assert lost_replies.run(machine, {"id": unique}).status == "SUCCEEDED"


def test_a_cached_failure_applied_but_reported_failed_is_stored_once_and_replayed(lost_replies, unique):
    payload = {"id": unique, "fail": True}
    failed = run_losing_replies(lost_replies, "AloneCached", payload, 2)
    assert (failed.status, failed.error) == ("FAILED", "Boom")
    stored = record(lost_replies, "LostReplies/CachedOnce", payload)
    assert stored is not None and stored[schema.STATUS]["S"] == schema.FAILED
    again = lost_replies.run("AloneCached", payload)
    assert (again.status, again.error) == ("FAILED", "Boom")
    assert "CachedBoom" not in again.entered_states()


def test_a_lease_extension_applied_but_reported_failed_is_written_again_and_the_run_completes(control, unique):
    payload = {"id": unique}
    # Write 1 is the acquire, write 2 the extension: retried, the record is still this run's.
    execution = run_losing_replies(control, "KeepingAlive", payload, 2)
    assert (execution.status, execution.error) == ("SUCCEEDED", None), execution.cause
    assert [event["type"] for event in execution.history].count("TaskFailed") == 1  # the extension, retried
    states = execution.entered_states()
    assert states.count("Idempotency.ExtendLease") == 1 and "Idempotency.ExtendLease.LeaseLost" not in states
    (stored,) = control.records_of(execution, table="Idempotency").values()
    assert stored[schema.STATUS]["S"] == schema.COMPLETED
