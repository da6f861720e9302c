"""Emulator end-to-end: a Standard workflow that keeps its key for a redrive (``FailurePolicy.KEEP_FOR_REDRIVE``,
issue 53), tried as its users do: a newsletter that emails each reader once (a guarded inline Map), then
writes a summary, which fails until its downstream is ready. The failed execution is redriven with
``RedriveExecution`` (the harness's, testing/gaps/redrive_execution.py) and completes; each email is sent once,
and a duplicate that comes in between is told to await the redrive rather than send them again."""

from __future__ import annotations

import datetime
import json
import uuid

import pytest
from aws_cdk import App, Duration, RemovalPolicy, Stack
from aws_cdk import aws_stepfunctions as sfn

from idempotent_constructs import (
    FailurePolicy,
    IdempotencyGuard,
    IdempotencyKey,
    IdempotencyTable,
    IdempotentStateMachine,
)
from idempotent_constructs._readers.assembly import ACCOUNT
from idempotent_constructs.testing import Deployment, Execution, LocalEmulator
from tests.emulator.cli.helpers import run_cli
from tests.stacks import side_effect_runs, side_effects_table

REPLAY = ["Idempotency.Acquire", "Idempotency.Inspect", "Idempotency.Replay"]
NEWSLETTER = "RedrivenNewsletter"


def counted_update(scope: Stack, name: str, item: str, counters: str, condition: str, output: str) -> sfn.CustomState:
    """A DynamoDB update that counts one run under ``item`` (JSONata) on ``condition``: it fails with
    ``DynamoDB.ConditionalCheckFailedException`` until the test makes the condition hold."""
    return sfn.CustomState(
        scope,
        name,
        state_json={
            "Type": "Task",
            "QueryLanguage": "JSONata",
            "Resource": "arn:aws:states:::dynamodb:updateItem",
            "Arguments": {
                "TableName": counters,
                "Key": {"id": {"S": "{% " + item + " %}"}},
                "UpdateExpression": "ADD runs :one",
                "ConditionExpression": condition,
                "ExpressionAttributeValues": {":one": {"N": "1"}},
            },
            "Output": "{% " + output + " %}",
        },
    )


