"""A guard's options resolved: their defaults applied and their values checked (``GuardConfig``), and the
figures derived from them (the poll schedule, the bounded wait, the numbers read at synth: ``AtSynth``).
What each option takes and documents is the model, ``guard_options.GUARD_MODEL``; this module may import
the quotas and the classes of the values, nothing of the guard's states."""

from __future__ import annotations

import re
import weakref
from collections.abc import Callable, Collection, Mapping
from typing import Any, NamedTuple, Protocol

import jsii
from aws_cdk import Duration, IResolvable, IResolveContext, Size, Token
from aws_cdk import aws_dynamodb as dynamodb

from .._synth import read_once
from .._synth.quotas import EXPRESS_MAX_SECONDS, WAIT_SHARE
from ..key import IdempotencyKey, namespace_problems
from ..lambda_src import schema
from ..payload import IdempotencyPayload
from ..policies import CompletedPolicy, FailurePolicy, InFlightPolicy, ResultStorage
from ..table import IdempotencyTable
from .protocol import STATE_NAMES

DEFAULT_EXPIRES_AFTER = Duration.hours(24)
DEFAULT_LEASE = Duration.minutes(15)
DEFAULT_POLL_INTERVAL = Duration.seconds(1)
DEFAULT_MAX_WAIT = Duration.minutes(5)
EXPRESS_MAX_DURATION = Duration.seconds(EXPRESS_MAX_SECONDS)
# The workflows (IdempotentStateMachine) whose guard of the whole is being made in them: its failure is the
# execution's, so only it may leave that failure to the execution (FailurePolicy.RELEASE_WHEN_EXECUTION_FAILS).
WHOLE_WORKFLOWS: weakref.WeakSet[Any] = weakref.WeakSet()
# The policies that leave the chain's failure to the execution (the chain runs bare, with no Catch of the guard's).
EXECUTION_POLICIES = (FailurePolicy.RELEASE_WHEN_EXECUTION_FAILS, FailurePolicy.KEEP_FOR_REDRIVE)
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


class PollSchedule(NamedTuple):
    """The poll loop of a duplicate that waits: its retrier's ``attempts`` and ``max_delay``, and the
    ``deadline`` (seconds after its first wait began) past which a poll that finds the holder busy gives up."""

    attempts: int
    max_delay: int
    deadline: int


def poll_schedule(poll_interval: int, max_wait: int) -> PollSchedule:
    """Delays double from ``poll_interval`` up to ``max_delay``, each drawn at random up to that bound
    (the retrier's ``JitterStrategy: FULL``), so that duplicates which arrive together do not poll in
    lockstep. A poll that finds the holder busy past ``deadline`` gives up (``Idempotency.InFlight``),
    and one before it waits at most ``max_delay`` more: a duplicate never waits longer than
    ``max_wait``, and gives up at the earliest ``max_delay`` before it (``waiting_seconds``).

    ``max_delay`` is 30 s, less for waits under two minutes, more for long ones, so that a waiter
    polls about ``MAX_POLLS / 2`` times at most on average. ``attempts`` is four times the polls that
    fit before the deadline if every delay were its bound, and eight more: only draws far below their
    bounds spend them first (none of 5,000 simulated waits a schedule in ``tests/guard/test_config.py``).
    It never passes ``MAX_POLLS``: a waiter's history stays below MAX_POLLS * EVENTS_PER_POLL events,
    far from Step Functions' 25,000, whatever ``max_wait`` is.
    """
    max_delay = max(poll_interval, min(MAX_POLL_DELAY_SECONDS, max_wait // 4), -(-4 * max_wait // MAX_POLLS))
    deadline = max(0, max_wait - max_delay)
    waited, delay, full = poll_interval, poll_interval, 0
    while waited < deadline:
        full += 1
        waited += delay
        delay = min(delay * 2, max_delay)
    return PollSchedule(min(MAX_POLLS, 4 * full + 8), max_delay, deadline)


def waiting_seconds(poll_interval: int, schedule: PollSchedule) -> int:
    """How long a duplicate waits in all, at most, before ``Idempotency.InFlight``: its first wait, and
    its last poll before the deadline followed by one more delay at most."""
    return max(poll_interval, schedule.deadline + schedule.max_delay)


class Placed(Protocol):
    """Where a guard's runs are: in an inline Map or not, told (``known``) or seen at synth (``placement.Placement``)."""

    known: bool | None
    task: Any  # the state whose graph tells, where that is seen at synth

    def choose(self, in_map: str, otherwise: str) -> str:
        """``in_map`` where the runs are an inline Map's iterations, else ``otherwise``."""
        ...


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
        self.whole_workflow = bool(values.get("whole_workflow"))  # an IdempotentStateMachine's guard (WHOLE_WORKFLOWS)
        self.in_inline_map: bool | None = values.get("in_inline_map")
        self.placement: Placed  # set by its guard as it is made

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

    @property
    def fails_the_execution(self) -> bool:
        """The chain runs bare, its failure the execution's: the key is then freed from the execution's
        status event (``RELEASE_WHEN_EXECUTION_FAILS``), or kept for its redrive (``KEEP_FOR_REDRIVE``)."""
        return self.on_failure in EXECUTION_POLICIES

    @property
    def keeps_for_redrive(self) -> bool:
        return self.on_failure is FailurePolicy.KEEP_FOR_REDRIVE

    def name(self, state: str) -> str:
        """The name of one of the guard's states in the definition."""
        return f"{self.prefix}{state}"

    @property
    def hold_seconds(self) -> int:
        """How long a record in progress is kept: with the owner check, as long as a Standard execution
        may run, so that TTL never deletes the record of a holder that still runs."""
        if self.owner_state_machine_name is not None:
            return int(read_once.seconds(STANDARD_HOLD))
        return int(read_once.seconds(self.lease) + read_once.seconds(self.expires_after))

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
        if self.on_failure is FailurePolicy.RELEASE_WHEN_EXECUTION_FAILS and not self.whole_workflow:
            problems.append(
                "on_failure: FailurePolicy.RELEASE_WHEN_EXECUTION_FAILS frees the key when the execution fails, which "
                "a guard of your own cannot know of (a Catch around it may handle its failure); it is an "
                "IdempotentStateMachine's, in a Standard workflow: use FailurePolicy.RELEASE here"
            )
        if self.keeps_for_redrive and not self.whole_workflow and self.owner_state_machine_name is None:
            problems.append(
                "on_failure: FailurePolicy.KEEP_FOR_REDRIVE keeps the key of an execution that failed until it is "
                "redriven, which only the owner check tells from a running one (or a crashed one past its lease would "
                "be taken over): pass owner_state_machine_name=... (the Standard state machine the guard runs in)"
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
            and not read_once.unresolved(read_once.size_bytes(threshold))
            and not (1024 <= read_once.size_bytes(threshold) <= read_once.size_bytes(MAX_INLINE_THRESHOLD))
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
            millis = read_once.millis(value)
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
    follows a default ``GuardConfig.fit_express`` may change (or a text: what tells the guard's runs apart,
    once its place is seen, ``placement.Placement``). A token of ``config``'s (which tells a definition that
    holds the guard: ``AtSynth.of``), rendered as the number."""

    def __init__(self, config: GuardConfig, produce: Callable[[], int | str], text: bool) -> None:
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
    def text(config: GuardConfig, produce: Callable[[], int | str]) -> str:
        """Where the definition writes the number in a text (a JSONata expression)."""
        if config.once_per_execution:  # its definition's text is shared with the workflows of its options
            return str(produce())
        return str(Token.as_string(AtSynth(config, produce, text=True)))
