"""The metric_* methods of IdempotentStateMachine (idempotent_constructs/_synth/outcome_metrics.py)."""

from __future__ import annotations

import pytest
from aws_cdk import Duration
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks

from idempotent_constructs import (
    CompletedPolicy,
    ExtendLease,
    FailurePolicy,
    IdempotencyConfigurationError,
    IdempotencyTable,
    IdempotentStateMachine,
    ResultStorage,
)
from tests.synth import filter_pattern_entries, matches, resources, stack, template

OUTCOMES = ("executed", "replayed", "waited", "taken_over", "mismatched", "key_missing")


def orders(s, definition=None, **options):
    return IdempotentStateMachine(
        s,
        "Orders",
        table=IdempotencyTable(s, "Table"),
        definition=definition or sfn.Pass(s, "Work"),
        namespace="shop/orders",
        **options,
    )


def test_a_workflow_without_metrics_gets_no_metric_filter():
    assert resources(template(orders), "AWS::Logs::MetricFilter") == {}


def test_outcome_metrics_count_the_outcome_states_entered_in_the_execution_log_by_one_metric_filter():
    def build(s):
        workflow = orders(s, result_storage=ResultStorage.large())
        for outcome in OUTCOMES:
            getattr(workflow, f"metric_{outcome}")()

    (metric_filter,) = resources(template(build), "AWS::Logs::MetricFilter").values()
    properties = metric_filter["Properties"]
    (transformation,) = properties["MetricTransformations"]
    assert (transformation["MetricNamespace"], transformation["MetricName"]) == (
        "IdempotentConstructs/shop/orders",
        "StatesEntered",
    )
    assert transformation["Dimensions"] == [{"Key": "State", "Value": "$.details.name"}]
    for event, state in (
        ("ParallelStateEntered", "Body"),
        ("MapStateEntered", "Replay"),
        ("ChoiceStateEntered", "Route"),
        ("WaitStateEntered", "Backoff"),
        ("TaskStateEntered", "Takeover"),
        ("FailStateEntered", "PayloadMismatch"),
        ("FailStateEntered", "KeyMissing"),
        ("FailStateEntered", "InFlight"),
        ("FailStateEntered", "LeaseLost"),
        ("FailStateEntered", "ResultMissing"),
        ("FailStateEntered", "Failed"),
    ):
        assert matches(properties["FilterPattern"], event, f"Idempotency.{state}")
    # Every Fail state of the guard's by one clause, and no state of anyone else's.
    assert ("FailStateEntered", "Idempotency.*") in filter_pattern_entries(properties["FilterPattern"])
    assert not matches(properties["FilterPattern"], "FailStateEntered", "Work")
    assert not matches(properties["FilterPattern"], "TaskStateEntered", "Idempotency.Release")


def test_each_metric_names_its_namespace_metric_and_state():
    target = stack()
    workflow = orders(target)
    executed = target.resolve(workflow.metric_executed().to_metric_config().metric_stat.dimensions)
    assert executed == [{"name": "State", "value": "Idempotency.Body"}]
    key_missing = workflow.metric_key_missing().to_metric_config().metric_stat
    assert (key_missing.namespace, key_missing.metric_name) == ("IdempotentConstructs/shop/orders", "StatesEntered")
    assert target.resolve(key_missing.dimensions) == [{"name": "State", "value": "Idempotency.KeyMissing"}]


def test_runs_of_a_body_of_one_task_are_counted_where_its_own_task_is_entered():
    # A body of one Task runs bare (guard.finish.bare): its Task is the state a run enters to run it.
    def build(s):
        orders(s, definition=tasks.EvaluateExpression(s, "Charge", expression="$.amount * 2")).metric_executed()

    (metric_filter,) = resources(template(build), "AWS::Logs::MetricFilter").values()
    entries = filter_pattern_entries(metric_filter["Properties"]["FilterPattern"])
    assert ("TaskStateEntered", "Charge") in entries and not [entry for entry in entries if entry[1] == "Idempotency.Body"]
    target = stack()
    executed = orders(target, definition=tasks.EvaluateExpression(target, "Charge", expression="$.amount * 2")).metric_executed()
    assert target.resolve(executed.to_metric_config().metric_stat.dimensions) == [{"name": "State", "value": "Charge"}]


