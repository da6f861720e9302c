"""A guard's options: the model of them (``GUARD_MODEL``: what each takes, what it does, its default,
and which of the guard, the workflow and ``GuardedState`` take it), their defaults applied and their
values checked (``GuardConfig``), and the figures derived from them."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping
from typing import Any

import jsii
from aws_cdk import Duration, IResolvable, IResolveContext, Size, Token
from aws_cdk import aws_dynamodb as dynamodb

from .._synth.options import (
    BOOL,
    CHAINABLE,
    DURATION,
    ERROR_NAMES,
    TEXT,
    Kind,
    Option,
    Options,
    enum_kind,
    instance_of,
    key_fix,
    payload_fix,
)
from .._synth.quotas import EXPRESS_MAX_SECONDS, WAIT_SHARE
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
EXPRESS_MAX_DURATION = Duration.seconds(EXPRESS_MAX_SECONDS)
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


# The constructs that take the guard's options: the guard, the workflow (its guard is the whole workflow),
# GuardedState (the guard of one state of a document) and IdempotentBatch (a guard on each record of a batch).
GUARD = "IdempotencyGuard"
WORKFLOW = "IdempotentStateMachine"
GUARDED_STATE = "GuardedState"
BATCH = "IdempotentBatch"
_ALL = (GUARD, WORKFLOW, GUARDED_STATE, BATCH)

# Every option of a guard, once: what it takes, what it does, its default, and which of the guard, the
# workflow and GuardedState take it. Their signatures' documentation (Options.documented), their type
# checks (Validation) and the site's reference (docs/reference/options.md) are made from it; the
# defaults are applied by GuardConfig.
GUARD_MODEL = Options(
    Option(
        "table",
        WORKFLOW_TABLE,
        "where the records live: an ``IdempotencyTable``, or an existing table.",
        None,
        (GUARD, WORKFLOW, BATCH),
    ),
    Option("body", CHAINABLE, "the chain to protect.", None, (GUARD, BATCH)),
    Option(
        "key",
        instance_of(IdempotencyKey, key_fix),
        "how the key is derived from the input.",
        "``IdempotencyKey.whole_input()``.",
        _ALL,
        {BATCH: "the record's id, as its ``source`` names it: ``$.messageId`` for SQS, ``$.eventID`` for a stream."},
    ),
    Option(
        "payload",
        instance_of(IdempotencyPayload, payload_fix),
        "the part of the input a duplicate must repeat, or else fail with ``Idempotency.PayloadMismatch``: select "
        'the message, not an envelope AWS changes on redelivery (``IdempotencyPayload.from_paths("$[0].body")`` '
        "for SQS through a pipe), or ``IdempotencyPayload.none()``.",
        "``IdempotencyPayload.whole_input()``.",
        _ALL,
        {BATCH: "the record's message: ``$.body`` for SQS, ``$.data`` for Kinesis, ``$.dynamodb.NewImage`` for DynamoDB."},
    ),
    Option(
        "namespace",
        TEXT,
        "prefix of the record ids.",
        "the construct path, which is stable across deploys and differs between guards, workflows and stacks.",
        _ALL,
        {
            GUARDED_STATE: "the namespace of the workflow (``IdempotentStateMachine``) or the construct path "
            "(``AslFragment``), ``/``, and the state's name (its characters that a namespace may not hold written ``_``)."
        },
    ),
    Option(
        "expires_after",
        DURATION,
        "how long a finished record is kept, counted from when its run finished; after that a duplicate runs the work again.",
        "24 hours.",
        _ALL,
    ),
    Option(
        "lease",
        DURATION,
        "how long a holder is trusted to finish before a duplicate may take the key over.",
        "15 minutes.",
        _ALL,
        {
            WORKFLOW: "15 minutes (5 minutes, the longest an Express execution runs, for Express).",
            GUARD: "15 minutes; 5 minutes where synth finds the guard in an Express state machine, whose run lasts 5 "
            "minutes at most.",
            GUARDED_STATE: "15 minutes (5 minutes in an Express workflow).",
            BATCH: "5 minutes, the longest an Express execution runs.",
        },
    ),
    Option(
        "poll_interval",
        DURATION,
        "first delay between polls of a duplicate that waits; delays double up to 30 seconds.",
        "1 second.",
        _ALL,
    ),
    Option(
        "max_wait",
        DURATION,
        "how long a duplicate waits for the holder, at most, before failing with ``Idempotency.InFlight`` (its "
        "doubling delays stop short of it by less than one delay: 272 s of 5 minutes).",
        "5 minutes.",
        _ALL,
        {
            WORKFLOW: "5 minutes, or 80% of the longest run if that is shorter (4 minutes for Express), so that a "
            "waiting duplicate ends in ``Idempotency.InFlight``, not ``States.Timeout``.",
            GUARD: "5 minutes; 4 minutes where synth finds the guard in an Express state machine, so that a waiting "
            "duplicate ends in ``Idempotency.InFlight``, not ``States.Timeout``.",
            GUARDED_STATE: "the workflow's (5 minutes, or 80% of its longest run if that is shorter).",
            BATCH: "4 minutes, 80% of an Express execution's longest run, so that a waiting duplicate ends in "
            "``Idempotency.InFlight``, not ``States.Timeout``.",
        },
    ),
    Option(
        "on_in_flight",
        enum_kind(InFlightPolicy),
        "``WAIT`` or ``FAIL`` while another execution holds the key.",
        "``InFlightPolicy.WAIT``.",
        _ALL,
    ),
    Option(
        "on_failure",
        enum_kind(FailurePolicy),
        "``RELEASE`` the key or ``CACHE`` the failure when the work fails.",
        "``FailurePolicy.RELEASE``.",
        _ALL,
    ),
    Option(
        "on_completed",
        enum_kind(CompletedPolicy),
        "``REPLAY`` the stored result to a duplicate after success, or ``REJECT`` it with ``Idempotency.AlreadyCompleted``.",
        "``CompletedPolicy.REPLAY``.",
        _ALL,
    ),
    Option(
        "replay_marker",
        TEXT,
        'a top-level field, such as ``"$.idempotency"``, under which a replayed object output gets '
        '``{"replayed": true, "record_id", "completed_at"}``.',
        "none, a replay outputs exactly what the work output.",
        _ALL,
    ),
    Option(
        "cache_errors",
        ERROR_NAMES,
        "with ``CACHE``, the error names to remember; any other error releases the key.",
        "every error is remembered.",
        _ALL,
    ),
    Option(
        "state_name_prefix",
        TEXT,
        "prefix of every generated state name (80 characters at most, with the longest state's name).",
        '``"{construct_id}."``.',
        (GUARD, GUARDED_STATE, BATCH),
        {GUARDED_STATE: '``"{state name}."`` (``ChargePayment.Acquire``); pass a shorter one for a long state name.'},
    ),
    Option(
        "owner_state_machine_name",
        TEXT,
        "the name of the Standard state machine this guard runs in. When given, a duplicate that finds a lapsed "
        "lease asks Step Functions whether the holder's execution still runs (``states:DescribeExecution`` on "
        "that state machine's executions, granted automatically) and never takes over a running holder.",
        "none; a lapsed lease is taken over. ``IdempotentStateMachine`` sets it for Standard workflows.",
        (GUARD,),
    ),
    Option(
        "result_storage",
        instance_of(ResultStorage, lambda value: "ResultStorage.inline() or ResultStorage.large()"),
        "how results are kept for replays.",
        "``ResultStorage.inline()``: the result in the record, as JSON written with no Lambda call when it is at "
        "most 160 KiB once escaped as a JSON string and JSONata's ``$string`` writes it exactly, else through the "
        "stack's result function, as JSON or gzip-compressed (``Idempotency.ResultTooLarge`` past 300 KB "
        "compressed). ``ResultStorage.large()`` adds S3, for results up to Step Functions' 256 KiB payload limit.",
        _ALL,
    ),
    Option(
        "once_per_execution",
        BOOL,
        "whether this guard runs at most once in an execution (it is not in a Map, a loop or a state that runs "
        "again). Then a record in progress that this very execution holds can only be its own (an ``Acquire`` "
        "applied by DynamoDB but reported failed and retried), which the guard takes over at once; it needs no "
        "``Begin`` state, which otherwise draws the owner token by which a run knows its own record. Its lease and "
        "wait are written as given (or their defaults), not fitted at synth to an Express run that holds it.",
        "``False``. ``IdempotentStateMachine`` sets it: its guard is the whole workflow.",
        (GUARD,),
    ),
)
# What each option shared by IdempotencyGuard and IdempotentStateMachine takes.
OPTIONS: dict[str, Kind] = GUARD_MODEL.kinds(WORKFLOW)
# IdempotencyGuard's own.
GUARD_OPTIONS: dict[str, Kind] = GUARD_MODEL.kinds(GUARD)


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
    """Every option of one guard (``values``, by name; one left out or ``None`` takes its default), the
    guard at ``path`` with the construct id ``construct_id``, and what is wrong with their values
    (``problems``)."""

    def __init__(self, path: str, construct_id: str, values: Mapping[str, Any]) -> None:
        table = values["table"]
        self.table: dynamodb.ITable = table.table if isinstance(table, IdempotencyTable) else table
        self.key: IdempotencyKey = values.get("key") or IdempotencyKey.whole_input()
        self.payload: IdempotencyPayload = values.get("payload") or IdempotencyPayload.whole_input()
        namespace = values.get("namespace")
        self.namespace: str = namespace if namespace is not None else path
        self.namespace_given = namespace is not None
        self.expires_after: Duration = values.get("expires_after") or DEFAULT_EXPIRES_AFTER
        self.lease: Duration = values.get("lease") or DEFAULT_LEASE
        self.poll_interval: Duration = values.get("poll_interval") or DEFAULT_POLL_INTERVAL
        self.max_wait: Duration = values.get("max_wait") or DEFAULT_MAX_WAIT
        # The defaults a guard fits to an Express run once synth finds it in one (fit_express).
        self.defaulted = {name for name in ("lease", "max_wait") if values.get(name) is None}
        self.on_in_flight: InFlightPolicy = values.get("on_in_flight") or InFlightPolicy.WAIT
        self.on_failure: FailurePolicy = values.get("on_failure") or FailurePolicy.RELEASE
        self.on_completed: CompletedPolicy = values.get("on_completed") or CompletedPolicy.REPLAY
        self.replay_marker: str | None = values.get("replay_marker")
        cache_errors = values.get("cache_errors")
        self.cache_errors: list[str] | None = list(cache_errors) if cache_errors is not None else None
        prefix = values.get("state_name_prefix")
        self.prefix: str = prefix if prefix is not None else f"{construct_id}."
        self.owner_state_machine_name: str | None = values.get("owner_state_machine_name")
        self.result_storage: ResultStorage = values.get("result_storage") or ResultStorage.inline()
        self.once_per_execution = bool(values.get("once_per_execution"))

    def fit_express(self) -> None:
        """Fit the lease and the wait left to their defaults to an Express run, which lasts 5 minutes at most:
        a lease of 5 minutes (a crashed holder's key is free once its execution is over) and a wait of 4
        (a waiting duplicate ends in ``Idempotency.InFlight``, not ``States.Timeout``). Called at synth, once
        the state machine that holds the guard is known; the definition reads them then (``AtSynth``)."""
        if "lease" in self.defaulted:
            self.lease = EXPRESS_MAX_DURATION
        if "max_wait" in self.defaulted:
            self.max_wait = bounded_max_wait(EXPRESS_MAX_DURATION)

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

    def problems(self, wrong: Collection[str] = ()) -> list[str]:
        """What is wrong with the values, as messages that name the fix. The options in ``wrong`` (of the
        wrong type, given here as ``None``) are not checked, nor read by a check of another option."""
        problems = self._replay_marker_problems()
        if self.rejects_completed and self.result_storage.is_large:
            problems.append(
                "result_storage: ResultStorage.large() keeps results for replays, which on_completed=CompletedPolicy.REJECT "
                "never makes; drop result_storage"
            )
        problems.extend(self.key.problems())
        problems.extend(self.payload.problems())
        if self.cache_errors is not None:
            if self.on_failure is not FailurePolicy.CACHE and "on_failure" not in wrong:
                problems.append(
                    f"cache_errors: {self.cache_errors!r} is given but on_failure is {self.on_failure.name}; "
                    "pass on_failure=FailurePolicy.CACHE or drop cache_errors"
                )
            if not self.cache_errors or any(not e or e.startswith("States.") for e in self.cache_errors):
                problems.append(
                    f"cache_errors: {self.cache_errors!r} must list error names, none empty and none starting "
                    f"with 'States.' (those arrive as {schema.BODY_FAILED!r}; list that name instead)"
                )
        if "namespace" not in wrong:
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
            problems.append(
                f"result_storage: an inline_threshold of {threshold.to_bytes()} bytes is outside 1 KiB to 64 KiB "
                "(a result in the record travels through the state payload on replay); use Size.kibibytes(n) with 1 <= n <= 64"
            )
        longest = self.name(max(STATE_NAMES, key=len))
        if ('"' in self.prefix or "\\" in self.prefix) and "state_name_prefix" not in wrong:
            problems.append(
                f"state_name_prefix: {self.prefix!r} holds a quote or a backslash, which the filter pattern of the outcome "
                'metrics names each state in ("$.details.name = ..."), so CloudWatch Logs would refuse it at deploy; '
                "use a construct id or state_name_prefix without them"
            )
        if len(longest) > MAX_STATE_NAME_LENGTH and "state_name_prefix" not in wrong:
            problems.append(
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
                problems.append(
                    f"{option}: {value.to_human_string()} is not a whole number of seconds of at least 1; "
                    f"use Duration.seconds(n) with n >= 1"
                )
        return problems


def bounded_max_wait(longest_run: Duration) -> Duration:
    """The default ``max_wait`` of an execution that may run at most ``longest_run`` (an Express one, or
    one with a timeout): 5 minutes, or less, so that the waiting schedule fits the run with margin."""
    share = int(longest_run.to_seconds() * WAIT_SHARE)
    return Duration.seconds(max(1, min(share, int(DEFAULT_MAX_WAIT.to_seconds()))))


@jsii.implements(IResolvable)
class AtSynth:
    """A number the definition reads when it is rendered at synth, not when the state is made: one that
    follows a default ``GuardConfig.fit_express`` may change. A token of ``config``'s (which tells a
    definition that holds the guard: ``AtSynth.of``), rendered as the number."""

    def __init__(self, config: GuardConfig, produce: Callable[[], int], text: bool) -> None:
        self.config, self._produce, self._text = config, produce, text

    @property
    def creation_stack(self) -> list[str]:
        return []

    def resolve(self, context: IResolveContext) -> Any:
        return str(self._produce()) if self._text else self._produce()

    def to_string(self) -> str:
        return Token.as_string(self)

    @staticmethod
    def number(config: GuardConfig, produce: Callable[[], int]) -> float:
        """Where the definition holds a number (a retrier's ``MaxAttempts``)."""
        if config.once_per_execution:  # an IdempotentStateMachine's guard: the workflow chose for its run
            return produce()
        return float(Token.as_number(AtSynth(config, produce, text=False)))

    @staticmethod
    def text(config: GuardConfig, produce: Callable[[], int]) -> str:
        """Where the definition writes the number in a text (a JSONata expression)."""
        if config.once_per_execution:  # its definition's text is shared with the workflows of its options
            return str(produce())
        return str(Token.as_string(AtSynth(config, produce, text=True)))
