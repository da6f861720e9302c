"""idempotent_constructs/dashboard.py: one dashboard of every workflow's outcomes."""

from __future__ import annotations

import json

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn

from idempotent_constructs import CompletedPolicy, ExtendLease, IdempotencyDashboard, IdempotencyGuard, IdempotencyTable
from idempotent_constructs.errors import IdempotencyConfigurationError
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


def test_the_dashboard_graphs_a_guard_of_your_own_from_the_log_of_the_state_machine_that_holds_it():
    def build(s):
        table = IdempotencyTable(s, "Records")
        guard = IdempotencyGuard(s, "Charge", table=table, body=sfn.Pass(s, "ChargeCard"))
        log_group = logs.LogGroup(s, "OrdersLog")
        sfn.StateMachine(
            s,
            "Orders",
            definition_body=sfn.DefinitionBody.from_chainable(guard),
            logs=sfn.LogOptions(destination=log_group, level=sfn.LogLevel.ALL),
        )
        IdempotencyDashboard(s, "Idempotency", workflows=[guard.outcome_metrics(log_group)])

    assert graphed(build) == EVERY_WORKFLOWS
    tpl = template(build)
    (metric_filter,) = resources(tpl, "AWS::Logs::MetricFilter").values()
    (log_group_id,) = [logical_id for logical_id in resources(tpl, "AWS::Logs::LogGroup") if logical_id.startswith("OrdersLog")]
    assert metric_filter["Properties"]["LogGroupName"] == {"Ref": log_group_id}  # the user's own log group
    assert '$.details.name = "Charge.Body"' in metric_filter["Properties"]["FilterPattern"]
    assert metric_filter["Properties"]["MetricTransformations"][0]["MetricNamespace"].endswith("Test/Charge")


def test_a_guards_metrics_count_one_log_group():
    stack = Stack(App(), "Test")
    guard = IdempotencyGuard(stack, "Charge", table=IdempotencyTable(stack, "Records"), body=sfn.Pass(stack, "ChargeCard"))
    guard.outcome_metrics(logs.LogGroup(stack, "One"))
    with pytest.raises(IdempotencyConfigurationError, match="one log group, the one first given"):
        guard.outcome_metrics(logs.LogGroup(stack, "Two"))