def test_replays_add_up_with_missing_periods_counted_as_zero_and_keep_your_period_and_label():
    target = stack()
    workflow = orders(target, result_storage=ResultStorage.large())
    replayed = workflow.metric_replayed(period=Duration.minutes(1), label="Duplicates")
    assert replayed.expression == "FILL(replayed0, 0) - FILL(replayed1, 0) - FILL(replayed2, 0)"
    assert (replayed.period.to_seconds(), replayed.label) == (60, "Duplicates")
    assert {m.period.to_seconds() for m in replayed.using_metrics.values()} == {60}


def test_metrics_of_a_workflow_logging_elsewhere_fail_with_what_to_do():
    target = stack()
    workflow = orders(target, logs=sfn.LogOptions(destination=logs.LogGroup(target, "Mine")))
    with pytest.raises(IdempotencyConfigurationError, match="leave logs at its default"):
        workflow.metric_replayed()


def filter_pattern(build) -> str:
    (metric_filter,) = resources(template(build), "AWS::Logs::MetricFilter").values()
    return str(metric_filter["Properties"]["FilterPattern"])


def test_rejections_and_lease_extensions_are_counted_only_by_workflows_that_have_them():
    def plain(s):
        orders(s).metric_executed()

    def rejecting_and_extending(s):
        workflow = orders(
            s,
            on_completed=CompletedPolicy.REJECT,
            definition=ExtendLease(s, "KeepAlive").next(sfn.Pass(s, "Work")).next(ExtendLease(s, "KeepAliveAgain")),
        )
        workflow.metric_rejected()
        workflow.metric_lease_extended()

    assert "Rejected" not in filter_pattern(plain) and "KeepAlive" not in filter_pattern(plain)
    pattern = filter_pattern(rejecting_and_extending)
    assert matches(pattern, "FailStateEntered", "Idempotency.Rejected")
    for state in ("KeepAlive", "KeepAliveAgain"):
        assert matches(pattern, "TaskStateEntered", f"Idempotency.{state}")
        assert matches(pattern, "FailStateEntered", f"Idempotency.{state}.LeaseLost")
    assert len(pattern) <= 1024  # CloudWatch Logs' limit on a filter pattern


def test_lease_extensions_add_up_over_every_extend_state():
    target = stack()
    with pytest.raises(IdempotencyConfigurationError, match="has no ExtendLease state"):
        orders(target).metric_lease_extended()
    other = stack()
    extended = orders(other, definition=ExtendLease(other, "A").next(ExtendLease(other, "B"))).metric_lease_extended()
    assert (extended.expression, extended.label) == ("FILL(leaseExtended0, 0) + FILL(leaseExtended1, 0)", "LeaseExtended")


def test_replays_are_counted_as_entries_of_replay_less_those_of_route_and_of_result_missing():
    # Route is entered only from a Replay with no result to give (guard.route.route), ResultMissing from one
    # whose restore found none.
    target = stack()
    replayed = orders(target).metric_replayed()
    states = {
        name: target.resolve(metric.to_metric_config().metric_stat.dimensions) for name, metric in replayed.using_metrics.items()
    }
    assert states == {
        f"replayed{index}": [{"name": "State", "value": f"Idempotency.{state}"}]
        for index, state in enumerate(("Replay", "Route", "ResultMissing"))
    }


def test_a_workflow_that_rejects_duplicates_counts_no_route_against_its_replays():
    target = stack()
    replayed = orders(target, on_completed=CompletedPolicy.REJECT).metric_replayed()
    assert target.resolve(replayed.to_metric_config().metric_stat.dimensions) == [
        {"name": "State", "value": "Idempotency.Replay"}
    ]


def test_a_workflow_that_keeps_its_key_for_a_redrive_counts_duplicates_told_to_await_it_as_in_flight():
    target = stack()
    in_flight = orders(target, on_failure=FailurePolicy.KEEP_FOR_REDRIVE).metric_in_flight()
    states = {
        name: target.resolve(metric.to_metric_config().metric_stat.dimensions) for name, metric in in_flight.using_metrics.items()
    }
    assert (in_flight.expression, in_flight.label) == ("FILL(inFlight0, 0) + FILL(inFlight1, 0)", "InFlight")
    assert states == {
        f"inFlight{index}": [{"name": "State", "value": f"Idempotency.{state}"}]
        for index, state in enumerate(("InFlight", "AwaitingRedrive"))
    }