class NewsletterStack(Stack):
    """``Newsletter``: ``Send`` emails each reader of ``$.readers`` (``Email``, in a guard per reader, counted under
    ``Email#{reader}``, bounced while that item says ``bounce``), then ``Summarize`` counts ``Summary#{issue}``
    on condition that its item is ``ready``. The workflow and the guards keep their keys for a redrive."""

    def __init__(self, scope: App, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        counters = side_effects_table(self)
        table = IdempotencyTable(self, "Idempotency", removal_policy=RemovalPolicy.DESTROY)
        kept = {"on_failure": FailurePolicy.KEEP_FOR_REDRIVE, "lease": Duration.seconds(2)}
        email = counted_update(
            self,
            "Email",
            "'Email#' & $states.input",
            counters.table_name,
            "attribute_not_exists(bounce)",
            "{'sent': $states.input}",
        )
        send = sfn.Map.jsonata(
            self,
            "Send",
            items=sfn.ProvideItems.jsonata("{% $states.input.readers %}"),
            outputs="{% $states.input %}",
            max_concurrency=1,  # in order: a bounce stops the readers after it
        ).item_processor(
            IdempotencyGuard(
                self,
                "EmailOnce",
                table=table,
                key=IdempotencyKey.from_jsonata("$states.input"),
                body=email,
                in_inline_map=True,
                owner_state_machine_name=NEWSLETTER,
                **kept,
            )
        )
        summarize = counted_update(
            self,
            "Summarize",
            "'Summary#' & $states.input.issue",
            counters.table_name,
            "attribute_exists(ready)",
            "{'issue': $states.input.issue, 'sent': $count($states.input.readers)}",
        )
        workflow = IdempotentStateMachine(
            self,
            "Newsletter",
            table=table,
            key=IdempotencyKey.from_paths("$.issue"),
            definition=send.next(summarize),
            state_machine_name=NEWSLETTER,
            query_language=sfn.QueryLanguage.JSONATA,
            **kept,
        )
        counters.grant_read_write_data(workflow.state_machine)


@pytest.fixture(scope="module")
def newsletter(emulator: LocalEmulator) -> Deployment:
    return emulator.deploy_stack(NewsletterStack(App(), "Newsletters"))


def redriven_attempt(execution: Execution) -> list[str]:
    """The states the last attempt entered: those after its last ``ExecutionRedriven`` event."""
    types = [event["type"] for event in execution.history]
    last = len(types) - 1 - types[::-1].index("ExecutionRedriven")
    return Execution(execution.arn, execution.status, execution.input, history=execution.history[last:]).entered_states()


def put(deployment: Deployment, item: str, **attributes: bool) -> None:
    """``item`` of the counters table, no runs counted, with ``attributes`` (``ready``, ``bounce``)."""
    values = {name: {"BOOL": value} for name, value in attributes.items()}
    deployment.emulator.client("dynamodb").put_item(
        TableName=deployment.table_name("SideEffects"), Item={"id": {"S": item}, "runs": {"N": "0"}, **values}
    )


def test_a_failed_newsletter_keeps_its_key_a_duplicate_awaits_the_redrive_and_the_redrive_sends_each_email_once(newsletter):
    issue = uuid.uuid4().hex[:8]
    readers = [f"{issue}-{n}" for n in range(3)]
    request = {"issue": issue, "readers": readers}

    failed = newsletter.run("Newsletter", request)
    assert (failed.status, failed.error) == ("FAILED", "DynamoDB.ConditionalCheckFailedException")
    assert side_effect_runs(newsletter, "Email", *readers) == dict.fromkeys(readers, 1)
    (record,) = [item for item in newsletter.records_of(failed, "Idempotency").values() if item["status"]["S"] == "INPROGRESS"]

    # A duplicate while the execution can be redriven: it waits out the lease, then is told to await the redrive.
    duplicate = newsletter.run("Newsletter", request)
    assert (duplicate.status, duplicate.error) == ("FAILED", "Idempotency.AwaitingRedrive"), duplicate.cause
    cause = json.loads(duplicate.cause or "{}")
    assert (cause["record_id"], cause["holder_execution_arn"]) == (record["id"]["S"], failed.arn)
    assert "Send" not in duplicate.entered_states()

    put(newsletter, f"Summary#{issue}", ready=True)
    newsletter.emulator.client("stepfunctions").redrive_execution(executionArn=failed.arn)
    redriven = newsletter.wait(failed.arn)
    assert redriven.status == "SUCCEEDED", redriven.cause
    # Resumed at the failed step, with its key: the emails are not sent again, and its record completes.
    assert redriven_attempt(redriven) == ["Summarize", "Idempotency.Complete"]
    assert redriven.output == {"issue": issue, "sent": 3}
    assert side_effect_runs(newsletter, "Email", *readers) == dict.fromkeys(readers, 1)
    assert side_effect_runs(newsletter, "Summary", issue) == {issue: 1}

    replay = newsletter.run("Newsletter", request)
    assert replay.status == "SUCCEEDED" and replay.entered_states() == REPLAY and replay.output == redriven.output


def test_a_newsletter_whose_email_bounced_is_redriven_and_emails_only_the_reader_it_failed_to(newsletter):
    issue = uuid.uuid4().hex[:8]
    readers = [f"{issue}-{n}" for n in range(3)]
    put(newsletter, f"Summary#{issue}", ready=True)
    put(newsletter, f"Email#{readers[1]}", bounce=True)

    failed = newsletter.run("Newsletter", {"issue": issue, "readers": readers})
    assert (failed.status, failed.error) == ("FAILED", "DynamoDB.ConditionalCheckFailedException"), failed.cause
    assert side_effect_runs(newsletter, "Email", *readers) == {readers[0]: 1, readers[1]: 0, readers[2]: 0}
    statuses = sorted(item["status"]["S"] for item in newsletter.records_of(failed, "Idempotency").values())
    # The issue's key and the bounced reader's are kept for the redrive; the first reader's email completed.
    assert statuses == ["COMPLETED", "INPROGRESS", "INPROGRESS"]

    put(newsletter, f"Email#{readers[1]}")  # the address fixed: no more bounce
    newsletter.emulator.client("stepfunctions").redrive_execution(executionArn=failed.arn)
    redriven = newsletter.wait(failed.arn)
    assert redriven.status == "SUCCEEDED", redriven.cause
    # The first reader's iteration is not run again; the bounced one's resumes at its failed step, with its key,
    # and its guard completes its record; the last one, never started, starts.
    assert redriven_attempt(redriven) == [
        "Send",
        *("Email", "EmailOnce.Complete"),
        *("EmailOnce.Begin", "EmailOnce.Acquire", "Email", "EmailOnce.Complete"),
        *("Summarize", "Idempotency.Complete"),
    ]
    assert side_effect_runs(newsletter, "Email", *readers) == dict.fromkeys(readers, 1)
    assert {item["status"]["S"] for item in newsletter.records_of(failed, "Idempotency").values()} == {"COMPLETED"}


def test_an_operator_who_gives_up_a_failed_newsletter_resets_its_key_told_it_could_be_redriven(newsletter):
    issue = uuid.uuid4().hex[:8]
    readers = [f"{issue}-{n}" for n in range(2)]
    failed = newsletter.run("Newsletter", {"issue": issue, "readers": readers})  # no summary: not ready
    assert failed.status == "FAILED"
    # The workflow's record (its namespace is its construct path), not its emails'.
    (record_id,) = [id for id in newsletter.records_of(failed, "Idempotency") if id.startswith("Newsletters/Newsletter#")]
    result = run_cli("reset", record_id, "--yes", "--table", newsletter.table_name("Idempotency"))
    assert result.exit_code == 0, result.output
    assert "its execution ended FAILED, as Step Functions says; it can still be redriven: do not, once reset" in result.stdout
    put(newsletter, f"Summary#{issue}", ready=True)
    again = newsletter.run("Newsletter", {"issue": issue, "readers": readers})
    # The issue runs again from the start: its emails replay their guards' records, the summary is written.
    assert again.status == "SUCCEEDED" and again.entered_states().count("EmailOnce.Replay") == 2
    assert side_effect_runs(newsletter, "Email", *readers) == dict.fromkeys(readers, 1)


def ended_days_ago(deployment: Deployment, execution: Execution, days: int) -> None:
    """Move the end of ``execution`` ``days`` into the past: the harness judges AWS's 14-day redrive window by
    the wall clock against it (testing/gaps/redrive_execution.py)."""
    from moto.stepfunctions.responses import get_backend

    backend = get_backend(ACCOUNT, deployment.emulator.region)
    (ended,) = [e for machine in backend.state_machines for e in machine.executions if e.execution_arn == execution.arn]
    ended.stop_date -= datetime.timedelta(days=days, minutes=1)


def test_once_the_redrive_window_closes_the_next_duplicate_takes_the_key_over_and_runs_the_newsletter(newsletter):
    issue = uuid.uuid4().hex[:8]
    request = {"issue": issue, "readers": [f"{issue}-0"]}
    failed = newsletter.run("Newsletter", request)  # no summary: not ready
    assert failed.status == "FAILED"
    put(newsletter, f"Summary#{issue}", ready=True)
    ended_days_ago(newsletter, failed, 14)
    client = newsletter.emulator.client("stepfunctions")
    assert client.describe_execution(executionArn=failed.arn)["redriveStatus"] == "NOT_REDRIVABLE"

    again = newsletter.run("Newsletter", request)
    assert again.status == "SUCCEEDED" and "Idempotency.Takeover" in again.entered_states()
    assert "EmailOnce.Replay" in again.entered_states()  # the email its guard completed is not sent again
    assert side_effect_runs(newsletter, "Summary", issue) == {issue: 1}
    with pytest.raises(client.exceptions.ExecutionNotRedrivable):
        client.redrive_execution(executionArn=failed.arn)
