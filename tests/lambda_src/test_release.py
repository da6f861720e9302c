"""lambda_src/release.py: frees the records of Standard executions that ended without releasing them."""

from __future__ import annotations

import json

import pytest

from idempotent_constructs.lambda_src import release, schema

EXECUTION = "arn:aws:states:us-east-1:123456789012:execution:Orders:run-1"
OTHER = "arn:aws:states:us-east-1:123456789012:execution:Orders:run-2"


def scheduled_put(table: str, record_id: str, owner: str) -> dict:
    """The scheduled event of an Acquire as the guard builds it."""
    parameters = {
        "TableName": table,
        "Key": {"id": {"S": record_id}},
        "UpdateExpression": "SET #status = :status, #owner = :owner",
        "ExpressionAttributeValues": {":status": {"S": "INPROGRESS"}, ":owner": {"S": owner}},
    }
    return {
        "type": "TaskScheduled",
        "taskScheduledEventDetails": {"resourceType": "dynamodb", "resource": "updateItem", "parameters": json.dumps(parameters)},
    }


def event(status: str = "ABORTED", execution: str = EXECUTION) -> dict:
    return {"detail-type": "Step Functions Execution Status Change", "detail": {"executionArn": execution, "status": status}}


def put(client, record_id: str, owner: str, status: str) -> None:
    client.put_item(TableName="records", Item={"id": {"S": record_id}, "owner": {"S": owner}, "status": {"S": status}})


def ids(client) -> set[str]:
    return {item["id"]["S"] for item in client.scan(TableName="records")["Items"]}


def test_the_records_an_ended_execution_still_holds_are_deleted_and_no_others(table, monkeypatch):
    put(table, "ns#held", f"{EXECUTION}#a", schema.INPROGRESS)
    put(table, "ns#taken-over", f"{OTHER}#b", schema.INPROGRESS)  # another holder took it over since
    put(table, "ns#finished", f"{EXECUTION}#c", schema.COMPLETED)  # it finished this one
    put(table, "ns#unrelated", f"{OTHER}#d", schema.INPROGRESS)
    history = [
        scheduled_put("records", "ns#held", f"{EXECUTION}#a"),
        scheduled_put("records", "ns#taken-over", f"{EXECUTION}#x"),
        scheduled_put("records", "ns#finished", f"{EXECUTION}#c"),
        {
            "type": "TaskScheduled",
            "taskScheduledEventDetails": {"resourceType": "lambda", "resource": "invoke", "parameters": "{}"},
        },
    ]
    monkeypatch.setattr(release, "_history", lambda client, arn: history)
    monkeypatch.setattr(release, "still_over", lambda client, detail: True)
    assert release.handler(event()) == {"released": 1, "skipped": 2, "denied": 0}
    assert ids(table) == {"ns#taken-over", "ns#finished", "ns#unrelated"}


@pytest.mark.parametrize("status", ["SUCCEEDED", "RUNNING"])
def test_executions_that_did_not_crash_are_left_alone(table, monkeypatch, status):
    put(table, "ns#held", f"{EXECUTION}#a", schema.INPROGRESS)
    monkeypatch.setattr(release, "_history", lambda client, arn: pytest.fail("history read for a healthy run"))
    assert release.handler(event(status)) == {"released": 0, "skipped": 0, "denied": 0}
    assert ids(table) == {"ns#held"}


def test_a_transient_error_is_raised_so_that_eventbridge_delivers_again(table, monkeypatch):
    put(table, "ns#held", f"{EXECUTION}#a", schema.INPROGRESS)
    monkeypatch.setattr(release, "_history", lambda client, arn: [scheduled_put("missing-table", "ns#held", f"{EXECUTION}#a")])
    monkeypatch.setattr(release, "still_over", lambda client, detail: True)
    with pytest.raises(Exception, match="ResourceNotFoundException"):
        release.handler(event())


class _Executions:
    def __init__(self, status: str, redrive_count: int = 0) -> None:
        self.answer = {"status": status, "redriveCount": redrive_count}

    def describe_execution(self, executionArn: str) -> dict:
        return self.answer


@pytest.mark.parametrize(
    ("status", "redrive_count", "over"),
    [("ABORTED", 0, True), ("RUNNING", 1, False), ("PENDING_REDRIVE", 0, False), ("FAILED", 1, False)],
)
def test_an_execution_redriven_since_the_event_is_left_alone(status, redrive_count, over):
    detail = {"executionArn": EXECUTION, "status": "FAILED", "redriveCount": 0}
    assert release.still_over(_Executions(status, redrive_count), detail) is over


class StubStepFunctions:
    """DescribeExecution answering ``reads`` in turn (what an eventually consistent read may say)."""

    def __init__(self, *reads: dict) -> None:
        self.reads = list(reads)

    def describe_execution(self, executionArn: str) -> dict:
        return {"executionArn": executionArn, **self.reads.pop(0)}


def ended_event(**detail) -> dict:
    return {"executionArn": EXECUTION, "status": "ABORTED", **detail}


def test_a_stale_running_read_right_after_the_event_raises_so_that_lambda_retries_the_invocation():
    with pytest.raises(release.ExecutionStillReadsRunning, match="eventually consistent"):
        release.still_over(StubStepFunctions({"status": "RUNNING", "redriveCount": 0}), ended_event(redriveCount=0))
    with pytest.raises(release.ExecutionStillReadsRunning):
        release.still_over(StubStepFunctions({"status": "RUNNING"}), ended_event())  # no redrive count to compare


def test_an_execution_redriven_since_the_event_is_left_alone_whatever_it_reads():
    assert not release.still_over(StubStepFunctions({"status": "RUNNING", "redriveCount": 1}), ended_event(redriveCount=0))
    assert not release.still_over(StubStepFunctions({"status": "FAILED", "redriveCount": 1}), ended_event(redriveCount=0))


def test_an_execution_that_reads_as_ended_at_the_events_redrive_count_is_still_over():
    assert release.still_over(StubStepFunctions({"status": "ABORTED", "redriveCount": 0}), ended_event(redriveCount=0))
    assert release.still_over(StubStepFunctions({"status": "TIMED_OUT"}), ended_event())
    assert not release.still_over(StubStepFunctions({"status": "PENDING_REDRIVE"}), ended_event())


def test_the_handler_raises_on_a_stale_read_and_deletes_nothing(table, monkeypatch):
    put(table, "ns#held", f"{EXECUTION}#a", schema.INPROGRESS)
    monkeypatch.setattr(release.boto3, "client", lambda service: StubStepFunctions({"status": "RUNNING"}))
    with pytest.raises(release.ExecutionStillReadsRunning):
        release.handler(event())
    assert ids(table) == {"ns#held"}
