"""Emulator end-to-end: throttling and transient service errors never change the outcome (contract B12)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from idempotent_constructs.testing import Faults


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
    # Every injected fault was retried: more key function calls than executions.
    assert faults.injected["lambda"] >= 1
    assert sum(e.lambda_invocations() for e in executions) == 20 + faults.injected["lambda"]
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

        def hit(self, kind: str) -> bool:
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


class FirstReplyLost(Faults):
    """Loses the reply of the first item write only: it is applied, and its caller sees InternalServerError."""

    def hit(self, kind: str) -> bool:
        if kind != "dynamodb_lost_replies" or self.injected["dynamodb_lost_replies"]:
            return False
        self.injected["dynamodb_lost_replies"] += 1
        return True


def test_a_whole_workflow_whose_acquire_was_applied_but_reported_failed_resumes_at_once_on_its_own_record(
    behaviour, emulator, unique
):
    # The retried Acquire finds the record its first attempt wrote, under another holder token: without
    # once_per_execution it would wait out its own 10-minute lease (here: fail InFlight after max_wait).
    with emulator.faults(FirstReplyLost(dynamodb_lost_replies=1.0)) as faults:
        execution = behaviour.run("LongLease", {"id": unique})
    assert faults.injected["dynamodb_lost_replies"] == 1
    assert (execution.status, execution.output) == ("SUCCEEDED", {"echo": {"id": unique}, "done": True}), execution.cause
    states = execution.entered_states()
    assert states[:4] == ["Idempotency.Acquire", "Idempotency.Inspect", "Idempotency.Route", "Idempotency.Takeover"]
    assert states.count("LongLeaseSlow") == 1 and "Idempotency.Backoff" not in states
