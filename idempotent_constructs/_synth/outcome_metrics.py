"""Outcome metrics: the outcome states a guard's executions entered, counted from the execution log of the
state machine that holds it by one metric filter (created on first use, so a stack without metrics gets
no extra resource; more if the names overflow one filter pattern), by state name; no Lambda call. The
``metric_*`` methods (``Outcomes``) are an ``IdempotentStateMachine``'s, and a guard of your own's
(``IdempotencyGuard.outcome_metrics(log_group)``: ``GuardOutcomes``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_logs as logs
from constructs import Construct

from ..errors import IdempotencyConfigurationError
from ..lambda_src import schema
from .state_names import LOST


class CountedGuard(Protocol):
    """What the metrics read of a guard (an ``IdempotencyGuard``; a protocol, so that the guard may import
    this module)."""

    namespace: str
    prefix: str  # of its state names
    config: Any  # GuardConfig: rejects_completed, replay_marker, on_in_flight, keeps_for_redrive
    extend_states: list[str]  # the ids of its extend_lease() states

    @property
    def node(self) -> Any: ...

    @property
    def body_entered(self) -> str: ...  # the type of its body's "entered" log event

    def state_name(self, state: str) -> str: ...


# The states whose entries the outcome metrics count, with the type of their "entered" log event (Body's
# is the guard's ``body_entered``: a body that runs bare is a Task, Parallel or Map state). Its Fail states
# are counted besides, all of them by one clause (``fail_states``).
OUTCOME_STATES = {
    "Body": "ParallelStateEntered",
    "Replay": "MapStateEntered",
    "Backoff": "WaitStateEntered",
    "Takeover": "TaskStateEntered",
}
FAIL_ENTERED = "FailStateEntered"


def states_entered(
    scope: Construct,
    guard: CountedGuard,
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
    # Ids of the metric's own (a graph or an alarm may hold several of these expressions).
    ids = [f"{label[0].lower()}{label[1:]}{index}" for index in range(len(states) + len(minus))]
    label = props.pop("label", label)
    metrics = {
        ids[index]: cloudwatch.Metric(
            namespace=schema.metrics_namespace(guard.namespace),
            metric_name=schema.STATES_ENTERED_METRIC,
            dimensions_map={"State": guard.state_name(state)},
            statistic="Sum",
            **props,
        )
        for index, state in enumerate([*states, *minus])
    }
    if len(metrics) == 1:
        return metrics[ids[0]].with_(label=label)
    # A period in which one state was never entered has no data point for it: count it as 0.
    terms = [f"{'-' if index >= len(states) else '+'} FILL({name}, 0)" for index, name in enumerate(metrics)]
    return cloudwatch.MathExpression(
        expression=" ".join(terms).removeprefix("+ "),
        using_metrics=metrics,
        label=label,
        period=props.get("period"),
    )


def outcome_states(guard: CountedGuard) -> dict[str, str]:
    """The outcome states the guard has, with the type of their "entered" log event: the optional
    ones (``Rejected``, ``extend_lease()`` states) only if it has them, so that templates without
    them are unchanged."""
    states = {**OUTCOME_STATES, "Body": guard.body_entered}
    if not guard.config.rejects_completed:
        states["Route"] = "ChoiceStateEntered"  # entered only from a Replay without a result: not replays
    states.update(dict.fromkeys(guard.extend_states, "TaskStateEntered"))
    return states


def fail_states(guard: CountedGuard) -> str:
    """The name that matches every Fail state of the guard's (its outcomes ``KeyMissing``, ``PayloadMismatch``,
    ``Rejected``, ``InFlight``, ``LeaseLost`` and its ``extend_lease()`` states', ``ResultMissing``,
    ``Unreadable``, ``Failed``...): its prefix and a wildcard, which a filter pattern takes in a quoted JSON
    value (AWS's own example for CloudTrail alarms, "Creating CloudWatch alarms for CloudTrail events":
    ``$.errorCode = "AccessDenied*"``). One clause, however many Fail states a guard has, so that a pattern
    does not outgrow CloudWatch Logs' 1,024 characters as extend states add their ``LeaseLost``."""
    return f"{guard.prefix}*"


# CloudWatch Logs' longest filter pattern ("CloudWatch Logs quotas": 1,024 characters; cfn-lint E3033).
MAX_FILTER_PATTERN = 1024


def filter_patterns(guard: CountedGuard) -> list[str]:
    """The filter patterns that match the entries of the guard's outcome states: their names grouped by
    the type of their "entered" event, in as few patterns of at most ``MAX_FILTER_PATTERN`` characters as
    they fit."""
    patterns: list[dict[str, list[str]]] = [{}]
    named = [(guard.state_name(state), event) for state, event in outcome_states(guard).items()]
    for name, event in [*named, (fail_states(guard), FAIL_ENTERED)]:
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


def _metric_filter(scope: Construct, guard: CountedGuard, log_group: logs.ILogGroup) -> None:
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


