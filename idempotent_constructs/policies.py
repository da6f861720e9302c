"""What a wrapper does with a duplicate that arrives mid-run, and with a run that fails."""

from __future__ import annotations

from enum import Enum


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
