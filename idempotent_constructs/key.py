"""How an idempotency key is derived from a state's input."""

from __future__ import annotations

from typing import Any

from ._jsonata import key_expressions
from ._synth import read_once
from ._synth.selection import Selection
from .lambda_src import canonical, schema


class IdempotencyKey(Selection):
    """How the idempotency key is derived from the input of the protected chain.

    Whatever the strategy, the selection is serialized canonically (sorted keys, no whitespace,
    ``1.0`` equal to ``1``) and hashed with SHA-256 inside the wrapper's namespace, together with
    the strategy and expression, so two strategies never collide. A selection that is missing, null
    or empty fails the execution with ``Idempotency.KeyMissing`` before anything is written.
    """

    option = "key"
    factory = "IdempotencyKey"

    @classmethod
    def whole_input(cls) -> IdempotencyKey:
        """The whole input is the key (the default)."""
        return cls(schema.KIND_WHOLE_INPUT)

    @classmethod
    def from_jmespath(cls, expression: str) -> IdempotencyKey:
        """The key is what a JMESPath expression selects, for example ``"[order.id, customer.id]"``.

        The expression is compiled when the construct is created; an invalid one fails ``cdk synth``.
        """
        return cls(schema.KIND_JMESPATH, expression)

    @classmethod
    def from_paths(cls, *json_paths: str) -> IdempotencyKey:
        """The key is a list of scalar fields named by JSONPaths, for example ``"$.order.id"``.

        Paths name one field each (``$.a.b``, ``$['a b']``, ``$.items[0]``); wildcards, filters and
        slices are rejected when the construct is created.
        """
        return cls(schema.KIND_PATHS, list(json_paths))

    @classmethod
    def from_jsonata(cls, expression: str) -> IdempotencyKey:
        """The key is what a JSONata expression selects from the input, which it reads as
        ``$states.input``, for example ``"[$states.input.order.id, $states.input.customer.id]"``.

        The expression is evaluated by Step Functions (JSONata 2.0.6); it is checked when the
        construct is created as Step Functions checks a definition (``jsonata_check``), so a syntax
        error, or a field read without ``$states.input`` (``order.id``), fails ``cdk synth``. ``record_id`` evaluates it with
        jsonata-python, made to follow jsonata-js where the two differ (``idempotent_constructs.testing``).
        """
        return cls(schema.KIND_JSONATA, expression)

    def select(self, payload: Any) -> Any:
        """What the key is computed from in ``payload`` (a state's input); raises ``KeyMissing`` (named
        ``Idempotency.KeyMissing``) when the selection is missing, null or empty."""
        return key_expressions.select(payload, self.kind, self.expression)

    def record_id(self, payload: Any, *, namespace: str) -> str:
        """The id of the record that ``payload`` (a state's input) gets under this key in
        ``namespace``: exactly what the generated states compute (docs/explanation/canonical-key.md).

        Raises ``KeyMissing`` (named ``Idempotency.KeyMissing``) when the selection is missing,
        null or empty."""
        return canonical.selection_id(namespace, self.kind, self.select(payload))


def namespace_problems(namespace: Any, option: str = "namespace") -> list[str]:
    """What is wrong with a namespace (the prefix of record ids), as messages that name the fix."""
    if read_once.unresolved(namespace):
        return []
    if isinstance(namespace, str) and schema.valid_namespace(namespace):
        return []
    return [
        f"{option}: {namespace!r} is not a valid namespace; use 1 to {schema.NAMESPACE_MAX_LENGTH} "
        "letters, digits or '_ . : / = + @ -' (no '#', spaces or IAM wildcards), for example \"orders/prod\""
    ]
