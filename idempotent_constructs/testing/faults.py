"""Transient failures injected on purpose: DynamoDB throttling and Lambda service errors."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field


@dataclass
class Faults:
    """Transient failures to inject, as fractions of calls (0.0 to 1.0).

    ``dynamodb``: item reads and writes (GetItem, PutItem, UpdateItem, DeleteItem) fail with
    ``ProvisionedThroughputExceededException``, as DynamoDB does when it throttles. Scans, which the
    tests use to read the table, are never failed.
    ``lambda_invocations``: invocations fail with ``TooManyRequestsException`` or
    ``ServiceException``, as the Lambda service does under load.
    """

    dynamodb: float = 0.0
    lambda_invocations: float = 0.0
    seed: int | None = None
    injected: dict[str, int] = field(default_factory=lambda: {"dynamodb": 0, "lambda": 0})

    def __post_init__(self) -> None:
        import random

        for name in ("dynamodb", "lambda_invocations"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"Faults.{name} must be a fraction from 0.0 to 1.0, got {getattr(self, name)!r}")
        self._random = random.Random(self.seed)
        self._lock = threading.Lock()

    def hit(self, kind: str) -> bool:
        rate = self.dynamodb if kind == "dynamodb" else self.lambda_invocations
        with self._lock:
            if rate and self._random.random() < rate:
                self.injected[kind] += 1
                return True
        return False

    def choice(self, options: list[str]) -> str:
        with self._lock:
            return self._random.choice(options)
