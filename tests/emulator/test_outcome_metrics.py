"""Emulator end-to-end: a workflow's outcome metrics (idempotent_constructs/_synth/outcome_metrics.py) count
what its executions did. The emulator keeps no execution log, so each history event is read as the
execution log carries it (its ``type``, and its details with the state's ``name``) and matched against
the clauses of the deployed metric filter, which counts ``StatesEntered`` by state name."""

from __future__ import annotations

from tests.stacks import counted


def test_a_rejected_duplicate_is_counted_by_metric_rejected_and_runs_nothing(control, unique):
    first = control.run("Rejecting", {"id": unique})
    duplicate = control.run("Rejecting", {"id": unique})
    assert counted(control, "Rejecting", first) == {"Idempotency.Body": 1}  # metric_executed
    assert counted(control, "Rejecting", duplicate) == {"Idempotency.Rejected": 1}  # metric_rejected


def test_each_extension_of_a_lease_is_counted_by_metric_lease_extended(control, unique):
    execution = control.run("KeepingAlive", {"id": unique})
    assert execution.status == "SUCCEEDED"
    assert counted(control, "KeepingAlive", execution) == {"Idempotency.Body": 1, "Idempotency.ExtendLease": 1}
