"""Key function: the record id and payload digest of a state's input, for keys JSONata cannot compute.

Only guards whose key is a JMESPath expression call it (every other key is computed natively by
the generated states). It has no AWS access at all: it only computes.

Event (built by the generated ``...ComputeKey`` state)::

    {"input": <the state's input>, "namespace": "...", "kind": "jmespath", "expression": "..."}

Result: ``{"id": "<record id>", "validation": "<payload digest>"}``, or the error
``Idempotency.KeyMissing`` when the selection is missing, null or empty.
"""

from __future__ import annotations

from typing import Any

try:  # imported as part of the library
    from . import canonical, telemetry
except ImportError:  # imported by the Lambda runtime from the asset root
    import canonical  # type: ignore[no-redef,import-not-found]
    import telemetry  # type: ignore[no-redef,import-not-found]

logger = telemetry.get_logger()


def handler(event: dict[str, Any], context: Any = None) -> dict[str, str]:
    try:
        record_id, validation = canonical.key_and_validation(
            event["namespace"], event["input"], event["kind"], event.get("expression")
        )
    except canonical.KeyMissing as missing:
        logger.warning("key missing", extra={"idempotency_namespace": event["namespace"], "reason": str(missing)})
        raise
    logger.info("key computed", extra={**telemetry.record_fields(record_id), "kind": event["kind"]})
    return {"id": record_id, "validation": validation}
