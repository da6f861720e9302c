"""Timestamps as AWS writes them in JSON: ``2026-11-22T02:27:45.957Z``."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

_RFC3339 = re.compile(r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(\.\d+)?Z$")


def aws_timestamp(value: str) -> str:
    """``2026-11-22T02:27:45.957484+00:00`` (moto) -> ``2026-11-22T02:27:45.957Z`` (AWS)."""
    moment = dt.datetime.fromisoformat(value).astimezone(dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def timestamps_to_text(value: Any) -> None:
    """Replace datetimes inside a response, in place, by AWS's text (boto3 parses them; a state's
    JSON carries them as text)."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else []
    for key, item in list(items):
        if isinstance(item, dt.datetime):
            value[key] = aws_timestamp(item.isoformat())
        else:
            timestamps_to_text(item)


def parse_rfc3339(value: str) -> dt.datetime | None:
    """An RFC 3339 UTC timestamp with or without fractional seconds; None for anything else."""
    match = _RFC3339.match(value) if isinstance(value, str) else None
    if not match:
        return None
    fraction = float(match.group(2) or 0)
    return dt.datetime.strptime(match.group(1), "%Y-%m-%dT%H:%M:%S") + dt.timedelta(seconds=fraction)
