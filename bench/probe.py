"""What an execution history cannot show, observed inside the emulator: every DynamoDB call with the
item sizes it touched (for read and write units), calls made inside Lambda functions (and S3 calls
there), and how long each Lambda handler ran.

Installed on top of a running ``LocalEmulator`` and removed before it stops. It changes nothing that
is measured: it only observes moto's DynamoDB and S3 backends and the harness's in-process Lambda.
Each call is attributed to the execution and state whose task made it (moto runs every task in its
own thread, and a Lambda handler in the thread of the task that invoked it).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from idempotent_constructs.testing import LocalEmulator, item_size

_OPERATIONS = {
    "get_item": "GetItem",
    "put_item": "PutItem",
    "update_item": "UpdateItem",
    "delete_item": "DeleteItem",
    "transact_write_items": "TransactWriteItems",
}


@dataclass
class Call:
    """One DynamoDB or S3 call as the backend saw it."""

    service: str  # "dynamodb" | "s3"
    operation: str  # "GetItem", ..., "PutObject", "GetObject"
    execution: str | None  # the execution ARN of the task that made it (None: outside any task)
    state: str | None
    function: str | None  # the Lambda function it was made from (None: the Step Functions integration)
    sizes: list[tuple[int, int]] = field(default_factory=list)  # (bytes before, bytes after) per item
    new_sizes: list[int] = field(default_factory=list)  # bytes of the item a put would write, per item
    failed: bool = False
    consistent: bool = False  # a strongly consistent read
    at: float = field(default_factory=time.time)  # when it was made (epoch seconds)


@dataclass
class Invocation:
    function: str
    execution: str | None
    state: str | None
    seconds: float
    memory_mb: int
    architecture: str
    at: float = 0.0  # when it started (epoch seconds)


class Probe:
    """Install with ``with Probe(emulator) as probe:``; read ``probe.calls`` and ``probe.invocations``."""

    def __init__(self, emulator: LocalEmulator) -> None:
        self.emulator = emulator
        self.calls: list[Call] = []
        self.invocations: list[Invocation] = []
        self._local = threading.local()
        self._lock = threading.RLock()
        self._undo: list[Callable[[], None]] = []

    # --- context of the current thread ------------------------------------------------------------
    def _context(self) -> tuple[str | None, str | None, str | None]:
        return (
            getattr(self._local, "execution", None),
            getattr(self._local, "state", None),
            getattr(self._local, "function", None),
        )

    def _set(self, owner: Any, name: str, value: Any) -> None:
        original = getattr(owner, name)
        setattr(owner, name, value)
        self._undo.append(lambda: setattr(owner, name, original))

    def __enter__(self) -> Probe:
        from moto.dynamodb.responses import DynamoHandler
        from moto.s3.responses import S3Response
        from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service import (
            StateTaskService,
        )
        from moto.stepfunctions.parser.asl.component.state.exec.state_task.state_task_lambda import StateTaskLambda

        probe, local = self, self._local

        # Service integrations and plain Lambda tasks (the CDK's LambdaInvoke with
        # payload_response_only) each evaluate one attempt in a thread of their own.
        for task_class in (StateTaskService, StateTaskLambda):

            def task(service_task: Any, env: Any, _original: Callable[..., Any] = task_class._eval_execution) -> None:
                data = env.states.context_object.context_object_data
                saved = (getattr(local, "execution", None), getattr(local, "state", None))
                local.execution, local.state = data["Execution"]["Id"], data["State"]["Name"]
                try:
                    _original(service_task, env)
                finally:
                    local.execution, local.state = saved

            self._set(task_class, "_eval_execution", task)

        lambdas = self.emulator.lambdas
        original_invoke = lambdas.invoke

        def invoke(function: Any, event: Any) -> Any:
            saved = getattr(local, "function", None)
            local.function = function.function_name
            at, started = time.time(), time.perf_counter()
            try:
                return original_invoke(function, event)
            finally:
                seconds = time.perf_counter() - started
                local.function = saved
                execution, state, _ = probe._context()
                probe.invocations.append(
                    Invocation(
                        function.function_name,
                        execution,
                        state,
                        seconds,
                        int(function.memory_size),
                        (function.architectures or ["x86_64"])[0],
                        at,
                    )
                )

        lambdas.invoke = invoke
        self._undo.append(lambda: setattr(lambdas, "invoke", original_invoke))

        # At the API (moto's request handler), not the backend: moto's own handlers read items from the
        # backend to answer a write, which are no calls of the API.
        for method, operation in _OPERATIONS.items():
            self._set(DynamoHandler, method, self._observed_dynamodb(getattr(DynamoHandler, method), method, operation))
        for method, operation in (("put_object", "PutObject"), ("get_object", "GetObject")):
            self._set(S3Response, method, self._observed_s3(getattr(S3Response, method), operation))
        return self

    def __exit__(self, *exc_info: Any) -> None:
        while self._undo:
            self._undo.pop()()

    def reset(self) -> None:
        with self._lock:
            self.calls.clear()
            self.invocations.clear()

    # --- DynamoDB -----------------------------------------------------------------------------------
    @staticmethod
    def _targets(method: str, body: dict[str, Any]) -> list[tuple[str, dict, dict | None]]:
        """(table, key, item a put would write) of each item a request touches."""
        if method == "transact_write_items":
            targets = []
            for entry in body["TransactItems"]:
                ((kind, operation),) = entry.items()
                item = operation.get("Item")
                targets.append((operation["TableName"], operation.get("Key") or item, item if kind == "Put" else None))
            return targets
        if method == "put_item":
            return [(body["TableName"], body["Item"], body["Item"])]
        return [(body["TableName"], body["Key"], None)]

    @staticmethod
    def _size(backend: Any, table_name: str, key: dict) -> int:
        table = backend.get_table(table_name)
        names = [table.hash_key_attr] + ([table.range_key_attr] if table.range_key_attr else [])
        hash_value, range_value = backend.get_keys_value(table, {name: key[name] for name in names})
        item = table.get_item(hash_value, range_value)
        return item_size(item.to_json()["Attributes"]) if item is not None else 0

    def _observed_dynamodb(self, original: Callable[..., Any], method: str, operation: str) -> Callable[..., Any]:
        probe = self

        def observed(handler: Any) -> Any:
            execution, state, function = probe._context()
            call = Call("dynamodb", operation, execution, state, function)
            body = handler.body
            call.consistent = bool(body.get("ConsistentRead"))
            backend = handler.dynamodb_backend
            with probe._lock:
                targets = self._targets(method, body)
                before = [self._size(backend, table, key) for table, key, _ in targets]
                call.new_sizes = [item_size(item) if item else 0 for _, _, item in targets]
                try:
                    return original(handler)
                except Exception:
                    call.failed = True
                    raise
                finally:
                    after = [self._size(backend, table, key) for table, key, _ in targets]
                    call.sizes = list(zip(before, after, strict=False))
                    probe.calls.append(call)

        return observed

    def _observed_s3(self, original: Callable[..., Any], operation: str) -> Callable[..., Any]:
        probe = self

        def observed(handler: Any, *args: Any, **kwargs: Any) -> Any:
            execution, state, function = probe._context()
            if function is not None:  # asset uploads and the harness's own reads are not counted
                with probe._lock:
                    probe.calls.append(Call("s3", operation, execution, state, function))
            return original(handler, *args, **kwargs)

        return observed

    # --- per execution ------------------------------------------------------------------------------
    def calls_of(self, execution_arn: str) -> list[Call]:
        with self._lock:
            return [call for call in self.calls if call.execution == execution_arn]

    def invocations_of(self, execution_arn: str) -> list[Invocation]:
        with self._lock:
            return [invocation for invocation in self.invocations if invocation.execution == execution_arn]
