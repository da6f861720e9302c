"""Transient failures injected on purpose: DynamoDB throttling, server errors and lost replies, and Lambda
service errors, each answered as AWS answers it and drawn from what identifies the call (``fault_calls``),
so that a seed replays them, and aimed at chosen tables and functions."""

from __future__ import annotations

import hashlib
import secrets
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from .fault_calls import (
    DYNAMODB_OPERATIONS,
    LAMBDA_ERRORS,
    LOST_REPLY,
    AwsError,
    Call,
    InjectedFault,
    dynamodb_call,
    dynamodb_error,
    function_name,
    lambda_call,
    lambda_error,
    table_name,
)

if TYPE_CHECKING:
    from .patches import Patch

KINDS = ("dynamodb", "lambda", "dynamodb_lost_replies")


class Injected(NamedTuple):
    """One fault injected: its ``kind``, the call's ``operation`` and ``resources`` (tables, or the
    function), its ``content`` (the items' keys, or the qualifier and payload, cut to 200 characters) and
    its ``occurrence`` (how many identical calls came before it)."""

    kind: str
    operation: str
    resources: tuple[str, ...]
    content: str
    occurrence: int


@dataclass
class Faults:
    """Transient failures to inject, as fractions of calls (0.0 to 1.0), each answered with the HTTP
    status, error code and message the AWS service itself answers with (``fault_calls``; the answer
    also carries the header ``x-injected-fault``, naming the kind).

    ``dynamodb``: item reads and writes (GetItem, PutItem, UpdateItem, DeleteItem, TransactWriteItems) fail
    with ``dynamodb_error``: ``ProvisionedThroughputExceededException``, ``ThrottlingException`` or
    ``RequestLimitExceeded`` (400) or ``InternalServerError`` (500), as DynamoDB answers them; or
    ``AmazonDynamoDBException`` or ``SdkClientException``, names Step Functions' integration may give a
    transient failure (sent as a 500). Scans, which the tests use to read a table, are never failed.
    ``lambda_invocations``: invocations fail with ``lambda_error``: ``TooManyRequestsException`` (429) or
    ``ServiceException`` (500); None, the default, draws one of the two for each fault, half each.
    ``dynamodb_lost_replies``: item writes (not GetItem) are applied, and then answered with DynamoDB's
    ``InternalServerError`` (500), as a request whose reply DynamoDB or the network lost: the caller
    retries a write that already happened. A 500 and not a dropped connection: DynamoDB answers a request
    it could not finish with a 500 ("Error handling with DynamoDB": retry it), which leaves the caller as
    unsure whether the write was applied as a lost reply does; a 500 reaches every caller alike, as an
    error botocore retries and Step Functions names ``DynamoDB.InternalServerError``, where a connection
    dropped in an in-process emulator would be a Python exception, which moto's interpreter names
    ``DynamoDB.AmazonDynamoDBException`` with a traceback for a cause.
    ``lost_reply_writes``: the same for chosen writes, by number: 1 is the first item write DynamoDB
    applies while the faults are in place (to the aimed tables), 2 the next, and so on (a write refused by
    its condition is not applied, so it has no number). This is the order in which writes are applied,
    global by definition, so under concurrency which write is number 2 depends on timing. ``(1,)`` loses
    the reply of a workflow's first write, its ``Acquire``; each counts in
    ``injected["dynamodb_lost_replies"]``.

    Reproducible: each fault is drawn from a hash (BLAKE2b) of ``seed``, the kind, what identifies the call
    and how many times that same identity was seen before, never from the order threads run in. A call
    is identified by its service, its operation, its tables or function, and its content: a DynamoDB
    call's items' keys, an invocation's qualifier and payload (``fault_calls``; a name CloudFormation
    generated counts without its unique ending, new on each deployment). So the same seed fails the same
    calls in every run that makes them, whatever the timing, in this session or the next: the second
    write of one item by one operation, the first invocation of a function with one payload. The limit:
    identical calls are interchangeable, so two that race (two executions writing one item at once, one
    payload invoked twice at once) may swap their faults. ``seed``: None draws one at random, kept in
    ``seed`` to replay.

    Aimed (keyword-only): ``tables``, the names (or ARNs) of the DynamoDB tables whose item calls draw
    faults, None (the default) every table, ``()`` none; ``functions``, the names (or ARNs) of the Lambda
    functions whose invocations draw faults, None (the default) every function, ``()`` none. A transaction
    is aimed when one of its tables is. The idempotency table alone:
    ``tables=(deployment.table_name("Idempotency"),)``.

    What happened (read them after the block): ``injected`` counts the faults by kind,
    ``injected_by_resource`` by ``(kind, table or function)``, ``failed_invocations`` the failed
    invocations by function, ``calls`` the item calls and invocations seen by table or function (aimed or
    not), and ``log`` holds each fault (``Injected``) in the order injected.
    """

    dynamodb: float = 0.0
    lambda_invocations: float = 0.0
    dynamodb_lost_replies: float = 0.0
    lost_reply_writes: tuple[int, ...] = ()
    dynamodb_error: str = "ProvisionedThroughputExceededException"
    seed: int | None = None
    injected: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    # Lambda invocations failed, by function name: what ``injected["lambda"]`` counts, told apart (a function
    # that other traffic invokes meanwhile, such as the release function, draws faults too unless aimed).
    failed_invocations: Counter[str] = field(default_factory=Counter)
    tables: tuple[str, ...] | None = field(default=None, kw_only=True)
    functions: tuple[str, ...] | None = field(default=None, kw_only=True)
    lambda_error: str | None = field(default=None, kw_only=True)
    injected_by_resource: Counter[tuple[str, str]] = field(default_factory=Counter, init=False)
    calls: Counter[str] = field(default_factory=Counter, init=False)
    log: list[Injected] = field(default_factory=list, init=False, repr=False)

    def __post_init__(self) -> None:
        for name in ("dynamodb", "lambda_invocations", "dynamodb_lost_replies"):
            rate = getattr(self, name)
            if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0.0 <= rate <= 1.0:
                raise ValueError(f"Faults.{name} must be a fraction from 0.0 to 1.0, got {rate!r}")
        writes = self.lost_reply_writes
        if not isinstance(writes, tuple | list) or not all(
            isinstance(number, int) and not isinstance(number, bool) and number >= 1 for number in writes
        ):
            raise ValueError(f"Faults.lost_reply_writes must be a tuple of write numbers from 1, such as (1,), got {writes!r}")
        self.lost_reply_writes = tuple(writes)
        if self.seed is None:
            self.seed = secrets.randbits(64)
        elif isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ValueError(f"Faults.seed must be an int (or None for a random one), got {self.seed!r}")
        self.dynamodb_answer: AwsError = dynamodb_error(self.dynamodb_error)
        self.lambda_answer: AwsError | None = lambda_error(self.lambda_error)
        self.tables = _names("tables", self.tables, table_name)
        self.functions = _names("functions", self.functions, lambda name: function_name(name)[0])
        self._lock = threading.Lock()
        self._seen: Counter[bytes] = Counter()  # by identity's digest: the calls seen so far
        self._writes = 0  # the item writes to the aimed tables applied so far

    def aimed(self, call: Call) -> bool:
        """Whether ``call`` is one the faults are aimed at (``tables``, ``functions``)."""
        chosen = self.tables if call.service == "dynamodb" else self.functions
        return chosen is None or any(resource in chosen for resource in call.resources)

    def observe(self, call: Call) -> int:
        """Count ``call`` in ``calls`` and return how many calls of its identity came before it."""
        with self._lock:
            for resource in call.resources:
                self.calls[resource] += 1
            if not (self.dynamodb or self.lambda_invocations or self.dynamodb_lost_replies):
                return 0  # nothing is drawn: no identity to remember
            digest = hashlib.blake2b(call.identity.encode(), digest_size=16).digest()
            occurrence = self._seen[digest]
            self._seen[digest] += 1
            return occurrence

    def fraction(self, kind: str, call: Call, occurrence: int) -> float:
        """A fraction from 0.0 to 1.0 fixed by the seed, ``kind``, the call's identity and ``occurrence``."""
        text = f"{self.seed}\x1f{kind}\x1f{call.identity}\x1f{occurrence}"
        return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big") / 2**64

    def hit(self, kind: str, call: Call, occurrence: int) -> bool:
        """Whether ``call``, the ``occurrence``-th of its identity, draws a fault of ``kind``."""
        rate = {"dynamodb": self.dynamodb, "lambda": self.lambda_invocations}.get(kind, self.dynamodb_lost_replies)
        return bool(rate) and self.aimed(call) and self.fraction(kind, call, occurrence) < rate

    def reply_lost(self, call: Call, occurrence: int) -> bool:
        """Whether the reply of the item write DynamoDB just applied is lost: its number is one of
        ``lost_reply_writes``, or it draws a ``dynamodb_lost_replies`` fault."""
        if not self.aimed(call):
            return False
        with self._lock:
            self._writes += 1
            chosen = self._writes in self.lost_reply_writes
        return chosen or self.hit("dynamodb_lost_replies", call, occurrence)

    def lambda_answer_for(self, call: Call, occurrence: int) -> AwsError:
        """``lambda_error``'s answer, or, if None, one of the two drawn as faults are."""
        if self.lambda_answer is not None:
            return self.lambda_answer
        throttled = self.fraction("lambda_error", call, occurrence) < 0.5
        return LAMBDA_ERRORS["TooManyRequestsException" if throttled else "ServiceException"]

    def record(self, kind: str, call: Call, occurrence: int) -> None:
        """Count a fault of ``kind`` injected into ``call``."""
        with self._lock:
            self.injected[kind] += 1
            for resource in call.resources:
                self.injected_by_resource[(kind, resource)] += 1
            if kind == "lambda":
                self.failed_invocations[call.resources[0]] += 1
            self.log.append(Injected(kind, call.operation, call.resources, call.shown, occurrence))


