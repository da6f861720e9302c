"""idempotent_constructs/dashboard.py: one dashboard of every workflow's outcomes."""

from __future__ import annotations

import json

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk import aws_stepfunctions as sfn

from idempotent_constructs import (
    CompletedPolicy,
    ExtendLease,
    IdempotencyDashboard,
    IdempotencyGuard,
    IdempotencyTable,
    InFlightPolicy,
)
from idempotent_constructs.errors import IdempotencyConfigurationError
from tests._synth.test_outcome_metrics import orders
from tests.synth import resources, template

# The outcome metrics every workflow has, as the dashboard labels them, and a workflow that replays.
EVERY_WORKFLOWS = ["Executed", "Replayed", "Waited", "TakenOver", "Mismatched", "KeyMissing", "InFlight", "LeaseLost", "Failed"]
REPLAYING = [*EVERY_WORKFLOWS, "ResultMissing"]


def graphed(build) -> list[str]:
    """The labels of the metrics the dashboard's first graph shows."""
    (dashboard,) = resources(template(build), "AWS::CloudWatch::Dashboard").values()
    body = "".join(part if isinstance(part, str) else "" for part in dashboard["Properties"]["DashboardBody"]["Fn::Join"][1])
    # Replayed is one state's count less another's: a math expression over two hidden metrics.
    return [m[-1].get("label") for m in json.loads(body)["widgets"][0]["properties"]["metrics"] if m[-1].get("visible", True)]


def test_the_dashboard_graphs_the_outcomes_every_workflow_has_and_missing_results_where_it_replays():
    assert graphed(lambda s: IdempotencyDashboard(s, "Idempotency", workflows=[orders(s)])) == REPLAYING


def test_the_dashboard_graphs_rejections_and_extensions_of_a_workflow_that_rejects_and_extends_its_lease():
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

    assert graphed(build) == REPLAYING
    tpl = template(build)
    (metric_filter,) = resources(tpl, "AWS::Logs::MetricFilter").values()
    (log_group_id,) = [logical_id for logical_id in resources(tpl, "AWS::Logs::LogGroup") if logical_id.startswith("OrdersLog")]
    assert metric_filter["Properties"]["LogGroupName"] == {"Ref": log_group_id}  # the user's own log group
    assert '$.details.name = "Charge.Body"' in metric_filter["Properties"]["FilterPattern"]
    assert '$.details.name = "Charge.*"' in metric_filter["Properties"]["FilterPattern"]  # its Fail states
    assert metric_filter["Properties"]["MetricTransformations"][0]["MetricNamespace"].endswith("Test/Charge")


def test_a_guards_metrics_count_one_log_group():
    stack = Stack(App(), "Test")
    guard = IdempotencyGuard(stack, "Charge", table=IdempotencyTable(stack, "Records"), body=sfn.Pass(stack, "ChargeCard"))
    guard.outcome_metrics(logs.LogGroup(stack, "One"))
    with pytest.raises(IdempotencyConfigurationError, match="one log group, the one first given"):
        guard.outcome_metrics(logs.LogGroup(stack, "Two"))


def alarms_of(tpl) -> dict[str, dict]:
    """The alarms of a template, by the name the dashboard gave each (the last part of its description's
    meaning is in ALARMS) or, for the release function's, ``DeadLetters``."""
    return {
        ("DeadLetters" if "DeadLetters" in logical_id else logical_id.split("Orders")[-1][:-8]): alarm["Properties"]
        for logical_id, alarm in resources(tpl, "AWS::CloudWatch::Alarm").items()
    }


def test_a_dashboard_without_alarm_actions_makes_no_alarm_of_its_own():
    tpl = template(lambda s: IdempotencyDashboard(s, "Idempotency", workflows=[orders(s)]))
    assert [logical_id for logical_id in resources(tpl, "AWS::CloudWatch::Alarm") if "DeadLetters" not in logical_id] == []


def test_alarm_actions_give_each_workflow_the_runbooks_alarms_firing_on_the_first_and_the_release_alarm_the_actions():
    def build(s):
        topic = sns.Topic(s, "OnCall")
        IdempotencyDashboard(s, "Idempotency", workflows=[orders(s)], alarm_actions=[actions.SnsAction(topic)])

    tpl = template(build)
    alarms = alarms_of(tpl)
    assert sorted(alarms) == ["DeadLetters", "InFlight", "LeaseLost", "Mismatched", "ResultMissing"]
    (topic,) = resources(tpl, "AWS::SNS::Topic")
    for alarm in alarms.values():
        assert alarm["AlarmActions"] == [{"Ref": topic}]
        assert (alarm["Threshold"], alarm["EvaluationPeriods"], alarm["ComparisonOperator"]) == (
            1,
            1,
            "GreaterThanOrEqualToThreshold",
        )
        assert alarm["TreatMissingData"] == "notBreaching"
    assert "runbook" in alarms["LeaseLost"]["AlarmDescription"]
    (dashboard,) = resources(tpl, "AWS::CloudWatch::Dashboard").values()
    assert '"type":"alarm"' in json.dumps(dashboard["Properties"]["DashboardBody"]).replace('\\"', '"')


def test_a_workflow_that_fails_duplicates_at_once_and_rejects_gets_no_in_flight_or_result_missing_alarm():
    def build(s):
        topic = sns.Topic(s, "OnCall")
        workflow = orders(s, on_in_flight=InFlightPolicy.FAIL, on_completed=CompletedPolicy.REJECT)
        IdempotencyDashboard(s, "Idempotency", workflows=[workflow], alarm_actions=[actions.SnsAction(topic)])

    assert sorted(alarms_of(template(build))) == ["DeadLetters", "LeaseLost", "Mismatched"]
