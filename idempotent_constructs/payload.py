"""What a duplicate must repeat: the payload selection a record's ``validation`` is computed from."""

from __future__ import annotations

from typing import Any

from ._jsonata import key_expressions
from ._synth.selection import Selection
from .lambda_src import canonical, schema


class IdempotencyPayload(Selection):
    """The part of the input that a duplicate must repeat (``payload=``); the same key with another
    payload fails with ``Idempotency.PayloadMismatch`` and never gets the other payload's result.

    AWS's event sources redeliver a message in an envelope that changes (an SQS receipt handle and
    receive count, an API Gateway request id): compare the message, not the envelope, for example
    ``IdempotencyPayload.from_paths("$[0].body")`` for SQS records through a pipe. The selection is
    serialized canonically, as a key's is, and hashed (``validation``). A selection that selects
    nothing (a path that is not there) fails the execution with ``Idempotency.PayloadMissing`` before
    anything is written; unlike a key's, it may be null, an object or a list.
    """

    option = "payload"
    factory = "IdempotencyPayload"

    @classmethod
    def whole_input(cls) -> IdempotencyPayload:
        """The whole input (the default): a duplicate repeats it exactly, up to key order, whitespace
        and ``1`` against ``1.0``."""
        return cls(schema.KIND_WHOLE_INPUT)

    @classmethod
    def none(cls) -> IdempotencyPayload:
        """No payload is compared: every duplicate of a key gets its result, whatever else it holds."""
        return cls(schema.KIND_NONE)

    @classmethod
    def from_paths(cls, *json_paths: str) -> IdempotencyPayload:
        """The payload is the list of the values at these JSONPaths, for example ``"$[0].body"``; a value
        may be anything, an object or a list too. Paths name one field each (``$.a.b``, ``$['a b']``,
        ``$[0].body``); computed natively, with no Lambda call. JSONPath cannot read into a JSON text
        (an SQS ``body``): select the text itself, or read into it with ``from_jsonata``."""
        return cls(schema.KIND_PATHS, list(json_paths))

    @classmethod
    def from_jsonata(cls, expression: str) -> IdempotencyPayload:
        """The payload is what a JSONata expression selects from ``$states.input``, for example
        ``"$parse($states.input[0].body).payment"`` (``$parse`` reads a JSON text natively, with no
        Lambda call). Checked at synth as Step Functions checks it."""
        return cls(schema.KIND_JSONATA, expression)

    @classmethod
    def from_jmespath(cls, expression: str) -> IdempotencyPayload:
        """The payload is what a JMESPath expression selects, as Powertools' ``payload_validation_jmespath``
        takes it: Powertools' functions included (``powertools_json(body).payment_id``). JSONata cannot
        evaluate JMESPath: every run calls the key function (one Lambda call). Null counts as nothing."""
        return cls(schema.KIND_JMESPATH, expression)

    def select(self, payload: Any) -> Any:
        """What the payload digest is computed from in ``payload`` (a state's input); raises
        ``PayloadMissing`` (named ``Idempotency.PayloadMissing``) when it selects nothing."""
        return key_expressions.select_payload(payload, self.kind, self.expression)

    def validation(self, payload: Any) -> str:
        """The ``validation`` that ``payload`` (a state's input) writes in its record: exactly what the
        generated states compute (docs/explanation/canonical-key.md)."""
        return canonical.payload_validation(self.select(payload))