def _names(option: str, names: Any, normal: Callable[[str], str]) -> tuple[str, ...] | None:
    """``names`` (None, or a tuple or list of non-empty names or ARNs) as a tuple of names."""
    if names is None:
        return None
    if isinstance(names, str) or not isinstance(names, tuple | list | set | frozenset):
        raise ValueError(f"Faults.{option} must be a tuple of names (None: all, (): none), such as ('Orders',), got {names!r}")
    if not all(isinstance(name, str) and name for name in names):
        raise ValueError(f"Faults.{option} must name each one by a non-empty string, got {names!r}")
    return tuple(normal(name) for name in names)


def install(patch: Patch, current: Callable[[], Faults]) -> None:
    """Draw ``current()``'s faults once per DynamoDB or Lambda API request. Per request, not per
    backend call: moto's UpdateItem reads the item first (two backend calls), which would fail it at
    51% for a 30% rate and, 11 times in a row, exhaust a state's 10 retries about once in 40 runs."""
    from moto.awslambda.responses import LambdaResponse
    from moto.dynamodb.responses import DynamoHandler

    for method in DYNAMODB_OPERATIONS:
        original = getattr(DynamoHandler, method)

        def faulty_item_operation(handler: Any, _original: Callable[..., Any] = original, _method: str = method) -> Any:
            faults = current()
            call = dynamodb_call(handler, _method)
            occurrence = faults.observe(call)
            if faults.hit("dynamodb", call, occurrence):
                faults.record("dynamodb", call, occurrence)
                raise InjectedFault(faults.dynamodb_answer, "dynamodb", service="dynamodb")
            reply = _original(handler)
            if _method != "get_item" and faults.reply_lost(call, occurrence):
                faults.record("dynamodb_lost_replies", call, occurrence)
                raise InjectedFault(LOST_REPLY, "dynamodb_lost_replies", service="dynamodb")
            return reply

        patch(DynamoHandler, method, faulty_item_operation)

    invoke = LambdaResponse.invoke

    def faulty_invoke(response: Any) -> Any:
        faults = current()
        call = lambda_call(response)
        occurrence = faults.observe(call)
        if faults.hit("lambda", call, occurrence):
            faults.record("lambda", call, occurrence)
            raise InjectedFault(faults.lambda_answer_for(call, occurrence), "lambda", service="lambda")
        return invoke(response)

    patch(LambdaResponse, "invoke", faulty_invoke)
