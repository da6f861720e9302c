"""A guard's options: their defaults, their validation, and the figures derived from them."""

from __future__ import annotations

import re
from collections.abc import Sequence

from aws_cdk import Duration, Size, Token
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from .._synth.options import (
    BOOL,
    CHAINABLE,
    DURATION,
    ERROR_NAMES,
    TEXT,
    Kind,
    enum_kind,
    instance_of,
    key_fix,
    payload_fix,
)
from ..errors import Problems
from ..key import IdempotencyKey, namespace_problems
from ..lambda_src import schema
from ..payload import IdempotencyPayload
from ..policies import CompletedPolicy, FailurePolicy, InFlightPolicy, ResultStorage
from ..table import WORKFLOW_TABLE, IdempotencyTable
from .protocol import STATE_NAMES

DEFAULT_EXPIRES_AFTER = Duration.hours(24)
DEFAULT_LEASE = Duration.minutes(15)
DEFAULT_POLL_INTERVAL = Duration.seconds(1)
DEFAULT_MAX_WAIT = Duration.minutes(5)
MAX_POLL_DELAY_SECONDS = 30
MAX_POLLS = 100
# History events of one busy poll past its lease (the most expensive kind): the Parallel's retry,
# the branch's states and the GetItem and DescribeExecution tasks. Measured in the emulator.
EVENTS_PER_POLL = 20
MAX_STATE_NAME_LENGTH = 80
MAX_INLINE_THRESHOLD = Size.kibibytes(64)
# A Standard execution may run a year: a record in progress must not expire before its holder.
STANDARD_HOLD = Duration.days(366)
# A replay marker's field: a top-level field of the replayed output ("$.idempotency").
REPLAY_MARKER_FIELD = re.compile(r"\$\.([A-Za-z_][A-Za-z0-9_]*)")


# What each option shared by IdempotencyGuard and IdempotentStateMachine takes.
OPTIONS: dict[str, Kind] = {
    "table": WORKFLOW_TABLE,
    "key": instance_of(IdempotencyKey, key_fix),
    "payload": instance_of(IdempotencyPayload, payload_fix),
    "namespace": TEXT,
    "expires_after": DURATION,
    "lease": DURATION,
    "poll_interval": DURATION,
    "max_wait": DURATION,
    "on_in_flight": enum_kind(InFlightPolicy),
    "on_failure": enum_kind(FailurePolicy),
    "on_completed": enum_kind(CompletedPolicy),
    "replay_marker": TEXT,
    "cache_errors": ERROR_NAMES,
    "result_storage": instance_of(ResultStorage, lambda value: "ResultStorage.inline() or ResultStorage.large()"),
}
# IdempotencyGuard's own.
GUARD_OPTIONS: dict[str, Kind] = {
    **OPTIONS,
    "body": CHAINABLE,
    "state_name_prefix": TEXT,
    "owner_state_machine_name": TEXT,
    "once_per_execution": BOOL,
}


