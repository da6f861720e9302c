"""Outcome metrics: the outcome states a workflow's executions entered, counted from its execution log
by one metric filter (created on first use, so a stack without metrics gets no extra resource; more
if the names overflow one filter pattern), by state name; no Lambda call."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_logs as logs
from constructs import Construct

from ..lambda_src import schema

if TYPE_CHECKING:
    from ..guard import IdempotencyGuard

# The states whose entries the outcome metrics count, with the type of their "entered" log event (Body's
# is the guard's ``body_entered``: a body that runs bare is a Task, Parallel or Map state).
OUTCOME_STATES = {
    "Body": "ParallelStateEntered",
    "Replay": "MapStateEntered",
    "Backoff": "WaitStateEntered",
    "Takeover": "TaskStateEntered",
    "PayloadMismatch": "FailStateEntered",
    "KeyMissing": "FailStateEntered",
}


def states_entered(
    scope: Construct,
    guard: IdempotencyGuard,
    log_group: logs.ILogGroup,
    label: str,
    states: list[str],
    props: dict[str, Any],
    minus: list[str],
) -> cloudwatch.IMetric:
    """Entries of the guard's ``states`` (their ids), less those of its states ``minus``, as one metric,
    labelled ``label``; ``props`` are the caller's metric options. Adds the metric filter "Outcomes" to
    ``scope`` on first use."""
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
        for index, state in enumerate([*states, *minus])
    }
    if len(metrics) == 1:
        return metrics["m0"].with_(label=label)
    # A period in which one state was never entered has no data point for it: count it as 0.
    terms = [f"{'-' if index >= len(states) else '+'} FILL({name}, 0)" for index, name in enumerate(metrics)]
    return cloudwatch.MathExpression(
        expression=" ".join(terms).removeprefix("+ "),
        using_metrics=metrics,
        label=label,
        period=props.get("period"),
    )


def outcome_states(guard: IdempotencyGuard) -> dict[str, str]:
    """The outcome states the guard has, with the type of their "entered" log event: the optional
    ones (``Rejected``, ``extend_lease()`` states) only if it has them, so that templates without
    them are unchanged."""
    states = {**OUTCOME_STATES, "Body": guard.body_entered}
    if guard.config.rejects_completed:
        states["Rejected"] = "FailStateEntered"
    else:
        states["Route"] = "ChoiceStateEntered"  # entered only from a Replay without a result: not replays
    states.update(dict.fromkeys(guard.extend_states, "TaskStateEntered"))
    return states


# CloudWatch Logs' longest filter pattern ("CloudWatch Logs quotas": 1,024 characters; cfn-lint E3033).
MAX_FILTER_PATTERN = 1024


def filter_patterns(guard: IdempotencyGuard) -> list[str]:
    """The filter patterns that match the entries of the guard's outcome states: their names grouped by
    the type of their "entered" event, in as few patterns of at most ``MAX_FILTER_PATTERN`` characters as
    they fit."""
    patterns: list[dict[str, list[str]]] = [{}]
    for state, event in outcome_states(guard).items():
        name = guard.state_name(state)
        grown = {**patterns[-1], event: [*patterns[-1].get(event, []), name]}
        if patterns[-1] and len(pattern_of(grown)) > MAX_FILTER_PATTERN:
            patterns.append({event: [name]})
        else:
            patterns[-1] = grown
    return [pattern_of(pattern) for pattern in patterns]


def pattern_of(names_by_event: dict[str, list[str]]) -> str:
    """The filter pattern that matches the entries of the states named, by the type of their "entered" event."""
    return f"{{ {' || '.join(_group(event, names) for event, names in names_by_event.items())} }}"


def _group(event: str, names: list[str]) -> str:
    matches = " || ".join(f'$.details.name = "{name}"' for name in names)
    return f'($.type = "{event}" && ({matches}))' if len(names) > 1 else f'($.type = "{event}" && {matches})'


def _metric_filter(scope: Construct, guard: IdempotencyGuard, log_group: logs.ILogGroup) -> None:
    """The filters "Outcomes" (and "Outcomes2", ... if the guard has more outcome states than one pattern
    holds), made once the guard's graph is rendered, so that its ``extend_lease()`` states are known."""
    if scope.node.try_find_child("Outcomes") is not None:
        return
    for index, pattern in enumerate(filter_patterns(guard), start=1):
        entries_filter(scope, "Outcomes" if index == 1 else f"Outcomes{index}", log_group, guard.namespace, pattern)


def entries_filter(scope: Construct, filter_id: str, log_group: logs.ILogGroup, namespace: str, pattern: str) -> None:
    """The metric filter ``filter_id`` on ``log_group``: the entries of the states ``pattern`` matches, counted
    by state name in the namespace's ``StatesEntered``."""
    logs.MetricFilter(
        scope,
        filter_id,
        log_group=log_group,
        filter_pattern=logs.FilterPattern.literal(pattern),
        metric_namespace=schema.metrics_namespace(namespace),
        metric_name=schema.STATES_ENTERED_METRIC,
        metric_value="1",
        dimensions={"State": "$.details.name"},
    )
