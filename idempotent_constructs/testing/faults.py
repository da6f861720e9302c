"""Transient failures injected on purpose: DynamoDB throttling and Lambda service errors."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from .gaps.dynamodb_atomicity import ITEM_OPERATIONS

if TYPE_CHECKING:
    from .patches import Patch

_INJECTED = "injected by idempotent_constructs.testing.Faults"


@dataclass
class Faults:
    """Transient failures to inject, as fractions of calls (0.0 to 1.0).

    ``dynamodb``: item reads and writes (GetItem, PutItem, UpdateItem, DeleteItem) fail with
    ``dynamodb_error`` (``ProvisionedThroughputExceededException``, as DynamoDB does when it throttles;
    ``AmazonDynamoDBException`` or ``SdkClientException``, the names a transient failure may take in Step
    Functions' integration). Scans, which the tests use to read the table, are never failed.
    ``lambda_invocations``: invocations fail with ``TooManyRequestsException`` or
    ``ServiceException``, as the Lambda service does under load.
    ``dynamodb_lost_replies``: item writes (PutItem, UpdateItem, DeleteItem) are applied, and then
    fail with ``InternalServerError``, as a request whose reply DynamoDB or the network lost does: the
    caller retries a write that already happened.
    ``lost_reply_writes``: the same for chosen writes, by number: 1 is the first item write DynamoDB
    applies while the faults are in place, 2 the next, and so on (a write refused by its condition is
    not applied, so it has no number). ``(1,)`` loses the reply of a workflow's first write, its
    ``Acquire``; each lost reply counts in ``injected["dynamodb_lost_replies"]``.
    """

    dynamodb: float = 0.0
    lambda_invocations: float = 0.0
    dynamodb_lost_replies: float = 0.0
    lost_reply_writes: tuple[int, ...] = ()
    dynamodb_error: str = "ProvisionedThroughputExceededException"
    seed: int | None = None
    injected: dict[str, int] = field(default_factory=lambda: {"dynamodb": 0, "lambda": 0, "dynamodb_lost_replies": 0})
    # Lambda invocations failed, by function name: what ``injected["lambda"]`` counts, told apart (a function
    # that other traffic invokes meanwhile, such as the release function, draws faults too).
    failed_invocations: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        import random

        for name in ("dynamodb", "lambda_invocations", "dynamodb_lost_replies"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"Faults.{name} must be a fraction from 0.0 to 1.0, got {getattr(self, name)!r}")
        if not all(isinstance(number, int) and number >= 1 for number in self.lost_reply_writes):
            raise ValueError(f"Faults.lost_reply_writes must number writes from 1, got {self.lost_reply_writes!r}")
        self._random = random.Random(self.seed)
        self._lock = threading.Lock()
        self._writes = 0  # the item writes applied so far

    def hit(self, kind: str) -> bool:
        rate = {"dynamodb": self.dynamodb, "lambda": self.lambda_invocations}.get(kind, self.dynamodb_lost_replies)
        with self._lock:
            if rate and self._random.random() < rate:
                self.injected[kind] += 1
                return True
        return False

    def reply_lost(self) -> bool:
        """Whether the reply of the item write DynamoDB just applied is lost: its number is one of
        ``lost_reply_writes``, or it drew a ``dynamodb_lost_replies`` fault."""
        with self._lock:
            self._writes += 1
            chosen = self._writes in self.lost_reply_writes
            if chosen:
                self.injected["dynamodb_lost_replies"] += 1
        return chosen or self.hit("dynamodb_lost_replies")

    def choice(self, options: list[str]) -> str:
        with self._lock:
            return self._random.choice(options)


def install(patch: Patch, current: Callable[[], Faults]) -> None:
    """Draw ``current()``'s faults once per DynamoDB or Lambda API request. Per request, not per
    backend call: moto's UpdateItem reads the item first (two backend calls), which would fail it at
    51% for a 30% rate and, 11 times in a row, exhaust a state's 10 retries about once in 40 runs."""
    from moto.awslambda.exceptions import LambdaClientError
    from moto.awslambda.responses import LambdaResponse
    from moto.dynamodb.exceptions import DynamodbException
    from moto.dynamodb.responses import DynamoHandler

    for name in ITEM_OPERATIONS:
        original = getattr(DynamoHandler, name)

        def faulty_item_operation(handler: Any, _original: Callable[..., Any] = original, _name: str = name) -> Any:
            if current().hit("dynamodb"):
                raise DynamodbException(current().dynamodb_error, _INJECTED)
            reply = _original(handler)
            if _name != "get_item" and current().reply_lost():
                raise DynamodbException("InternalServerError", _INJECTED)
            return reply

        patch(DynamoHandler, name, faulty_item_operation)

    invoke = LambdaResponse.invoke

    def faulty_invoke(response: Any) -> Any:
        faults = current()
        if faults.hit("lambda"):
            named = unquote(response.path.rsplit("/", 2)[-2])  # a name, or an ARN with its qualifier
            with faults._lock:
                faults.failed_invocations[named.split(":")[6] if named.startswith("arn:") else named] += 1
            raise LambdaClientError(faults.choice(["TooManyRequestsException", "ServiceException"]), _INJECTED)
        return invoke(response)

    patch(LambdaResponse, "invoke", faulty_invoke)