class Outcomes:
    """The ``metric_*`` methods of whatever counts a guard's outcomes (``_outcomes``: the construct the metric
    filter joins, the guard, and the log group of the state machine that holds it, logging at level ALL)."""

    def _outcomes(self) -> tuple[Construct, CountedGuard, logs.ILogGroup]:
        raise NotImplementedError

    def countable(self) -> dict[str, Callable[..., cloudwatch.IMetric]]:
        """The ``metric_*`` methods that can count something for this guard, by their metric's label: the nine
        every guard has, ``ResultMissing`` where it replays, ``Rejected`` where it may reject and
        ``LeaseExtended`` where it has ``ExtendLease`` states (the rule of the states its filter matches,
        ``outcome_states``)."""
        _, guard, _ = self._outcomes()
        found = {
            "Executed": self.metric_executed,
            "Replayed": self.metric_replayed,
            "Waited": self.metric_waited,
            "TakenOver": self.metric_taken_over,
            "Mismatched": self.metric_mismatched,
            "KeyMissing": self.metric_key_missing,
            "InFlight": self.metric_in_flight,
            "LeaseLost": self.metric_lease_lost,
            "Failed": self.metric_failed,
        }
        if guard.config.rejects_completed:
            found["Rejected"] = self.metric_rejected
        else:
            found["ResultMissing"] = self.metric_result_missing
        if guard.extend_states:
            found["LeaseExtended"] = self.metric_lease_extended
        return found

    def metric_executed(self, **props: Any) -> cloudwatch.IMetric:
        """Runs of the body (first runs, runs after a release, takeovers)."""
        return self._entered("Executed", ["Body"], props)

    def metric_replayed(self, **props: Any) -> cloudwatch.IMetric:
        """Duplicates answered with the stored result: entries of Replay (which restores a result the result
        function keeps), less those of Route, which a run enters only from a Replay with no result to give,
        and of ResultMissing, where a restore found none."""
        _, guard, _ = self._outcomes()
        return self._entered(
            "Replayed", ["Replay"], props, minus=[] if guard.config.rejects_completed else ["Route", "ResultMissing"]
        )

    def metric_waited(self, **props: Any) -> cloudwatch.IMetric:
        """Duplicates that arrived while another execution held the key and waited for it."""
        return self._entered("Waited", ["Backoff"], props)

    def metric_taken_over(self, **props: Any) -> cloudwatch.IMetric:
        """Keys taken over from a holder whose lease lapsed (and whose execution ended, for Standard)."""
        return self._entered("TakenOver", ["Takeover"], props)

    def metric_mismatched(self, **props: Any) -> cloudwatch.IMetric:
        """Requests that reused a key with another payload (``Idempotency.PayloadMismatch``)."""
        return self._entered("Mismatched", ["PayloadMismatch"], props)

    def metric_key_missing(self, **props: Any) -> cloudwatch.IMetric:
        """Inputs without their key (``Idempotency.KeyMissing``)."""
        return self._entered("KeyMissing", ["KeyMissing"], props)

    def metric_rejected(self, **props: Any) -> cloudwatch.IMetric:
        """Duplicates after success failed with ``Idempotency.AlreadyCompleted`` (``on_completed=REJECT``)."""
        return self._entered("Rejected", ["Rejected"], props)

    def metric_in_flight(self, **props: Any) -> cloudwatch.IMetric:
        """Duplicates that failed with ``Idempotency.InFlight``: another execution held the key (at once with
        ``InFlightPolicy.FAIL``; after ``max_wait`` with ``WAIT``, a holder that outlasted the wait); and with
        ``Idempotency.AwaitingRedrive``: a failed execution keeps it for its redrive (``FailurePolicy.KEEP_FOR_REDRIVE``)."""
        _, guard, _ = self._outcomes()
        return self._entered("InFlight", ["InFlight", *(["AwaitingRedrive"] if guard.config.keeps_for_redrive else [])], props)

    def metric_lease_lost(self, **props: Any) -> cloudwatch.IMetric:
        """Runs that failed with ``Idempotency.LeaseLost``: their key was taken over after their lease lapsed,
        so another run did the work as well (at the end of the body, or at an ``ExtendLease`` state)."""
        _, guard, _ = self._outcomes()
        return self._entered("LeaseLost", ["LeaseLost", *(state + LOST for state in guard.extend_states)], props)

    def metric_result_missing(self, **props: Any) -> cloudwatch.IMetric:
        """Duplicates that failed with ``Idempotency.ResultMissing``: the record says the work completed, but
        its result is gone (``ResultMissing``) or unreadable (``Unreadable``)."""
        _, guard, _ = self._outcomes()
        return self._entered("ResultMissing", ["ResultMissing", *([] if guard.config.replay_marker else ["Unreadable"])], props)

    def metric_failed(self, **props: Any) -> cloudwatch.IMetric:
        """Runs whose body failed (or whose result could not be stored): the guard released the key, or
        recorded the failure (``FailurePolicy.CACHE``), and failed the run with the error."""
        return self._entered("Failed", ["Failed"], props)

    def metric_lease_extended(self, **props: Any) -> cloudwatch.IMetric:
        """Leases pushed forward by the definition's ``ExtendLease`` states."""
        scope, guard, _ = self._outcomes()
        if not guard.extend_states:
            raise IdempotencyConfigurationError(
                scope.node.path, ["metric_lease_extended: this guard's definition has no ExtendLease state"]
            )
        return self._entered("LeaseExtended", guard.extend_states, props)

    def _entered(
        self, label: str, states: list[str], props: dict[str, Any], minus: list[str] | None = None
    ) -> cloudwatch.IMetric:
        scope, guard, log_group = self._outcomes()
        return states_entered(scope, guard, log_group, label, states, props, minus=minus or [])


class GuardOutcomes(Outcomes):
    """The outcome metrics of a guard of your own (``IdempotencyGuard.outcome_metrics``): counted from the
    execution log of the state machine that holds it, which must log at level ALL (``sfn.LogLevel.ALL``;
    without execution data, which the metrics never read)."""

    def __init__(self, scope: Construct, guard: CountedGuard, log_group: logs.ILogGroup) -> None:
        """``scope``: the guard as a construct, which its metric filter joins."""
        self.scope, self.guard, self.log_group = scope, guard, log_group

    def _outcomes(self) -> tuple[Construct, CountedGuard, logs.ILogGroup]:
        return self.scope, self.guard, self.log_group
