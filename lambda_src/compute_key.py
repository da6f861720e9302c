"""Key function: turns a state's input into its idempotency record id, owner token and clock readings.

Shared by every idempotent workflow of a stack. It has no AWS access at all: it only computes. It also
reads the clock, because Step Functions (JSONPath) has no numeric clock to compute TTLs and leases with.

Event (built by the generated ``...ComputeKey`` state)::

    {"input": <the state's input>, "execution": "<execution ARN>", "namespace": "...",
     "kind": "whole_input" | "jmespath" | "paths", "expression": <str | list[str] | null>,
     "lease_seconds": 900, "expires_after_seconds": 86400, "hold_seconds": 31622400,
     "meta_only": false}

Result: ``{"value": <the input, unchanged>, "idempotency": {...}}`` (see ``schema``), or only the
``idempotency`` part when ``meta_only`` is set (a fresh clock before a late acquire or takeover).

A record expires ``expires_after_seconds`` after its lease ends: a run that finishes within its lease
is remembered at least that long after it finished (Step Functions cannot read a clock at the end).
"""

from __future__ import annotations

import time
import uuid
from datetime import datetime, timezone
from typing import Any

try:  # imported as part of the library
    from . import canonical, schema, telemetry
except ImportError:  # imported by the Lambda runtime from the asset root
    import canonical  # type: ignore[no-redef]
    import schema  # type: ignore[no-redef]
    import telemetry  # type: ignore[no-redef]

logger = telemetry.get_logger()


def _iso(epoch_seconds: int) -> str:
    return datetime.fromtimestamp(epoch_seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def handler(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    document = event["input"]
    now = int(time.time())
    # Whole seconds, so that the ISO deadline and the epoch value agree exactly.
    lease_end = now + int(event["lease_seconds"])
    try:
        record_id, validation = canonical.key_and_validation(event["namespace"], document, event["kind"], event.get("expression"))
    except canonical.KeyMissing as missing:
        telemetry.emit_metric(event["namespace"], schema.KEY_MISSING_METRIC)
        logger.warning("key missing", extra={"idempotency_namespace": event["namespace"], "reason": str(missing)})
        raise
    logger.info(
        "key computed",
        extra={**telemetry.record_fields(record_id), "kind": event["kind"], "execution": event["execution"]},
    )
    meta = {
        "id": record_id,
        "validation": validation,
        "owner": f"{event['execution']}#{uuid.uuid4().hex}",
        # DynamoDB numbers travel as strings through the DynamoDB service integration.
        "now": str(now),
        "execution": event["execution"],
        # A finished record's expiration, and how long a record in progress is kept.
        "expiration": str(lease_end + int(event["expires_after_seconds"])),
        "hold_expiration": str(now + int(event.get("hold_seconds") or event["lease_seconds"] + event["expires_after_seconds"])),
        "lease_expiration": str(lease_end * 1000),
        "deadline": _iso(lease_end),
    }
    if event.get("meta_only"):
        return meta
    return {schema.VALUE: document, schema.META: meta}