def poll_schedule(poll_interval: int, max_wait: int) -> tuple[int, int]:
    """``(max_attempts, max_delay)`` of the poll retrier: delays double from ``poll_interval`` up to
    ``max_delay`` and, with the first wait (the ``Backoff`` state), add up to ``max_wait`` at most,
    and to more than ``max_wait`` less one delay: a duplicate never waits longer than ``max_wait``,
    so that a schedule shorter than its execution's limit fits in it (``waiting_seconds``).

    ``max_delay`` is 30 s, or more for long waits, so that a waiter never polls more than
    ``MAX_POLLS`` times: its history stays below MAX_POLLS * EVENTS_PER_POLL events, far from
    Step Functions' 25,000, whatever ``max_wait`` is.
    """
    max_delay = max(poll_interval, min(MAX_POLL_DELAY_SECONDS, max_wait), -(-max_wait // (MAX_POLLS // 2)))
    waited, delay, attempts = poll_interval, poll_interval, 0
    while waited + delay <= max_wait:
        attempts += 1
        waited += delay
        delay = min(delay * 2, max_delay)
    return attempts, max_delay


def waiting_seconds(poll_interval: int, attempts: int, max_delay: int) -> int:
    """How long a duplicate waits in all before ``Idempotency.InFlight``: the ``Backoff`` state's
    ``poll_interval`` and the poll retrier's delays (``IntervalSeconds``, doubled up to ``MaxDelaySeconds``,
    ``MaxAttempts`` times), as Step Functions runs them."""
    return poll_interval + sum(int(min(poll_interval * 2**attempt, max_delay)) for attempt in range(attempts))


class GuardConfig:
    """Every option of one guard with its default applied, checked once (``validate``)."""

    def __init__(
        self,
        guard: Construct,
        *,
        table: IdempotencyTable | dynamodb.ITable,
        key: IdempotencyKey | None,
        payload: IdempotencyPayload | None,
        namespace: str | None,
        expires_after: Duration | None,
        lease: Duration | None,
        poll_interval: Duration | None,
        max_wait: Duration | None,
        on_in_flight: InFlightPolicy | None,
        on_failure: FailurePolicy | None,
        on_completed: CompletedPolicy | None,
        replay_marker: str | None,
        cache_errors: Sequence[str] | None,
        state_name_prefix: str | None,
        owner_state_machine_name: str | None,
        result_storage: ResultStorage | None,
        once_per_execution: bool = False,
    ) -> None:
        self.guard = guard
        self.table: dynamodb.ITable = table.table if isinstance(table, IdempotencyTable) else table
        self.key = key or IdempotencyKey.whole_input()
        self.payload = payload or IdempotencyPayload.whole_input()
        self.namespace = namespace if namespace is not None else guard.node.path
        self.namespace_given = namespace is not None
        self.expires_after = expires_after or DEFAULT_EXPIRES_AFTER
        self.lease = lease or DEFAULT_LEASE
        self.poll_interval = poll_interval or DEFAULT_POLL_INTERVAL
        self.max_wait = max_wait or DEFAULT_MAX_WAIT
        self.on_in_flight = on_in_flight or InFlightPolicy.WAIT
        self.on_failure = on_failure or FailurePolicy.RELEASE
        self.on_completed = on_completed or CompletedPolicy.REPLAY
        self.replay_marker = replay_marker
        self.cache_errors = list(cache_errors) if cache_errors is not None else None
        self.prefix = state_name_prefix if state_name_prefix is not None else f"{guard.node.id}."
        self.owner_state_machine_name = owner_state_machine_name
        self.result_storage = result_storage or ResultStorage.inline()
        self.once_per_execution = once_per_execution

    @property
    def native(self) -> bool:
        """Whether the states compute the key and the payload digest themselves (a JMESPath selection
        is computed by the key function on every run)."""
        return schema.KIND_JMESPATH not in (self.key.kind, self.payload.kind)

    @property
    def rejects_completed(self) -> bool:
        return self.on_completed is CompletedPolicy.REJECT

    def name(self, state: str) -> str:
        """The name of one of the guard's states in the definition."""
        return f"{self.prefix}{state}"

    @property
    def hold_seconds(self) -> int:
        """How long a record in progress is kept: with the owner check, as long as a Standard execution
        may run, so that TTL never deletes the record of a holder that still runs."""
        if self.owner_state_machine_name is not None:
            return int(STANDARD_HOLD.to_seconds())
        return int(self.lease.to_seconds() + self.expires_after.to_seconds())

    @property
    def native_limit(self) -> int:
        """The largest result (bytes of JSON) the native Complete writes into the record itself."""
        if self.result_storage.is_large:
            return int(self.result_storage.inline_threshold.to_bytes())
        return schema.RECORD_DATA_LIMIT

    def _replay_marker_problems(self) -> list[str]:
        marker = self.replay_marker
        if marker is None:
            return []
        found = []
        if not isinstance(marker, str) or not REPLAY_MARKER_FIELD.fullmatch(marker):
            found.append(f"replay_marker: {marker!r} is not a top-level field path such as '$.idempotency'")
        if self.rejects_completed:
            found.append("replay_marker: with on_completed=CompletedPolicy.REJECT nothing is replayed; drop replay_marker")
        return found

    def validate(self) -> None:
        problems = Problems(self.guard)
        problems.extend(self._replay_marker_problems())
        if self.rejects_completed and self.result_storage.is_large:
            problems.add(
                "result_storage: ResultStorage.large() keeps results for replays, which on_completed=CompletedPolicy.REJECT "
                "never makes; drop result_storage"
            )
        problems.extend(self.key.problems())
        problems.extend(self.payload.problems())
        if self.cache_errors is not None:
            if self.on_failure is not FailurePolicy.CACHE:
                problems.add(
                    f"cache_errors: {self.cache_errors!r} is given but on_failure is {self.on_failure.name}; "
                    "pass on_failure=FailurePolicy.CACHE or drop cache_errors"
                )
            if not self.cache_errors or any(not e or e.startswith("States.") for e in self.cache_errors):
                problems.add(
                    f"cache_errors: {self.cache_errors!r} must list error names, none empty and none starting "
                    f"with 'States.' (those arrive as {schema.BODY_FAILED!r}; list that name instead)"
                )
        problems.extend(
            problem + ("" if self.namespace_given else " (this is the default, the construct path: pass namespace=...)")
            for problem in namespace_problems(self.namespace)
        )
        problems.extend(self.result_storage.problems())
        threshold = self.result_storage.inline_threshold
        if (
            isinstance(threshold, Size)
            and not Token.is_unresolved(threshold.to_bytes())
            and not (1024 <= threshold.to_bytes() <= MAX_INLINE_THRESHOLD.to_bytes())
        ):
            problems.add(
                f"result_storage: an inline_threshold of {threshold.to_bytes()} bytes is outside 1 KiB to 64 KiB "
                "(a result in the record travels through the state payload on replay); use Size.kibibytes(n) with 1 <= n <= 64"
            )
        longest = self.name(max(STATE_NAMES, key=len))
        if len(longest) > MAX_STATE_NAME_LENGTH:
            problems.add(
                f"state_name_prefix: {self.prefix!r} makes state names such as {longest!r} ({len(longest)} characters) "
                f"longer than Step Functions' {MAX_STATE_NAME_LENGTH}; use a shorter construct id or state_name_prefix"
            )
        for option, value in (
            ("expires_after", self.expires_after),
            ("lease", self.lease),
            ("poll_interval", self.poll_interval),
            ("max_wait", self.max_wait),
        ):
            millis = value.to_milliseconds()
            if millis < 1000 or millis % 1000:
                problems.add(
                    f"{option}: {value.to_human_string()} is not a whole number of seconds of at least 1; "
                    f"use Duration.seconds(n) with n >= 1"
                )
        problems.raise_if_any()
