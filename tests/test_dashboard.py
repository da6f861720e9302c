"""idempotent_constructs/dashboard.py: one dashboard of every workflow's outcomes."""

from __future__ import annotations

import json

from idempotent_constructs import IdempotencyDashboard
from tests.synth import resources, template
from tests.test_outcome_metrics import orders


def test_the_dashboard_graphs_every_outcome_of_every_workflow():
    def build(s):
        IdempotencyDashboard(s, "Idempotency", workflows=[orders(s)])

    (dashboard,) = resources(template(build), "AWS::CloudWatch::Dashboard").values()
    body = "".join(part if isinstance(part, str) else "" for part in dashboard["Properties"]["DashboardBody"]["Fn::Join"][1])
    # Replayed adds two states' counts: a math expression over two hidden metrics.
    labels = [m[-1].get("label") for m in json.loads(body)["widgets"][0]["properties"]["metrics"] if m[-1].get("visible", True)]
    assert labels == ["Executed", "Replayed", "Waited", "TakenOver", "Mismatched", "KeyMissing"]
