"""Every exception idempotent_constructs raises.

Synth-time problems are collected per construct and raised once, so a user sees every mistake in one
run; each message says what went wrong, what was received and what to do.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from constructs import IConstruct


class IdempotencyError(Exception):
    """Base class of every error raised by idempotent_constructs."""


class IdempotencyConfigurationError(IdempotencyError, ValueError):
    """A construct was configured with values it cannot work with; raised while the app is synthesized."""

    def __init__(self, construct_path: str, problems: list[str]) -> None:
        self.construct_path = construct_path
        self.problems = list(problems)
        listing = "\n".join(f"  - {problem}" for problem in self.problems)
        super().__init__(f"{construct_path}: invalid idempotency configuration:\n{listing}")


class RecordNotFoundError(IdempotencyError, LookupError):
    """No record has the given id (never written, released, reset, or deleted by TTL)."""


class RecordInProgressError(IdempotencyError):
    """The record is held by a running execution; resetting it would let a duplicate run alongside."""


class TableNotFoundError(IdempotencyError, LookupError):
    """No such table, or a stack with no idempotency table or several that cannot be told apart."""


class TemplateTooLarge(IdempotencyError, ValueError):
    """The local emulator refuses to deploy a template larger than CloudFormation accepts (1,000,000
    bytes through S3, as ``cdk deploy`` uploads it)."""


class Problems:
    """Collects the configuration problems of one construct; ``raise_if_any`` raises them together."""

    def __init__(self, construct: IConstruct) -> None:
        self._construct = construct
        self._problems: list[str] = []

    def add(self, problem: str) -> None:
        self._problems.append(problem)

    def extend(self, problems: Iterable[str]) -> None:
        self._problems.extend(problems)

    def raise_if_any(self) -> None:
        if self._problems:
            raise IdempotencyConfigurationError(self._construct.node.path, self._problems)
