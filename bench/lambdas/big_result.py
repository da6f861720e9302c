"""The user chain's step that returns a large result: a deterministic order of ``kib`` KiB of JSON.

A Lambda rather than a Pass state with a literal result, because the emulator parses a state machine's
definition on every execution, and a 100 KiB literal makes that take a second."""

try:
    from payloads import order_document  # as Lambda imports it
except ImportError:  # pragma: no cover - imported as part of the bench package
    from .payloads import order_document


def handler(event, context=None):
    return order_document(event["kib"], seed=1)
