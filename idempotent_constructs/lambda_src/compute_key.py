"""Key function: the record id and payload digest of a state's input, where the generated states do
not compute them natively: a JMESPath key (JSONata cannot evaluate one), and an input beyond the bounds
within which the native key stays inside AWS's JSONata bounds (``jsonata_key.NATIVE_*``, B18). It has
no AWS access at all: it only computes.

Event (built by the generated ``...ComputeKey`` state)::

    {"input": <the state's input, or null when too_large>, "too_large": false,
     "namespace": "...", "kind": "...", "expression": ..., "selection": <a JSONata key's selection>,
     "payload_kind": "...", "payload_expression": ..., "payload_selection": <a JSONata payload's selection>}

(``payload_kind`` absent: the whole input.) Result: ``{"id": "<record id>", "validation": "<payload digest>",
"members": {"<member>": {"S": "<its digest's first digits>"}}}`` (``canonical.payload_members``, typed as the
record's map keeps them),
or the error ``Idempotency.KeyMissing`` when the key selection is missing, null or empty,
``Idempotency.PayloadMissing`` when the payload selection selects nothing, or
``Idempotency.InputTooLarge`` when the input was too large to send.
"""

from __future__ import annotations

from typing import Any

try:  # imported as part of the library
    from . import canonical, schema, telemetry
except ImportError:  # imported by the Lambda runtime from the asset root
    import canonical  # type: ignore[no-redef,import-not-found]
    import schema  # type: ignore[no-redef,import-not-found]
    import telemetry  # type: ignore[no-redef,import-not-found]

logger = telemetry.get_logger()


class InputTooLarge(Exception):
    """The input could not be sent: its request would exceed Step Functions' 256 KiB."""


# Lambda reports an exception's class name as the Step Functions error name.
InputTooLarge.__name__ = InputTooLarge.__qualname__ = schema.INPUT_TOO_LARGE


def _key(event: dict[str, Any]) -> dict[str, Any]:
    namespace, document, kind, expression = event["namespace"], event["input"], event["kind"], event.get("expression")
    payload_kind = event.get("payload_kind", schema.KIND_WHOLE_INPUT)
    payload_expression = event.get("payload_expression")
    if kind != schema.KIND_JSONATA and payload_kind != schema.KIND_JSONATA:
        return canonical.key_fields(namespace, document, kind, expression, payload_kind, payload_expression)
    # Only JSONata evaluates a JSONata expression: the state sends its selection made (absent: it selects nothing).
    if kind == schema.KIND_JSONATA:
        selection = event.get("selection")
        if canonical.is_empty(selection):
            raise canonical.KeyMissing(f"the key expression {expression} selects nothing, null or an empty value")
    else:
        selection = canonical.select(document, kind, expression)
    if payload_kind == schema.KIND_JSONATA:
        if "payload_selection" not in event:
            raise canonical.PayloadMissing(f"the payload expression {payload_expression} selects nothing")
        payload = event["payload_selection"]
    else:
        payload = canonical.select_payload(document, payload_kind, payload_expression)
    return {
        "id": canonical.selection_id(namespace, kind, selection),
        "validation": canonical.payload_validation(payload),
        "members": canonical.typed_members(canonical.payload_members(payload_kind, payload_expression, payload)),
    }


def handler(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    if event.get("too_large"):
        raise InputTooLarge(
            "the input is beyond the bounds of the native key and too large to send to the key function: "
            "keep a guarded step's input under 248 KiB, or key it on fewer fields"
        )
    try:
        key = _key(event)
    except (canonical.KeyMissing, canonical.PayloadMissing) as missing:
        logger.warning(
            "key missing" if isinstance(missing, canonical.KeyMissing) else "payload missing",
            extra={"idempotency_namespace": event["namespace"], "reason": str(missing)},
        )
        raise
    logger.info("key computed", extra={**telemetry.record_fields(key["id"]), "kind": event["kind"]})
    return key
