"""Emulator end-to-end: a workflow's outcome metrics (idempotent_constructs/_synth/outcome_metrics.py) count
what its executions did. The emulator keeps no execution log, so each history event is read as the
execution log carries it (its ``type``, and its details with the state's ``name``) and matched against
the clauses of the deployed metric filter, which counts ``StatesEntered`` by state name."""

from __future__ import annotations

from collections import Counter

from idempotent_constructs.testing import Deployment, Execution
from tests.synth import filter_pattern_entries


def counted(deployment: Deployment, workflow: str, execution: Execution) -> Counter[str]:
    """What the metric filters of ``workflow`` count in one execution's log, by state name."""
    clauses = {
        clause
        for logical_id, resource in deployment.template["Resources"].items()
        if resource["Type"] == "AWS::Logs::MetricFilter" and f"/{workflow}/" in deployment.paths[logical_id]
        for clause in filter_pattern_entries(resource["Properties"]["FilterPattern"])
    }
    assert clauses
    logged = (
        (event["type"], details.get("name"))
        for event in execution.history
        for field, details in event.items()
        if field.endswith("EventDetails")
    )
    return Counter(name for event_type, name in logged if (event_type, name) in clauses)


def test_a_rejected_duplicate_is_counted_by_metric_rejected_and_runs_nothing(control, unique):
    first = control.run("Rejecting", {"id": unique})
    duplicate = control.run("Rejecting", {"id": unique})
    assert counted(control, "Rejecting", first) == {"Idempotency.Body": 1}  # metric_executed
    assert counted(control, "Rejecting", duplicate) == {"Idempotency.Rejected": 1}  # metric_rejected


def test_each_extension_of_a_lease_is_counted_by_metric_lease_extended(control, unique):
    execution = control.run("KeepingAlive", {"id": unique})
    assert execution.status == "SUCCEEDED"
    assert counted(control, "KeepingAlive", execution) == {"Idempotency.Body": 1, "Idempotency.ExtendLease": 1}
