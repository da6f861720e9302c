"""The delivery loop: an SQS queue of the emulator drained through an EventBridge pipe into a deployed state
machine, as AWS documents Pipes to do it, so that a test sees a message's whole life: its receives, its
executions, its deletion or its move to the dead-letter queue.

What is modelled, and where AWS says so:

- A pipe receives up to its batch size of messages at once (SQS's default 10: EventBridge user guide,
  "Amazon SQS as a source") and sends the target a JSON array of SQS records, even of one ("Amazon
  EventBridge Pipes batching and concurrency"): each record as Lambda and Pipes document it (its
  ``messageId``, ``receiptHandle``, ``body``, ``attributes`` with ``ApproximateReceiveCount``).
- ``REQUEST_RESPONSE`` (the default for a Step Functions target) invokes an Express workflow synchronously:
  a failed execution leaves every message of the batch on the queue, to come again after the visibility
  timeout ("Pipes retries customer errors up to the max receive count on the source queue": "EventBridge
  Pipes error handling and troubleshooting"); a succeeded one's ``{"batchItemFailures":
  [{"itemIdentifier": ...}]}`` leaves only those, and the rest are deleted. The whole batch fails where the
  response names a message id that is not in the batch, an empty or null one, or is not a list; an empty or
  null list is a success ("Amazon Simple Queue Service as a source", "Success and failure conditions").
  A Standard workflow cannot be invoked so ("REQUEST_RESPONSE is not supported for STANDARD state machine
  workflows": the Pipes API's PipeTargetStateMachineParameters): ``Pipe`` refuses it.
- ``FIRE_AND_FORGET`` starts the execution asynchronously: the batch is deleted once the execution starts,
  whatever it ends in ("Pipes can't retry errors thrown from within the logic of a Step Functions standard
  workflow because this target must be invoked asynchronously": the troubleshooting page).
- A message left on the queue is received again once its visibility timeout passes, with a new receipt
  handle and a receive count one more; past the queue's ``maxReceiveCount`` SQS moves it to the
  dead-letter queue (SQS developer guide, "Using dead-letter queues"). Time is not waited for: each
  ``cycle()`` ends by making what it left on the queue visible again, as if the timeout had passed.
- A lost acknowledgement (``lose_acknowledgements``): the execution succeeded but the deletion never
  happened, so the whole batch comes again (at-least-once delivery, SQS developer guide).

The emulator's own SQS (moto) keeps the messages, counts the receives and moves them to the dead-letter
queue; this module plays the pipe between the queue and the state machine.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from .runs import Deployment, Execution

REQUEST_RESPONSE = "REQUEST_RESPONSE"
FIRE_AND_FORGET = "FIRE_AND_FORGET"
SQS_BATCH_SIZE = 10  # a pipe's batch from SQS when its batchSize is not set


@dataclass
class Cycle:
    """One batch through the pipe: the messages it sent (their ids), the execution, and what became of them."""

    message_ids: list[str]
    execution: Execution | None
    deleted: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)  # on the queue, to come again (or go to the dead-letter queue)
    acknowledgement_lost: bool = False  # what it would have deleted was left on the queue


class Pipe:
    """A pipe from the queue ``queue_url`` to the state machine ``state_machine`` (a construct id or path
    part of ``deployment``), with its batch size and invocation type; ``lose_acknowledgements`` batches
    whose deletion is lost after they succeeded."""

    def __init__(
        self,
        deployment: Deployment,
        queue_url: str,
        state_machine: str,
        *,
        batch_size: int = SQS_BATCH_SIZE,
        invocation: str = REQUEST_RESPONSE,
        lose_acknowledgements: int = 0,
    ) -> None:
        if invocation not in (REQUEST_RESPONSE, FIRE_AND_FORGET):
            raise ValueError(f"invocation: {invocation!r} is neither {REQUEST_RESPONSE} nor {FIRE_AND_FORGET}")
        self.deployment, self.queue_url, self.state_machine = deployment, queue_url, state_machine
        self.batch_size, self.invocation, self.lose_acknowledgements = batch_size, invocation, lose_acknowledgements
        self.sqs = deployment.emulator.client("sqs")
        described = deployment.emulator.client("stepfunctions").describe_state_machine(
            stateMachineArn=deployment.state_machine_arn(state_machine)
        )
        if invocation == REQUEST_RESPONSE and described["type"] != "EXPRESS":
            raise ValueError(
                f"{state_machine} is a Standard workflow, which a pipe can only start with {FIRE_AND_FORGET} "
                "(REQUEST_RESPONSE is not supported for STANDARD state machine workflows)"
            )
        self.queue_arn = self.sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        self.cycles: list[Cycle] = []

    def cycle(self) -> Cycle | None:
        """Receive one batch, invoke the target with it, delete what the outcome says; None when the queue
        has nothing to receive."""
        received: list[dict[str, Any]] = []
        while len(received) < self.batch_size:  # ReceiveMessage returns 10 at most
            more = self.sqs.receive_message(
                QueueUrl=self.queue_url,
                MaxNumberOfMessages=min(self.batch_size - len(received), 10),
                AttributeNames=["All"],
                MessageAttributeNames=["All"],
            ).get("Messages", [])
            if not more:
                break
            received += more
        if not received:
            return None
        batch = [self._record(message) for message in received]
        handles = {message["MessageId"]: message["ReceiptHandle"] for message in received}
        ids = list(handles)
        if self.invocation == FIRE_AND_FORGET:
            arn = self.deployment.start(self.state_machine, batch)
            done = Cycle(ids, self.deployment.wait(arn), deleted=ids)
        else:
            execution = self.deployment.run(self.state_machine, batch)
            failed = self._failed(execution, ids)
            done = Cycle(ids, execution, deleted=[i for i in ids if i not in failed], left=[i for i in ids if i in failed])
        if done.deleted and self.lose_acknowledgements > 0:
            self.lose_acknowledgements -= 1
            done.left, done.deleted, done.acknowledgement_lost = ids, [], True
        for message_id in done.deleted:
            self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=handles[message_id])
        for message_id in done.left:  # its visibility timeout passes
            self.sqs.change_message_visibility(QueueUrl=self.queue_url, ReceiptHandle=handles[message_id], VisibilityTimeout=0)
        self.cycles.append(done)
        return done

    def drain(self, max_cycles: int = 100) -> list[Cycle]:
        """Cycle until the queue has nothing to receive (what is left has been deleted or moved to the
        dead-letter queue); the cycles run."""
        start = len(self.cycles)
        for _ in range(max_cycles):
            if self.cycle() is None:
                return self.cycles[start:]
        raise RuntimeError(f"the queue still had messages after {max_cycles} cycles")

    @staticmethod
    def _failed(execution: Execution, ids: list[str]) -> set[str]:
        """The messages a synchronous invocation's outcome leaves on the queue."""
        if execution.status != "SUCCEEDED":
            return set(ids)
        output = execution.output
        failures = output.get("batchItemFailures") if isinstance(output, dict) else None
        if failures is None or failures == []:
            return set()
        if not isinstance(failures, list):
            return set(ids)
        named = {failure.get("itemIdentifier") if isinstance(failure, dict) else None for failure in failures}
        return set(ids) if not named <= set(ids) else {name for name in ids if name in named}

    def _record(self, message: dict[str, Any]) -> dict[str, Any]:
        """A received message as the pipe hands it to its target: AWS's SQS record."""
        attributes = message.get("Attributes", {})
        arn = self.queue_arn
        return {
            "messageId": message["MessageId"],
            "receiptHandle": message["ReceiptHandle"],
            "body": message["Body"],
            "attributes": {
                name: attributes[name]
                for name in ("ApproximateReceiveCount", "SentTimestamp", "SenderId", "ApproximateFirstReceiveTimestamp")
                if name in attributes
            },
            "messageAttributes": message.get("MessageAttributes", {}),
            "md5OfBody": message.get("MD5OfBody") or hashlib.md5(message["Body"].encode(), usedforsecurity=False).hexdigest(),
            "eventSource": "aws:sqs",
            "eventSourceARN": arn,
            "awsRegion": arn.split(":")[3],
        }


def messages_in(deployment: Deployment, queue_url: str) -> list[dict[str, Any]]:
    """Every message on the queue ``queue_url`` (a dead-letter queue, say) once the loop is done: each
    ``{"messageId", "body"}``. Reading receives them, hidden for a minute."""
    sqs = deployment.emulator.client("sqs")
    found: dict[str, dict[str, Any]] = {}
    while received := sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, VisibilityTimeout=60).get("Messages"):
        found.update({message["MessageId"]: {"messageId": message["MessageId"], "body": message["Body"]} for message in received})
    return list(found.values())
