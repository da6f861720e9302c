"""on_completed=CompletedPolicy.REJECT (issue 15): a duplicate after success fails with
Idempotency.AlreadyCompleted, which names the record and when the work completed, and runs nothing."""

from __future__ import annotations

import datetime as dt
import json

from idempotent_constructs.lambda_src import canonical, schema


def test_a_duplicate_after_success_is_rejected_with_the_record_id_and_when_it_completed(control, unique):
    payload = {"id": unique, "note": "first"}
    first = control.run("Rejecting", payload)
    duplicate = control.run("Rejecting", payload)
    assert (first.status, first.output) == ("SUCCEEDED", payload)
    assert (duplicate.status, duplicate.error) == ("FAILED", schema.ALREADY_COMPLETED)
    cause = json.loads(duplicate.cause)
    record_id = canonical.idempotency_id("Control/Rejecting", payload, schema.KIND_PATHS, ["$.id"])
    assert cause["record_id"] == record_id
    completed = dt.datetime.fromisoformat(cause["completed_at"].replace("Z", "+00:00"))
    assert abs((completed - dt.datetime.now(dt.UTC)).total_seconds()) < 30
    assert "Once" not in duplicate.entered_states()
    assert duplicate.entered_states()[-2:] == ["Idempotency.Route", "Idempotency.Rejected"]


def test_a_rejected_duplicate_leaves_the_record_as_it_was(control, unique):
    payload = {"id": unique}
    control.run("Rejecting", payload)
    before = control.items("Idempotency")
    control.run("Rejecting", payload)
    assert control.items("Idempotency") == before


def test_a_rejection_routes_to_its_fail_state_where_a_replay_replays_at_once_marked_or_not(control, behaviour, unique):
    control.run("Rejecting", {"id": unique})
    rejected = control.run("Rejecting", {"id": unique})
    replays = []
    for deployment, workflow, payload in ((behaviour, "ByFieldA", {"a": unique}), (control, "Marked", {"id": unique})):
        deployment.run(workflow, payload)
        replays.append(deployment.run(workflow, payload))
    # Without a result to replay there is no Replay state: Route decides, and Rejected fails the run.
    assert rejected.entered_states() == [f"Idempotency.{state}" for state in ("Acquire", "Inspect", "Route", "Rejected")]
    for replay in replays:
        assert replay.entered_states() == [f"Idempotency.{state}" for state in ("Acquire", "Inspect", "Replay")]
    # The replay marker adds no event.
    assert len(replays[0].history) == len(replays[1].history)
