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
    execution ends, or a redrive sets it running again (``gaps.redrive_execution``), an event in the
    AWS shape, its detail the execution as DescribeExecution described it then, goes to every rule
    whose pattern (matched by moto's own matcher) accepts it, and each Lambda target of such a rule
    is invoked with it, asynchronously, moments later."""

    def __init__(self, emulator: LocalEmulator) -> None:
        import queue

        self._emulator = emulator
        # Each execution that ended (or was redriven), whether its event is dropped (decided then), and
        # how DescribeExecution described it then (None: described when delivered).
        self._ended: queue.Queue[tuple[str, bool, dict[str, Any] | None] | None] = queue.Queue()
        self._client: Any = None
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
                arn = communication.execution.exec_arn
                self._ended.put((arn, dropping, self._described(arn)))

        def redriven(communication: Any) -> None:
            # gaps.redrive_execution calls it when a redriven attempt starts: the status changes to RUNNING.
            with self._delivered:
                self._undelivered += 1
            arn = communication.execution.exec_arn
            self._ended.put((arn, self._dropping.is_set(), self._described(arn)))

        patch(BaseExecutionWorkerCommunication, "terminated", terminated)
        patch(BaseExecutionWorkerCommunication, "redriven", redriven)

    def _described(self, execution_arn: str) -> dict[str, Any] | None:
        """The execution as DescribeExecution describes it now (a redrive may change it before the event
        is delivered); None for an Express one, which sends no event, or if it cannot be described."""
        try:
            if self._client is None:
                self._client = self._emulator.client("stepfunctions")
            if is_express(self._client, execution_arn):
                return None
            return dict(self._client.describe_execution(executionArn=execution_arn))
        except Exception:
            logging.getLogger(__name__).debug("%s not described", execution_arn, exc_info=True)
            return None

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
            execution_arn, dropped, described = ended
            try:
                client = self._emulator.client("stepfunctions")
                # AWS sends status-change events for Standard executions only.
                if not dropped and not is_express(client, execution_arn):
                    self._deliver(described or client.describe_execution(executionArn=execution_arn))
            except Exception:  # a delivery that fails is lost, as a Lambda target's would be
                logging.getLogger(__name__).debug("event for %s not delivered", execution_arn, exc_info=True)
            finally:
                with self._delivered:
                    self._undelivered -= 1
                    self._delivered.notify_all()

    def _deliver(self, execution: dict[str, Any]) -> None:
        from moto.events.models import EventPattern

        def epoch_milliseconds(name: str) -> int | None:
            moment = execution.get(name)
            return None if moment is None else int(moment.timestamp() * 1000)

        changed = execution.get("stopDate") or execution.get("redriveDate") or execution["startDate"]
        event = {
            "version": "0",
            "id": str(uuid.uuid4()),
            "detail-type": "Step Functions Execution Status Change",
            "source": "aws.states",
            "account": ACCOUNT,
            "time": aws_timestamp(changed.isoformat()),
            "region": self._emulator.region,
            "resources": [execution["executionArn"]],
            "detail": {
                "executionArn": execution["executionArn"],
                "stateMachineArn": execution["stateMachineArn"],
                "name": execution["name"],
                "status": execution["status"],
                "startDate": epoch_milliseconds("startDate"),
                "stopDate": epoch_milliseconds("stopDate"),
                "input": execution.get("input"),
                "output": execution.get("output"),
                "redriveCount": execution.get("redriveCount", 0),
                "redriveDate": epoch_milliseconds("redriveDate"),
                "redriveStatus": execution.get("redriveStatus"),
                "redriveStatusReason": execution.get("redriveStatusReason"),
            },
        }
        events, lambdas = self._emulator.client("events"), self._emulator.client("lambda")
        for rule in events.list_rules()["Rules"]:
            if not rule.get("EventPattern") or not EventPattern.load(rule["EventPattern"]).matches_event(event):
                continue
            for target in events.list_targets_by_rule(Rule=rule["Name"])["Targets"]:
                if ":lambda:" in target["Arn"]:
                    lambdas.invoke(FunctionName=target["Arn"], Payload=json.dumps(event).encode())
