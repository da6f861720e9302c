"""Outcome metrics: the outcome states a workflow's executions entered, counted from its execution log
by one metric filter (created on first use, so a stack without metrics gets no extra resource), by
state name; no Lambda call."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import jsii
from aws_cdk import IStableStringProducer, Lazy
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_logs as logs
from constructs import Construct

from .lambda_src import schema

if TYPE_CHECKING:
    from .guard import IdempotencyGuard

# The states whose entries the outcome metrics count, with the type of their "entered" log event.
OUTCOME_STATES = {
    "Body": "ParallelStateEntered",
    "Replay": "PassStateEntered",
    "Restore": "TaskStateEntered",
    "Backoff": "WaitStateEntered",
    "Takeover": "TaskStateEntered",
    "PayloadMismatch": "FailStateEntered",
    "KeyMissing": "FailStateEntered",
}


def states_entered(
    scope: Construct, guard: IdempotencyGuard, log_group: logs.ILogGroup, label: str, states: list[str], props: dict[str, Any]
) -> cloudwatch.IMetric:
    """Entries of the guard's ``states`` (their ids) as one metric, labelled ``label``; ``props`` are
    the caller's metric options. Adds the metric filter "Outcomes" to ``scope`` on first use."""
    _metric_filter(scope, guard, log_group)
    label = props.pop("label", label)
    metrics = {
        f"m{index}": cloudwatch.Metric(
            namespace=schema.metrics_namespace(guard.namespace),
            metric_name=schema.STATES_ENTERED_METRIC,
            dimensions_map={"State": guard.state_name(state)},
            statistic="Sum",
            **props,
        )
        for index, state in enumerate(states)
    }
    if len(metrics) == 1:
        return metrics["m0"].with_(label=label)
    # A period in which one state was never entered has no data point for it: count it as 0.
    return cloudwatch.MathExpression(
        expression=" + ".join(f"FILL({name}, 0)" for name in metrics),
        using_metrics=metrics,
        label=label,
        period=props.get("period"),
    )


def outcome_states(guard: IdempotencyGuard) -> dict[str, str]:
    """The outcome states the guard has, with the type of their "entered" log event: the optional
    ones (``Rejected``, ``extend_lease()`` states) only if it has them, so that templates without
    them are unchanged."""
    states = dict(OUTCOME_STATES)
    if guard.node.try_find_child("Rejected") is not None:
        states["Rejected"] = "FailStateEntered"
    states.update(dict.fromkeys(guard.extend_states, "TaskStateEntered"))
    return states


@jsii.implements(IStableStringProducer)
class _Pattern:
    """The filter pattern, produced at synth: extend_lease() states may be added after the first metric."""

    def __init__(self, guard: IdempotencyGuard) -> None:
        self.guard = guard

    def produce(self) -> str:
        entered = " || ".join(
            f'($.type = "{event}" && $.details.name = "{self.guard.state_name(state)}")'
            for state, event in outcome_states(self.guard).items()
        )
        return f"{{ {entered} }}"


def _metric_filter(scope: Construct, guard: IdempotencyGuard, log_group: logs.ILogGroup) -> None:
    if scope.node.try_find_child("Outcomes") is not None:
        return

    logs.MetricFilter(
        scope,
        "Outcomes",
        log_group=log_group,
        filter_pattern=logs.FilterPattern.literal(Lazy.string(_Pattern(guard))),
        metric_namespace=schema.metrics_namespace(guard.namespace),
        metric_name=schema.STATES_ENTERED_METRIC,
        metric_value="1",
        dimensions={"State": "$.details.name"},
    )
