"""idempotent_constructs/guard/record_tasks.py and tasks.py: the record requests, their fences and their retries."""

from __future__ import annotations

from aws_cdk import Duration

from idempotent_constructs import FailurePolicy, IdempotencyKey
from idempotent_constructs._jsonata.engine import evaluate
from tests.guard.build import condition_of, guarded


def test_every_write_after_acquire_is_fenced_on_the_owner():
    states = guarded(on_failure=FailurePolicy.CACHE)["States"]
    for name in ("Complete", "RecordFailure"):
        assert condition_of(states[f"ChargeOnce.{name}"]) == "attribute_not_exists(#id) OR #owner = :owner"
        assert states[f"ChargeOnce.{name}"]["Catch"][0]["ErrorEquals"] == ["DynamoDB.ConditionalCheckFailedException"]
    # A takeover is fenced on the record as it was read: owner, status and lease (a holder that extended its
    # lease after the read keeps its key: issue 51), or the lease's absence, where the record read had none.
    assert condition_of(states["ChargeOnce.Takeover"]) == (
        "#owner = :previous AND #status = :previous_status AND "
        "(#in_progress_expiration = :previous_lease OR attribute_not_exists(#in_progress_expiration))"
    )
    assert condition_of(guarded()["States"]["ChargeOnce.Release"]) == "#owner = :owner"


def test_transient_dynamodb_and_lambda_errors_are_retried_with_backoff():
    states = guarded()["States"]
    states.update(states["ChargeOnce.Await"]["Branches"][0]["States"])
    states.update(states["ChargeOnce.Replay"]["ItemProcessor"]["States"])
    for name in ("Acquire", "Inspect", "Complete", "Release", "Takeover", "Poll"):
        retry = states[f"ChargeOnce.{name}"]["Retry"][0]
        assert "DynamoDB.ThrottlingException" in retry["ErrorEquals"]
        assert "DynamoDB.ConditionalCheckFailedException" not in retry["ErrorEquals"]
        assert retry["BackoffRate"] == 2
    for name in ("StoreResult", "Restore"):
        lambda_errors = {e for r in states[f"ChargeOnce.{name}"]["Retry"] for e in r["ErrorEquals"]}
        assert {"Lambda.ServiceException", "Lambda.TooManyRequestsException"} <= lambda_errors


def test_key_namespace_retention_and_lease_reach_the_acquire():
    states = guarded(
        key=IdempotencyKey.from_paths("$.order.id"),
        namespace="orders-v2",
        expires_after=Duration.days(7),
        lease=Duration.minutes(2),
    )["States"]
    acquire = states["ChargeOnce.Acquire"]
    assert "$lookup($o, 'order')" in acquire["Arguments"] and "'orders-v2#' & $i" in acquire["Arguments"]
    assert "$i := $digest($text($ks))" in acquire["Arguments"]  # the namespace's prefix, then the key's digest
    assert "$now + 120000" in acquire["Arguments"] and "+ 604800" in states["ChargeOnce.Complete"]["Arguments"]


def test_every_dynamodb_task_retries_the_transient_errors_under_every_name_the_integration_may_give():
    retried = {
        error
        for state in guarded()["States"].values()
        if state.get("Resource", "").startswith("arn:") and ":dynamodb:" in str(state.get("Resource"))
        for retry in state.get("Retry", [])
        for error in retry["ErrorEquals"]
    }
    assert "DynamoDB.InternalServerError" in retried and "DynamoDB.InternalServerErrorException" in retried
    # The names a failure without a name of its own arrives with (protocol.TRANSIENT_DYNAMODB_ERRORS).
    assert {"DynamoDB.AmazonDynamoDBException", "DynamoDB.SdkClientException"} <= retried
    assert "DynamoDB.ConditionalCheckFailedException" not in retried


def test_a_takeover_of_a_record_read_without_a_lease_fences_on_its_absence_with_a_value_dynamodb_takes():
    """A finished record written where there was none (a result stored after the record was released) has no
    lease; a takeover of it (a cached failure met by a guard that releases) still builds a request DynamoDB
    accepts: every value typed."""
    takeover = guarded()["States"]["ChargeOnce.Takeover"]
    variable = next(name for name in takeover["Assign"])
    record = {"id": {"S": "Test/ChargeOnce#1"}, "status": {"S": "FAILED"}, "owner": {"S": "arn:e#1"}, "validation": {"S": "v"}}
    for read, lease in ((record, "0"), ({**record, "in_progress_expiration": {"N": "1800000002000"}}, "1800000002000")):
        bindings = {
            variable: {"id": "Test/ChargeOnce#1", "validation": "v", "owner": "arn:e#2", "record": read},
            "states": {"input": {}, "context": {"Execution": {"Id": "arn:e"}, "State": {"Name": "T", "EnteredTime": "t"}}},
        }
        request = evaluate(takeover["Arguments"][2:-2], bindings)
        assert request["ExpressionAttributeValues"][":previous_lease"] == {"N": lease}
