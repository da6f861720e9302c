"""idempotent_constructs/dashboard.py: one dashboard of every workflow's outcomes."""

from __future__ import annotations

import json

from aws_cdk import aws_stepfunctions as sfn

from idempotent_constructs import CompletedPolicy, ExtendLease, IdempotencyDashboard
from tests._synth.test_outcome_metrics import orders
from tests.synth import resources, template

# The outcome metrics every workflow has, as the dashboard labels them.
EVERY_WORKFLOWS = ["Executed", "Replayed", "Waited", "TakenOver", "Mismatched", "KeyMissing"]


def graphed(build) -> list[str]:
    """The labels of the metrics the dashboard's first graph shows."""
    (dashboard,) = resources(template(build), "AWS::CloudWatch::Dashboard").values()
    body = "".join(part if isinstance(part, str) else "" for part in dashboard["Properties"]["DashboardBody"]["Fn::Join"][1])
    # Replayed is one state's count less another's: a math expression over two hidden metrics.
    return [m[-1].get("label") for m in json.loads(body)["widgets"][0]["properties"]["metrics"] if m[-1].get("visible", True)]


def test_the_dashboard_graphs_the_six_outcomes_every_workflow_has():
    assert graphed(lambda s: IdempotencyDashboard(s, "Idempotency", workflows=[orders(s)])) == EVERY_WORKFLOWS


def test_the_dashboard_graphs_all_eight_outcome_metrics_of_a_workflow_that_rejects_and_extends_its_lease():
    def build(s):
        workflow = orders(
            s,
            definition=sfn.Pass(s, "Work").next(ExtendLease(s, "KeepLease")),
            on_completed=CompletedPolicy.REJECT,
        )
        IdempotencyDashboard(s, "Idempotency", workflows=[workflow])

    assert graphed(build) == [*EVERY_WORKFLOWS, "Rejected", "LeaseExtended"]
