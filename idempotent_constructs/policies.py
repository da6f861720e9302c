"""What a wrapper does with a duplicate that arrives mid-run, with a run that fails, and with results."""

from __future__ import annotations

from enum import Enum

from aws_cdk import Size
from aws_cdk import aws_s3 as s3

from ._synth import option_kinds


class InFlightPolicy(Enum):
    """What a duplicate does while another execution holds its key."""

    WAIT = "WAIT"
    """Poll the record with exponential backoff until the holder finishes, then return its result
    (or run the body if the holder released the key); give up with ``Idempotency.InFlight`` after
    ``max_wait``. The default."""

    FAIL = "FAIL"
    """Fail at once with ``Idempotency.InFlight``; the caller retries later."""


class FailurePolicy(Enum):
    """What happens to the key when the wrapped chain fails."""

    RELEASE = "RELEASE"
    """Delete the record, so the next duplicate runs the chain again. The default."""

    CACHE = "CACHE"
    """Remember the failure; duplicates get the original error name and cause back without running
    the chain, until the record expires."""

    RELEASE_WHEN_EXECUTION_FAILS = "RELEASE_WHEN_EXECUTION_FAILS"
    """A Standard ``IdempotentStateMachine`` only: delete the record after the execution has failed, from
    its "Execution Status Change" event, by the release function every Standard workflow has. The chain then
    runs bare, with no Parallel around it and no Catch of the guard's: a first run enters two of the guard's
    states, ``Acquire`` and ``Complete``, whatever the chain. What it gives up: the key is freed seconds after
    the execution fails rather than in it (a duplicate that comes meanwhile waits for the holder, or fails
    ``Idempotency.InFlight`` under ``InFlightPolicy.FAIL``), and the execution fails with the chain's own
    error, ``States.*`` ones too, unrenamed. Start a new execution rather than redrive a failed one: a redrive
    resumes the chain at its failed state, its key already freed, so a duplicate may run beside it
    (``KEEP_FOR_REDRIVE`` keeps it)."""

    KEEP_FOR_REDRIVE = "KEEP_FOR_REDRIVE"
    """A Standard workflow's (an ``IdempotentStateMachine``, or a guard of your own with the owner check,
    ``owner_state_machine_name``): a failed, aborted or timed-out execution keeps its key for its redrive
    (``RedriveExecution`` resumes it at the failed state, and it completes its record as a first run would). The
    chain runs bare, as under ``RELEASE_WHEN_EXECUTION_FAILS``, its failure the execution's (or a Catch's around
    the guard: the key is then kept until the execution ends), and no release function frees the key.
    A duplicate waits while the holder's lease lasts, as for a running holder; past it, the owner check finds the
    holder ended but redrivable and fails with ``Idempotency.AwaitingRedrive`` (its cause names the record and
    the execution to redrive). The key is kept until the execution is redriven and completes, an operator
    resets it, or AWS's redrive window (14 days) ends, when the next duplicate takes it over and runs the chain."""


class CompletedPolicy(Enum):
    """What a duplicate gets once the work for its key has completed (until the record expires)."""

    REPLAY = "REPLAY"
    """The stored result, as if the work ran again. The default."""

    REJECT = "REJECT"
    """Fail with ``Idempotency.AlreadyCompleted``, whose cause (JSON) gives the record id and when
    the work completed: Temporal's "reject duplicate". With ``FailurePolicy.RELEASE`` a key can then
    be used again only after a failure."""


class ResultStorage:
    """Where a guard keeps the chain's result for replays. Create with ``inline()`` or ``large()``."""

    DEFAULT_INLINE_THRESHOLD = Size.kibibytes(8)

    def __init__(self, *, large: bool, bucket: s3.IBucket | None = None, inline_threshold: Size | None = None) -> None:
        # A bucket or a threshold without large results is a mistake the guard reports (``problems``), with
        # its others, as an IdempotencyConfigurationError under its path: this object has none.
        self._misplaced = [
            name for name, value in (("bucket", bucket), ("inline_threshold", inline_threshold)) if value is not None
        ]
        self.is_large = large
        self.bucket = bucket
        self.inline_threshold = inline_threshold or self.DEFAULT_INLINE_THRESHOLD

    def problems(self) -> list[str]:
        """What is wrong with the options given to ``large()``, as messages that name the fix."""
        if not self.is_large and self._misplaced:
            return [
                f"result_storage: {' and '.join(self._misplaced)} given to ResultStorage(large=False), which keeps "
                "results in the record only; they apply to large results: pass ResultStorage.large(...) or drop them"
            ]
        kinds = {"bucket": option_kinds.BUCKET, "inline_threshold": option_kinds.SIZE}
        values = {"bucket": self.bucket, "inline_threshold": self.inline_threshold}
        return [f"result_storage: in ResultStorage.large(), {problem}" for problem in option_kinds.problems(kinds, values)]

    @classmethod
    def inline(cls) -> ResultStorage:
        """The result, as JSON, in the record, written by a native DynamoDB update: no Lambda call.
        The default. Costs one write unit per KiB of result, and suits results up to about 100 KiB:
        a replay reads the record into the state, and escaped JSON inside it counts against Step
        Functions' 256 KiB payload limit."""
        return cls(large=False)

    @classmethod
    def large(cls, *, bucket: s3.IBucket | None = None, inline_threshold: Size | None = None) -> ResultStorage:
        """Results up to the 256 KiB payload limit, cheaply: the run completes through the stack's
        result function (one Lambda call), which keeps a result of up to ``inline_threshold`` as
        JSON in the record, and a larger one gzip-compressed, in the record if that fits under the
        threshold, else in S3. A replay of a compressed or S3 result restores it with one Lambda call.

        :param bucket: where results too large for the record go. Default: the stack's results
            bucket (created once: encrypted, public access blocked, TLS only, retained, objects
            expiring a day after the longest record retention of the guards writing there). A
            bucket you supply is yours to expire.
        :param inline_threshold: the largest result (JSON, or compressed) kept in the record.
            Default: 8 KiB, where an S3 write and read start to cost less than the write units.
        """
        return cls(large=True, bucket=bucket, inline_threshold=inline_threshold)
