"""lambda_src/release.py: frees the records of Standard executions that ended without releasing them."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

from idempotent_constructs.lambda_src import release, schema

EXECUTION = "arn:aws:states:us-east-1:123456789012:execution:Orders:run-1"
OTHER = "arn:aws:states:us-east-1:123456789012:execution:Orders:run-2"


def event(status: str = "ABORTED", execution: str = EXECUTION) -> dict:
    return {"detail-type": "Step Functions Execution Status Change", "detail": {"executionArn": execution, "status": status}}


def put(client, record_id: str, owner: str, status: str, *, held_by: str | None = None) -> None:
    """A record as the guard writes it: ``held_by`` its holder's execution while in progress."""
    held = {"held_by": {"S": held_by or owner.split("#")[0]}} if status == schema.INPROGRESS else {}
    client.put_item(TableName="records", Item={"id": {"S": record_id}, "owner": {"S": owner}, "status": {"S": status}, **held})


def ids(client) -> set[str]:
    return {item["id"]["S"] for item in client.scan(TableName="records")["Items"]}


@pytest.fixture
def served(table, monkeypatch):
    """The release function serves the table "records", and the execution reads as still over."""
    monkeypatch.setenv(schema.TABLES_ENV, "records")
    monkeypatch.setattr(release, "still_over", lambda client, detail: True)
    return table


def test_the_records_an_ended_execution_still_holds_are_deleted_and_no_others(served):
    put(served, "ns#held", f"{EXECUTION}#a", schema.INPROGRESS)
    put(served, "ns#also-held", f"{EXECUTION}#b", schema.INPROGRESS)  # a second guard's
    put(served, "ns#taken-over", f"{OTHER}#b", schema.INPROGRESS)  # another holder took it over since
    put(served, "ns#finished", f"{EXECUTION}#c", schema.COMPLETED)  # it finished this one
    assert release.handler(event()) == {"released": 2, "skipped": 0, "denied": 0}
    assert ids(served) == {"ns#taken-over", "ns#finished"}


def test_a_record_another_execution_took_over_under_a_definition_that_writes_no_held_by_is_left_alone(served):
    # Taken over by an execution started before the deploy that added the holder index: its Takeover kept
    # the held_by the earlier holder wrote, but wrote its own owner token.
    put(served, "ns#taken-over", f"{OTHER}#b", schema.INPROGRESS, held_by=EXECUTION)
    assert release.handler(event()) == {"released": 0, "skipped": 1, "denied": 0}
    assert ids(served) == {"ns#taken-over"}


def test_a_record_the_index_still_lists_but_that_changed_since_is_left_alone(served, monkeypatch):
    put(served, "ns#taken-over", f"{OTHER}#b", schema.INPROGRESS)
    put(served, "ns#finished", f"{EXECUTION}#c", schema.COMPLETED)
    # The index is eventually consistent: it may still list records finished or taken over since.
    monkeypatch.setattr(release, "held_records", lambda client, table, arn: iter(["ns#taken-over", "ns#finished"]))
    assert release.handler(event()) == {"released": 0, "skipped": 2, "denied": 0}
    assert ids(served) == {"ns#taken-over", "ns#finished"}


def test_it_asks_step_functions_only_for_the_executions_metadata_and_reads_no_history(table, monkeypatch):
    monkeypatch.setenv(schema.TABLES_ENV, "records")
    put(table, "ns#held", f"{EXECUTION}#a", schema.INPROGRESS)
    asked = []

    class MetadataOnly:  # no get_execution_history: reading a history would raise AttributeError
        def describe_execution(self, executionArn: str, includedData: str = "ALL_DATA") -> dict:
            asked.append(includedData)
            return {"executionArn": executionArn, "status": "ABORTED"}

    monkeypatch.setattr(release.boto3, "client", lambda service: MetadataOnly() if service == "stepfunctions" else table)
    assert release.handler(event()) == {"released": 1, "skipped": 0, "denied": 0}
    assert asked == ["METADATA_ONLY"]


@pytest.mark.parametrize("status", ["SUCCEEDED", "RUNNING"])
def test_executions_that_did_not_crash_are_left_alone(served, monkeypatch, status):
    put(served, "ns#held", f"{EXECUTION}#a", schema.INPROGRESS)
    monkeypatch.setattr(release, "held_records", lambda *_: pytest.fail("records listed for a healthy run"))
    assert release.handler(event(status)) == {"released": 0, "skipped": 0, "denied": 0}
    assert ids(served) == {"ns#held"}


def test_a_table_without_the_holder_index_is_counted_and_left_to_the_lease(served, monkeypatch):
    monkeypatch.setenv(schema.TABLES_ENV, "records,yours")
    served.create_table(
        TableName="yours",
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    put(served, "ns#held", f"{EXECUTION}#a", schema.INPROGRESS)
    assert release.handler(event()) == {"released": 1, "skipped": 0, "denied": 1}


@pytest.mark.parametrize(
    "code",
    [
        "ProvisionedThroughputExceededException",  # transient: Lambda retries the invocation
        "AccessDeniedException",  # a table it may not list: after the retries, the dead-letter queue and its alarm
    ],
)
def test_a_transient_error_is_raised_so_that_lambda_retries_the_invocation(served, monkeypatch, code):
    def failing(*_):
        raise ClientError({"Error": {"Code": code, "Message": "no"}}, "Query")

    monkeypatch.setattr(release, "held_records", failing)
    with pytest.raises(ClientError, match=code):
        release.handler(event())


class _Executions:
    def __init__(self, status: str, redrive_count: int = 0) -> None:
        self.answer = {"status": status, "redriveCount": redrive_count}

    def describe_execution(self, executionArn: str, **_) -> dict:
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

    def describe_execution(self, executionArn: str, **_) -> dict:
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
