"""Settings that deploy but contradict each other, warned about (CDK Annotations) with the fix.

Validation (``config``) refuses what cannot work; these work, only not as the user meant: a poll
interval longer than the whole wait, a lease that lapses while the body may still be running, a
JSONata key or payload whose regular expression AWS's JVM engine may overflow on a long input.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import jsii
from aws_cdk import Annotations, Aspects, Duration, IAspect
from aws_cdk import aws_stepfunctions as sfn
from constructs import IConstruct, IValidation

from .._jsonata import java_regex
from .._readers.asl import all_states
from .._synth import definition, read_once
from .._synth.quotas import EXPRESS_MAX_SECONDS
from ..lambda_src import schema
from ..policies import InFlightPolicy

if TYPE_CHECKING:
    from . import IdempotencyGuard
    from .finish import Wiring

POLL_INTERVAL_ABOVE_MAX_WAIT = "idempotent-constructs:poll-interval-above-max-wait"
LEASE_SHORTER_THAN_BODY = "idempotent-constructs:lease-shorter-than-body"
REGEX_RECURSION = "idempotent-constructs:regex-recursion"
LONGER_THAN_EXPRESS = "idempotent-constructs:longer-than-express"


def advise(guard: IdempotencyGuard, body: Wiring) -> None:
    """Warn about ``guard``'s contradictory settings: the poll now, the lease at synth, once every
    ``ExtendLease`` of the body is known (``extend_lease()`` may make one after the guard)."""
    config = guard.config
    poll, wait = config.poll_interval, config.max_wait
    if config.on_in_flight is InFlightPolicy.WAIT and read_once.seconds(poll) > read_once.seconds(wait):
        Annotations.of(guard).add_warning_v2(
            POLL_INTERVAL_ABOVE_MAX_WAIT,
            f"poll_interval ({poll.to_human_string()}) is longer than max_wait ({wait.to_human_string()}): a duplicate "
            f"waits {poll.to_human_string()} for its first and only poll, then fails with Idempotency.InFlight; "
            f"make poll_interval shorter than max_wait (the default is 1 second) or max_wait longer",
        )
    if config.owner_state_machine_name is None:
        # With the owner check, a holder that still runs is never taken over, whatever its lease.
        Aspects.of(guard).add(_LeaseAgainstBody(guard, body))
    if config.defaulted and not config.once_per_execution:
        # Only a default can be fitted, and an IdempotentStateMachine's guard (once_per_execution) has the defaults
        # its workflow chose for its run. (An aspect is called back for every construct under the guard: none else.)
        Aspects.of(guard).add(_FitExpress(guard))
    if not config.whole_workflow:  # an IdempotentStateMachine checks its lease against its own type (workflow_settings)
        guard.node.add_validation(_WithinExpress(guard))
    for option, selection in (("key", config.key), ("payload", config.payload)):
        if selection.kind == schema.KIND_JSONATA and not read_once.unresolved(selection.expression):
            _regex_recursion(guard, option, selection.expression)


def _regex_recursion(guard: IdempotencyGuard, option: str, expression: str) -> None:
    """Warn about each regular expression of ``expression`` that java.util.regex recurses through once a
    repetition (``_jsonata.java_regex``): AWS evaluates JSONata on the JVM."""
    for pattern in dict.fromkeys(java_regex.expression_patterns(expression)):
        for problem in java_regex.nested_problems(pattern):
            Annotations.of(guard).add_warning_v2(
                REGEX_RECURSION,
                f"{option}: in the JSONata expression {expression!r}, /{pattern}/ may overflow the stack of AWS's JSONata "
                f"engine, which runs on the JVM, on a long input ({problem}), and the state then fails with "
                'States.QueryEvaluationError; repeat a single character class instead ([^"]*), or a group at most '
                f"{java_regex.SMALL} times (docs/explanation/canonical-key.md, section 7)",
            )


def longest_timeout(states: list[sfn.State]) -> tuple[str, int] | None:
    """``(state name, seconds)`` of the longest fixed ``TimeoutSeconds`` among the body's ``states`` (and
    those of their branches once rendered); ``None`` when no state has one."""
    found = [
        (name, seconds)
        for state in states
        for name, seconds in _timeouts(state.state_id, state.to_state_json())
        if isinstance(seconds, int) and not read_once.unresolved(seconds)
    ]
    return max(found, key=lambda timeout: timeout[1], default=None)


def _timeouts(name: str, state: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    """``(name, TimeoutSeconds)`` of the state and of every state inside it that has one."""
    return (
        (inner, found["TimeoutSeconds"])
        for inner, _, found in all_states({"States": {name: state}}, "")
        if "TimeoutSeconds" in found
    )


@jsii.implements(IAspect)
class _LeaseAgainstBody:
    def __init__(self, guard: IdempotencyGuard, body: Wiring) -> None:
        self.guard = guard
        self.body = body

    def visit(self, node: IConstruct) -> None:
        if node is not self.guard or self.guard.extend_states:
            return
        longest = longest_timeout(self.body.states)
        lease = self.guard.config.lease
        if longest is None or lease.to_seconds() >= longest[1]:
            return
        name, seconds = longest
        Annotations.of(self.guard).add_warning_v2(
            LEASE_SHORTER_THAN_BODY,
            f"lease ({lease.to_human_string()}) is shorter than the timeout of the body's state {name!r} "
            f"({Duration.seconds(seconds).to_human_string()}): while it still runs, a duplicate arriving after the lease "
            f"may take the key over and run the body a second time; make lease at least Duration.seconds({seconds}), "
            "place an ExtendLease in the body, or run the guard with the owner check (owner_state_machine_name)",
        )


@jsii.implements(IAspect)
class _FitExpress:
    """At synth, once the state machine that holds the guard is known (``machines_holding``):
    in an Express one, the lease and the wait left to their defaults fit its 5-minute run
    (``GuardConfig.fit_express``), before the definition is rendered and checked."""

    def __init__(self, guard: IdempotencyGuard) -> None:
        self.guard = guard

    def visit(self, node: IConstruct) -> None:
        if node is self.guard and any(machine.state_machine_type == "EXPRESS" for machine in machines_holding(self.guard)):
            self.guard.config.fit_express()


def machines_holding(guard: IdempotencyGuard) -> list[sfn.CfnStateMachine]:
    """The state machines of the app whose definition holds ``guard``: those whose definition meets one of
    the guard's own numbers (``AtSynth``). Another guard of the same state names (the same variable) in
    another state machine is not mistaken for it. Call it at synth."""
    return definition.machines_meeting(guard, guard.owns)


@jsii.implements(IValidation)
class _WithinExpress:
    """Warns where the guard is in an Express state machine of the app (``machines_holding``) and the lease
    it was given outlasts the run: a 15-minute lease keeps a crashed holder's key 10 minutes after its
    execution ended. (A lease left to its default fits the run: ``_FitExpress``. A wait given that outlasts
    the run is the quota check's: ``idempotent-constructs::waiting-schedule``.)"""

    def __init__(self, guard: IdempotencyGuard) -> None:
        self.guard = guard

    def validate(self) -> list[str]:
        lease = self.guard.config.lease
        if lease.to_seconds() <= EXPRESS_MAX_SECONDS:
            return []
        for machine in machines_holding(self.guard):
            if machine.state_machine_type == "EXPRESS":
                Annotations.of(self.guard).add_warning_v2(
                    LONGER_THAN_EXPRESS,
                    f"the guard is in the Express state machine {machine.node.path}, whose executions run 5 minutes at "
                    f"most, and its lease ({lease.to_human_string()}) outlasts the run: a crashed holder's key stays "
                    "held after its execution ended, until the lease lapses; set lease=Duration.minutes(5)",
                )
                break
        return []
