"""What a key and a payload selection share: a strategy (``kind``) and its expression, checked at synth.

``IdempotencyKey`` (``key.py``) selects what a record id is computed from, ``IdempotencyPayload``
(``payload.py``) what a duplicate must repeat; both select with JSONPath fields, a JSONata or a
JMESPath expression, and their problems are told alike, under the option's name.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from .._jsonata import check as jsonata_check
from ..lambda_src import canonical, schema
from . import read_once


class Selection:
    """A selection strategy: ``kind`` (``schema.KIND_*``) and its ``expression``."""

    # The option that takes it ("key", "payload") and the class users write ("IdempotencyKey").
    option: ClassVar[str]
    factory: ClassVar[str]

    def __init__(self, kind: str, expression: Any = None) -> None:
        self.kind = kind
        self.expression = expression

    def problems(self) -> list[str]:
        """What is wrong with this selection, as messages that name the value and the fix."""
        if self.kind == schema.KIND_JMESPATH:
            return self._jmespath_problems()
        if self.kind == schema.KIND_PATHS:
            return self._path_problems()
        if self.kind == schema.KIND_JSONATA:
            return self._jsonata_problems()
        return []

    def _jsonata_problems(self) -> list[str]:
        expression = self.expression
        if read_once.unresolved(expression):
            return []
        if not isinstance(expression, str) or not expression.strip() or "%}" in expression:
            return [
                f"{self.option}: {self.factory}.from_jsonata() needs a non-empty expression without '%}}', got {expression!r}; "
                'pass one such as "$states.input.order.id"'
            ]
        problems = []
        for code, message in jsonata_check.problems(expression):
            if code == jsonata_check.INVALID:
                fix = 'fix the expression, for example "$states.input.order.id"'
            else:  # a bare field: Step Functions binds the input as $states.input only
                fix = "read the input through $states.input, for example write $states.input.order.id for order.id"
            problems.append(
                f"{self.option}: Step Functions would refuse the JSONata expression {expression!r} when the state machine is "
                f"created ({code}: {message}); {fix}"
            )
        return problems

    def _jmespath_problems(self) -> list[str]:
        expression = self.expression
        if read_once.unresolved(expression):
            return []
        if not isinstance(expression, str) or not expression.strip():
            return [
                f"{self.option}: {self.factory}.from_jmespath() needs a non-empty expression, got {expression!r}; "
                'pass one such as "order.id" or "[order.id, customer.id]"'
            ]
        reason = canonical.jmespath_problem(expression)
        if reason is not None:
            return [
                f"{self.option}: {expression!r} is not a valid JMESPath expression ({reason}); fix the "
                'expression, for example "order.id" or "[order.id, customer.id]"'
            ]
        return []

    def _path_problems(self) -> list[str]:
        if not self.expression:
            return [f'{self.option}: {self.factory}.from_paths() needs at least one JSONPath; pass one such as "$.order.id"']
        problems = []
        for path in self.expression:
            if read_once.unresolved(path):
                continue
            if isinstance(path, list | tuple):
                # from_paths(["$.a", "$.b"]): the paths go in one by one.
                listed = ", ".join(json.dumps(item) if isinstance(item, str) else repr(item) for item in path)
                problems.append(
                    f"{self.option}: {self.factory}.from_paths() takes each path as an argument, got a {type(path).__name__} "
                    f"{path!r}; pass {self.factory}.from_paths({listed})"
                )
                continue
            try:
                canonical.parse_path(path)
            except ValueError as error:
                problems.append(f"{self.option}: {error}")
        return problems

    def __repr__(self) -> str:
        return f"{self.factory}({self.kind!r}, {self.expression!r})"
