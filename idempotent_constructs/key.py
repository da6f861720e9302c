"""How an idempotency key is derived from a state's input."""

from __future__ import annotations

import json
from typing import Any

from aws_cdk import Token

from . import jsonata_check, jsonata_key
from .lambda_src import canonical, schema


class IdempotencyKey:
    """How the idempotency key is derived from the input of the protected chain.

    Whatever the strategy, the selection is serialized canonically (sorted keys, no whitespace,
    ``1.0`` equal to ``1``) and hashed with SHA-256 inside the wrapper's namespace, together with
    the strategy and expression, so two strategies never collide. A selection that is missing, null
    or empty fails the execution with ``Idempotency.KeyMissing`` before anything is written.
    """

    def __init__(self, kind: str, expression: Any = None) -> None:
        self.kind = kind
        self.expression = expression

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

    def problems(self) -> list[str]:
        """What is wrong with this key, as messages that name the value and the fix."""
        if self.kind == schema.KIND_JMESPATH:
            return self._jmespath_problems()
        if self.kind == schema.KIND_PATHS:
            return self._path_problems()
        if self.kind == schema.KIND_JSONATA:
            return self._jsonata_problems()
        return []

    def _jsonata_problems(self) -> list[str]:
        expression = self.expression
        if Token.is_unresolved(expression):
            return []
        if not isinstance(expression, str) or not expression.strip() or "%}" in expression:
            return [
                f"key: IdempotencyKey.from_jsonata() needs a non-empty expression without '%}}', got {expression!r}; "
                'pass one such as "$states.input.order.id"'
            ]
        problems = []
        for code, message in jsonata_check.problems(expression):
            if code == jsonata_check.INVALID:
                fix = 'fix the expression, for example "$states.input.order.id"'
            else:  # a bare field: Step Functions binds the input as $states.input only
                fix = "read the input through $states.input, for example write $states.input.order.id for order.id"
            problems.append(
                f"key: Step Functions would refuse the JSONata expression {expression!r} when the state machine is "
                f"created ({code}: {message}); {fix}"
            )
        return problems

    def _jmespath_problems(self) -> list[str]:
        expression = self.expression
        if Token.is_unresolved(expression):
            return []
        if not isinstance(expression, str) or not expression.strip():
            return [
                f"key: IdempotencyKey.from_jmespath() needs a non-empty expression, got {expression!r}; "
                'pass one such as "order.id" or "[order.id, customer.id]"'
            ]
        reason = canonical.jmespath_problem(expression)
        if reason is not None:
            return [
                f"key: {expression!r} is not a valid JMESPath expression ({reason}); fix the "
                'expression, for example "order.id" or "[order.id, customer.id]"'
            ]
        return []

    def _path_problems(self) -> list[str]:
        if not self.expression:
            return ['key: IdempotencyKey.from_paths() needs at least one JSONPath; pass one such as "$.order.id"']
        problems = []
        for path in self.expression:
            if Token.is_unresolved(path):
                continue
            if isinstance(path, list | tuple):
                # from_paths(["$.a", "$.b"]): the paths go in one by one.
                listed = ", ".join(json.dumps(item) if isinstance(item, str) else repr(item) for item in path)
                problems.append(
                    f"key: IdempotencyKey.from_paths() takes each path as an argument, got a {type(path).__name__} "
                    f"{path!r}; pass IdempotencyKey.from_paths({listed})"
                )
                continue
            try:
                canonical.parse_path(path)
            except ValueError as error:
                problems.append(f"key: {error}")
        return problems

    def select(self, payload: Any) -> Any:
        """What the key is computed from in ``payload`` (a state's input); raises ``KeyMissing`` (named
        ``Idempotency.KeyMissing``) when the selection is missing, null or empty."""
        return jsonata_key.select(payload, self.kind, self.expression)

    def record_id(self, payload: Any, *, namespace: str) -> str:
        """The id of the record that ``payload`` (a state's input) gets under this key in
        ``namespace``: exactly what the generated states compute (docs/canonical-key.md).

        Raises ``KeyMissing`` (named ``Idempotency.KeyMissing``) when the selection is missing,
        null or empty."""
        return canonical.selection_id(namespace, self.kind, self.expression, self.select(payload))

    def __repr__(self) -> str:
        return f"IdempotencyKey({self.kind!r}, {self.expression!r})"


def namespace_problems(namespace: Any, option: str = "namespace") -> list[str]:
    """What is wrong with a namespace (the prefix of record ids), as messages that name the fix."""
    if Token.is_unresolved(namespace):
        return []
    if isinstance(namespace, str) and schema.valid_namespace(namespace):
        return []
    return [
        f"{option}: {namespace!r} is not a valid namespace; use 1 to {schema.NAMESPACE_MAX_LENGTH} "
        "letters, digits or '_ . : / = + @ -' (no '#', spaces or IAM wildcards), for example \"orders/prod\""
    ]
