"""What every source shares: ``Delivery`` (an event as an execution receives it, its redeliveries and its
duplicates), and the values AWS generates for an event's envelope (ids, receipt handles, sequence numbers,
times), in AWS's forms and derived deterministically from the names of what they are for.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

_BASE_TIME = dt.datetime(2024, 5, 1, 12, 0, tzinfo=dt.UTC)
_CLIENT_IP = "203.0.113.10"  # a documentation address (RFC 5737)


@dataclass(frozen=True)
class Delivery:
    """One delivery of a message as a Step Functions execution receives it: ``event`` is the execution's
    input, as AWS builds it, and ``attempt`` counts the deliveries of this message (1 for the first)."""

    event: Any
    _render: Callable[[int], Any] = field(repr=False, compare=False)
    attempt: int = 1
    _duplicate: Callable[[], Delivery] | None = field(default=None, repr=False, compare=False)

    def redelivered(self, attempt: int | None = None) -> Delivery:
        """The same message delivered again, as the AWS service that delivers it redelivers it: delivery
        number ``attempt`` (the next one unless given). Only the fields AWS changes change."""
        number = self.attempt + 1 if attempt is None else attempt
        if number < 2:
            raise ValueError(f"a redelivery is delivery 2 or later, got attempt={number}")
        return replace(self, event=self._render(number), attempt=number)

    def duplicated(self) -> Delivery:
        """The same content arriving again as another message, as AWS documents it for this source (its
        builder's docstring says how); a ``TypeError`` for a source AWS documents no such duplicate of."""
        if self._duplicate is None:
            raise TypeError("AWS documents no duplicate of this source other than a redelivery: use redelivered()")
        return self._duplicate()


# Deterministic values in AWS's forms: a stream of bytes from the names of what they are for.


def _bytes(count: int, *names: object) -> bytes:
    seed = "\x1f".join(map(str, names)).encode()
    out = b""
    block = 0
    while len(out) < count:
        out += hashlib.sha256(seed + block.to_bytes(4, "big")).digest()
        block += 1
    return out[:count]


def _uuid(*names: object) -> str:
    return str(uuid.UUID(bytes=_bytes(16, *names), version=4))


def _hex(count: int, *names: object) -> str:
    return _bytes(-(-count // 2), *names).hex()[:count]


def _digits(count: int, *names: object) -> str:
    return str(int.from_bytes(_bytes(count, *names), "big") % 10**count).zfill(count)


def _chars(count: int, alphabet: str, *names: object) -> str:
    return "".join(alphabet[byte % len(alphabet)] for byte in _bytes(count, *names))


_UPPER_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_LOWER_ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789"
_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def _moment(seed: int, at: dt.datetime | None) -> dt.datetime:
    return at.astimezone(dt.UTC) if at is not None else _BASE_TIME + dt.timedelta(minutes=seed)


def _millis(moment: dt.datetime) -> int:
    return round(moment.timestamp() * 1000)


def _clf(moment: dt.datetime) -> str:
    """API Gateway's CLF time: ``04/Mar/2020:19:15:17 +0000``."""
    return moment.strftime("%d/%b/%Y:%H:%M:%S +0000")


def _iso_seconds(moment: dt.datetime) -> str:
    """EventBridge's ``time``: ``2017-12-22T18:43:48Z``."""
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _iso_millis(moment: dt.datetime) -> str:
    """SNS's ``Timestamp``: ``2012-03-29T05:12:16.901Z``."""
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _content(value: Any) -> str:
    """A stable name for business content, so that different content never shares a generated id."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()
