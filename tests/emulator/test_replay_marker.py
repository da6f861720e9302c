"""replay_marker (issue 15): a replayed object output carries {"replayed": true, "record_id",
"completed_at"} under the field named, whether the result was in the record or restored by the result
function; a first run's output is the body's own; a stored result that is not an object fails the
replay with Idempotency.ReplayMarkerUnsupported."""

from __future__ import annotations

import datetime as dt

import pytest

from idempotent_constructs.lambda_src import canonical, schema


@pytest.mark.parametrize("workflow", ["Marked", "MarkedLarge"])
def test_a_replay_carries_the_marker_and_a_first_run_does_not(control, unique, workflow):
    payload = {"id": unique, "note": "x" * (2000 if workflow == "MarkedLarge" else 10)}
    first = control.run(workflow, payload)
    replay = control.run(workflow, payload)
    assert first.output == payload
    marker = replay.output.pop("idempotency")
    assert replay.output == payload
    assert marker["replayed"] is True
    assert marker["record_id"] == canonical.idempotency_id(f"Control/{workflow}", payload, schema.KIND_PATHS, ["$.id"])
    completed = dt.datetime.fromisoformat(marker["completed_at"].replace("Z", "+00:00"))
    assert abs((completed - dt.datetime.now(dt.UTC)).total_seconds()) < 30
    if workflow == "MarkedLarge":
        assert "Idempotency.Restore" in replay.entered_states()


def test_a_stored_result_that_is_not_an_object_fails_the_replay_with_a_named_error(control, unique):
    payload = {"id": unique, "value": "just text"}
    first = control.run("MarkedAnyValue", payload)
    replay = control.run("MarkedAnyValue", payload)
    assert (first.status, first.output) == ("SUCCEEDED", "just text")
    assert (replay.status, replay.error) == ("FAILED", schema.REPLAY_MARKER_UNSUPPORTED)
