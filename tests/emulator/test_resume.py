"""Emulator end-to-end: per-step idempotency, resume by re-running, deliberate re-runs, reset (issue 4)."""

from __future__ import annotations

import pytest

from idempotent_constructs import IdempotencyKey, RecordInProgressError, RecordNotFoundError
from idempotent_constructs.lambda_src import schema
from idempotent_constructs.runtime.operations import get_record, reset

from ..stacks import side_effect_runs

KEY = IdempotencyKey.from_jmespath("[order.id, run || `1`]")


def test_a_failed_workflow_run_again_skips_the_steps_that_ran_and_resumes_at_the_failed_one(composition, unique):
    request = {"order": {"id": unique, "amount": 42}}
    failed = composition.run("Resume", request)
    assert (failed.status, failed.error) == ("FAILED", "StepFailed")
    assert side_effect_runs(composition, f"Resume#{unique}", *"ABC") == {"A": 1, "B": 1, "C": 0}

    resumed = composition.run("Resume", request)
    assert resumed.status == "SUCCEEDED", (resumed.error, resumed.cause)
    assert side_effect_runs(composition, f"Resume#{unique}", *"ABC") == {"A": 1, "B": 2, "C": 1}
    assert "A.Replay" in resumed.entered_states() and "ResumeAWork" not in resumed.entered_states()

    clean = composition.run("ResumeClean", request)
    assert side_effect_runs(composition, f"ResumeClean#{unique}", *"ABC") == {"A": 1, "B": 1, "C": 1}
    assert resumed.output == clean.output == {**request, "A": "done", "B": "done", "C": "done"}


def test_each_guard_keeps_its_own_record_of_the_same_business_key(composition, unique):
    run = composition.run("ResumeClean", {"order": {"id": unique}})
    assert set(composition.records_of(run, "Idempotency")) == {
        KEY.record_id({"order": {"id": unique}}, namespace=f"Composition/ResumeClean{step}") for step in "ABC"
    }


def test_a_new_run_number_runs_every_step_again_on_purpose(composition, unique):
    composition.run("ResumeClean", {"order": {"id": unique}})
    composition.run("ResumeClean", {"order": {"id": unique}, "run": 1})  # run 1 is the default: a replay
    assert side_effect_runs(composition, f"ResumeClean#{unique}", *"ABC") == {"A": 1, "B": 1, "C": 1}
    again = composition.run("ResumeClean", {"order": {"id": unique}, "run": 2})
    assert again.status == "SUCCEEDED"
    assert side_effect_runs(composition, f"ResumeClean#{unique}", *"ABC") == {"A": 2, "B": 2, "C": 2}


def test_resetting_one_steps_record_runs_that_step_again_and_only_that_one(composition, unique):
    request = {"order": {"id": unique}}
    composition.run("ResumeClean", request)
    table = composition.table_name("Idempotency")
    record_b = KEY.record_id(request | {"A": "done"}, namespace="Composition/ResumeCleanB")
    deleted = reset(table, record_b, client=composition.emulator.client("dynamodb"))
    assert deleted[schema.STATUS]["S"] == schema.COMPLETED
    composition.run("ResumeClean", request)
    assert side_effect_runs(composition, f"ResumeClean#{unique}", *"ABC") == {"A": 1, "B": 2, "C": 1}


def test_reset_refuses_a_record_in_progress_unless_its_holder_is_named_and_names_an_unknown_one(composition, unique):
    client, table = composition.emulator.client("dynamodb"), composition.table_name("Idempotency")
    record_id = f"ops-test#{unique}"
    holder = f"arn:aws:states:us-east-1:123456789012:execution:Orders:{unique}"
    client.put_item(
        TableName=table,
        Item={"id": {"S": record_id}, "status": {"S": schema.INPROGRESS}, "owner": {"S": f"{holder}#h1"}},
    )
    with pytest.raises(RecordInProgressError, match=f"held by {holder}, which may still be running"):
        reset(table, record_id, client=client)
    with pytest.raises(RecordInProgressError, match=f"held by {holder}, not by {holder}-other"):
        reset(table, record_id, holder=f"{holder}-other", client=client)
    assert get_record(table, record_id, client=client)[schema.STATUS]["S"] == schema.INPROGRESS
    assert reset(table, record_id, holder=holder, client=client)["id"]["S"] == record_id
    with pytest.raises(RecordNotFoundError, match=record_id):
        reset(table, record_id, client=client)


def test_a_step_whose_key_is_missing_from_its_input_fails_with_key_missing_before_anything_is_written(composition, unique):
    failed = composition.run("ResumeClean", {"order": {"number": unique}})
    assert (failed.status, failed.error) == ("FAILED", schema.KEY_MISSING)
    assert "order.id" in failed.cause
    assert not composition.records_of(failed, "Idempotency")
    assert "ResumeCleanAWork" not in failed.entered_states()
