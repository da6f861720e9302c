"""Step Functions' status-change events of Standard executions, delivered to the rules that match them."""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .._readers.assembly import ACCOUNT
from .runs import is_express
from .timestamps import aws_timestamp

if TYPE_CHECKING:
    from . import LocalEmulator
    from .patches import Patch


class StatusChangeEvents:
    """Gap: moto neither emits Step Functions' "Execution Status Change" events nor delivers
    EventBridge events to Lambda targets. This does both, the way EventBridge does: when an
    execution ends, an event in the AWS shape goes to every rule whose pattern (matched by moto's
    own matcher) accepts it, and each Lambda target of such a rule is invoked with it,
    asynchronously, moments later."""

    def __init__(self, emulator: LocalEmulator) -> None:
        import queue

        self._emulator = emulator
        # Each ended execution, and whether its event is dropped (decided when it ended).
        self._ended: queue.Queue[tuple[str, bool] | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._dropping = threading.Event()
        # Executions that are ending or ended whose event is not delivered yet (see ``settle``).
        self._undelivered = 0
        self._delivered = threading.Condition()

    def install(self, patch: Patch) -> None:
        from moto.stepfunctions.parser.backend.execution import BaseExecutionWorkerCommunication

        original = BaseExecutionWorkerCommunication.terminated

        def terminated(communication: Any) -> None:
            # Counted before the end is visible, so that whoever saw it end also waits for its event.
            with self._delivered:
                self._undelivered += 1
            dropping = self._dropping.is_set()  # it ends now: its event is lost if it ends inside dropped()
            try:
                original(communication)
            finally:
                self._ended.put((communication.execution.exec_arn, dropping))

        patch(BaseExecutionWorkerCommunication, "terminated", terminated)

    def settle(self, timeout: float) -> None:
        """Wait until the event of every execution that has ended is delivered (each matching rule's
        Lambda targets have returned); raises ``TimeoutError`` if some still are not after ``timeout``
        seconds."""
        with self._delivered:
            if not self._delivered.wait_for(lambda: self._undelivered == 0, timeout):
                raise TimeoutError(f"{self._undelivered} status-change event(s) still undelivered after {timeout} s")

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="status-change-events", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._ended.put(None)
        if self._thread is not None:
            self._thread.join(timeout=5)

    @contextlib.contextmanager
    def dropped(self, settle_timeout: float = 60.0) -> Iterator[None]:
        """Events of executions that end while the block runs are lost, as if EventBridge never
        delivered them (to test what happens without them); those of executions that end before or
        after it are delivered, however late. After the block, waits for the events of every
        execution that ended (``settle``), raising ``TimeoutError`` past ``settle_timeout`` seconds."""
        self._dropping.set()
        try:
            yield
        finally:
            self._dropping.clear()
        self.settle(settle_timeout)

    def _run(self) -> None:
        while (ended := self._ended.get()) is not None:
            execution_arn, dropped = ended
            try:
                client = self._emulator.client("stepfunctions")
                # AWS sends status-change events for Standard executions only.
                if not dropped and not is_express(client, execution_arn):
                    self._deliver(client.describe_execution(executionArn=execution_arn))
            except Exception:  # a delivery that fails is lost, as a Lambda target's would be
                logging.getLogger(__name__).debug("event for %s not delivered", execution_arn, exc_info=True)
            finally:
                with self._delivered:
                    self._undelivered -= 1
                    self._delivered.notify_all()

    def _deliver(self, execution: dict[str, Any]) -> None:
        from moto.events.models import EventPattern

        event = {
            "version": "0",
            "id": str(uuid.uuid4()),
            "detail-type": "Step Functions Execution Status Change",
            "source": "aws.states",
            "account": ACCOUNT,
            "time": aws_timestamp(execution["stopDate"].isoformat()),
            "region": self._emulator.region,
            "resources": [execution["executionArn"]],
            "detail": {
                "executionArn": execution["executionArn"],
                "stateMachineArn": execution["stateMachineArn"],
                "name": execution["name"],
                "status": execution["status"],
                "startDate": int(execution["startDate"].timestamp() * 1000),
                "stopDate": int(execution["stopDate"].timestamp() * 1000),
                "input": execution.get("input"),
                "output": execution.get("output"),
                "redriveCount": execution.get("redriveCount", 0),
            },
        }
        events, lambdas = self._emulator.client("events"), self._emulator.client("lambda")
        for rule in events.list_rules()["Rules"]:
            if not rule.get("EventPattern") or not EventPattern.load(rule["EventPattern"]).matches_event(event):
                continue
            for target in events.list_targets_by_rule(Rule=rule["Name"])["Targets"]:
                if ":lambda:" in target["Arn"]:
                    lambdas.invoke(FunctionName=target["Arn"], Payload=json.dumps(event).encode())
