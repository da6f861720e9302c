"""An SQS queue of the emulator drained through an EventBridge pipe into a deployed state machine (``Pipe``), or
through a Lambda event source mapping into a deployed starter function (``EventSourceMapping``), as AWS documents
them. What is modelled, and where AWS says so:

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
- An event source mapping invokes its function synchronously with ``{"Records": [...]}``, the same SQS records,
  up to its batch size (10 by default): a function error leaves the whole batch on the queue; a success deletes
  it, unless the mapping's ``FunctionResponseTypes`` holds ``ReportBatchItemFailures``, where the function's
  ``batchItemFailures`` leave those messages, read by the rules above (Lambda developer guide, "Handling errors
  for an SQS event source in Lambda", "Implementing partial batch responses"). Without it a partial batch
  response is ignored: the failed records are deleted with the rest.
- A lost acknowledgement (``lose_acknowledgements``): the execution succeeded but the deletion never
  happened, so the whole batch comes again (at-least-once delivery, SQS developer guide).
- A visibility timeout that lapses while the execution still runs (a pipe's ``visibility_lapses``, for
  ``REQUEST_RESPONSE``): its messages are received again, with new receipt handles and a receive count one
  more, and delivered in another batch whose execution runs beside the first. The first one's deletion then
  holds receipt handles SQS has replaced: "If you receive a message more than once, the receipt handle you get
  each time you receive the message is different. When you request DeleteMessage, if you don't provide the most
  recently received receipt handle for the message, the request will still succeed, but the message might not
  be deleted" (SQS API reference, DeleteMessage): modelled at its worst, not deleted; the later batch's outcome
  decides.
  (A starter function's mapping is invoked synchronously here: its lapse is not modelled.)
- A redrive from the dead-letter queue (``redrive``), as ``StartMessageMoveTask`` does it, which the emulator
  lacks: each message moves to the source queue, oldest first, as a new message with its body and message
  attributes ("All redriven messages are considered new messages with a new messageID and enqueueTime", and the
  retention period starts again: SQS developer guide, "Learn how to configure a dead-letter queue redrive"). A
  FIFO queue's redrive (message groups, the deduplication id) is not modelled: ``redrive`` refuses one.
- A FIFO queue (moto's): a receive returns a group's messages in order and none of a group with a message in
  flight from an earlier receive; a message left on the queue comes again before its group's later ones; its
  records carry ``MessageGroupId``, ``MessageDeduplicationId`` and ``SequenceNumber``.

The emulator's own SQS (moto) keeps the messages, counts the receives and moves them to the dead-letter
queue; this module plays the pipe, or the mapping, between the queue and its target.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ..runs import Deployment
from .loop import Cycle, Loop, cycle_of, deployed, failures, logical_id_in

REQUEST_RESPONSE = "REQUEST_RESPONSE"
FIRE_AND_FORGET = "FIRE_AND_FORGET"
SQS_BATCH_SIZE = 10  # a pipe's batch from SQS when its batchSize is not set
# A FIFO queue's record's attributes besides (Powertools' SqsEvent schema; Lambda developer guide, "Using
# Lambda with Amazon SQS", its FIFO example event).
FIFO_ATTRIBUTES = ("SequenceNumber", "MessageGroupId", "MessageDeduplicationId")


class _Poller(Loop):
    """What a pipe and an event source mapping share: receiving a batch from the queue, deleting what the
    target's outcome says, and leaving the rest to come again."""

    def __init__(self, deployment: Deployment, queue_url: str, *, batch_size: int, lose_acknowledgements: int) -> None:
        self.deployment, self.queue_url = deployment, queue_url
        self.batch_size, self.lose_acknowledgements = batch_size, lose_acknowledgements
        self.sqs = deployment.emulator.client("sqs")
        self.queue_arn = self.sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        self.cycles: list[Cycle] = []

    def _deliver(self, batch: list[dict[str, Any]], ids: list[str]) -> Cycle:
        raise NotImplementedError

    def cycle(self) -> Cycle | None:
        """Receive one batch, deliver it to the target, delete what the outcome says; None when the queue
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
        handles = {message["MessageId"]: message["ReceiptHandle"] for message in received}
        done = self._deliver([self._record(message) for message in received], list(handles))
        if done.deleted and self.lose_acknowledgements > 0:
            self.lose_acknowledgements -= 1
            done.left, done.deleted, done.acknowledgement_lost = done.message_ids, [], True
        for message_id in done.deleted:
            self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=handles[message_id])
        for message_id in done.left:  # its visibility timeout passes
            self.sqs.change_message_visibility(QueueUrl=self.queue_url, ReceiptHandle=handles[message_id], VisibilityTimeout=0)
        self.cycles.append(done)
        return done

    def _record(self, message: dict[str, Any]) -> dict[str, Any]:
        """A received message as a pipe or a mapping hands it over: AWS's SQS record."""
        attributes = message.get("Attributes", {})
        arn = self.queue_arn
        return {
            "messageId": message["MessageId"],
            "receiptHandle": message["ReceiptHandle"],
            "body": message["Body"],
            "attributes": {
                name: attributes[name]
                for name in (
                    "ApproximateReceiveCount",
                    "SentTimestamp",
                    "SenderId",
                    "ApproximateFirstReceiveTimestamp",
                    *FIFO_ATTRIBUTES,
                )
                if name in attributes
            },
            "messageAttributes": message.get("MessageAttributes", {}),
            "md5OfBody": message.get("MD5OfBody") or hashlib.md5(message["Body"].encode(), usedforsecurity=False).hexdigest(),
            "eventSource": "aws:sqs",
            "eventSourceARN": arn,
            "awsRegion": arn.split(":")[3],
        }


class Pipe(_Poller):
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
        visibility_lapses: int = 0,
    ) -> None:
        if invocation not in (REQUEST_RESPONSE, FIRE_AND_FORGET):
            raise ValueError(f"invocation: {invocation!r} is neither {REQUEST_RESPONSE} nor {FIRE_AND_FORGET}")
        super().__init__(deployment, queue_url, batch_size=batch_size, lose_acknowledgements=lose_acknowledgements)
        self.state_machine, self.invocation = state_machine, invocation
        self.visibility_lapses = visibility_lapses
        arn = state_machine if state_machine.startswith("arn:") else deployment.state_machine_arn(state_machine)
        described = deployment.emulator.client("stepfunctions").describe_state_machine(stateMachineArn=arn)
        if invocation == REQUEST_RESPONSE and described["type"] != "EXPRESS":
            raise ValueError(
                f"{state_machine} is a Standard workflow, which a pipe can only start with {FIRE_AND_FORGET} "
                "(REQUEST_RESPONSE is not supported for STANDARD state machine workflows)"
            )

    @classmethod
    def of(cls, deployment: Deployment, name: str, *, lose_acknowledgements: int = 0, visibility_lapses: int = 0) -> Pipe:
        """The pipe ``name`` (a construct id or path part) of the deployment, played as its template declares
        it: its SQS source queue and its state machine target (each a resource of the stack), its batch size
        and its invocation type, each AWS's default where left out."""
        properties = deployment.template["Resources"][deployment.logical_id("AWS::Pipes::Pipe", name)]["Properties"]
        source_parameters = properties.get("SourceParameters", {}).get("SqsQueueParameters", {})
        target_parameters = properties.get("TargetParameters", {}).get("StepFunctionStateMachineParameters", {})
        return cls(
            deployment,
            deployed(deployment, properties["Source"]),  # a queue's URL
            deployed(deployment, properties["Target"]),  # a state machine's ARN
            batch_size=source_parameters.get("BatchSize", SQS_BATCH_SIZE),
            invocation=target_parameters.get("InvocationType", REQUEST_RESPONSE),
            lose_acknowledgements=lose_acknowledgements,
            visibility_lapses=visibility_lapses,
        )

    def _deliver(self, batch: list[dict[str, Any]], ids: list[str]) -> Cycle:
        if self.invocation == FIRE_AND_FORGET:
            return Cycle(ids, self.deployment.wait(self.deployment.start(self.state_machine, batch)), deleted=ids)
        if self.visibility_lapses > 0:
            self.visibility_lapses -= 1
            return self._lapsing(batch, ids)
        execution = self.deployment.run(self.state_machine, batch)
        failed = set(ids) if execution.status != "SUCCEEDED" else failures(execution.output, ids)
        return cycle_of(ids, failed, execution=execution)

    def _lapsing(self, batch: list[dict[str, Any]], ids: list[str]) -> Cycle:
        """The batch's execution started, its messages' visibility timeout passes while it runs: they are
        received again in a cycle of its own, run beside it; what was received again this cycle's outcome
        neither deletes (its receipt handles are stale) nor leaves."""
        started = self.deployment.start(self.state_machine, batch)
        for record in batch:
            self.sqs.change_message_visibility(
                QueueUrl=self.queue_url, ReceiptHandle=record["receiptHandle"], VisibilityTimeout=0
            )
        again = self.cycle()
        execution = self.deployment.wait(started)
        received_again = set(again.message_ids) if again is not None else set()
        failed = set(ids) if execution.status != "SUCCEEDED" else failures(execution.output, ids)
        done = cycle_of(ids, failed, execution=execution, visibility_lapsed=True)
        done.deleted = [message_id for message_id in done.deleted if message_id not in received_again]
        done.left = [message_id for message_id in done.left if message_id not in received_again]
        return done


class EventSourceMapping(_Poller):
    """An event source mapping from the queue ``queue_url`` to the function ``function`` (a construct id or
    path part of ``deployment``), a starter function that hands the batch to a workflow; with
    ``report_batch_item_failures`` (``FunctionResponseTypes: ["ReportBatchItemFailures"]``) its partial batch
    response is read."""

    def __init__(
        self,
        deployment: Deployment,
        queue_url: str,
        function: str,
        *,
        batch_size: int = SQS_BATCH_SIZE,
        report_batch_item_failures: bool = True,
        lose_acknowledgements: int = 0,
    ) -> None:
        super().__init__(deployment, queue_url, batch_size=batch_size, lose_acknowledgements=lose_acknowledgements)
        self.function = deployment.physical_id("AWS::Lambda::Function", function)
        self.report_batch_item_failures = report_batch_item_failures

    @classmethod
    def of(cls, deployment: Deployment, function: str, *, lose_acknowledgements: int = 0) -> EventSourceMapping:
        """The event source mapping into the function ``function`` (a construct id or path part) of the
        deployment, played as its template declares it: its SQS queue (a resource of the stack), its batch size
        (AWS's default 10 where left out) and whether its ``FunctionResponseTypes`` hold
        ``ReportBatchItemFailures``. (The emulator leaves the mapping to this: ``gaps.event_source_mappings``.)"""
        logical_id = deployment.logical_id("AWS::Lambda::Function", function)
        resources = deployment.template["Resources"].values()
        mappings = [
            resource["Properties"]
            for resource in resources
            if resource["Type"] == "AWS::Lambda::EventSourceMapping"
            and logical_id_in(resource["Properties"]["FunctionName"]) == logical_id
        ]
        if len(mappings) != 1:
            raise LookupError(f"{function} has {len(mappings)} event source mappings in {deployment.stack_name}, not one")
        (properties,) = mappings
        return cls(
            deployment,
            deployed(deployment, properties["EventSourceArn"]),  # a queue's URL
            function,
            batch_size=properties.get("BatchSize", SQS_BATCH_SIZE),
            report_batch_item_failures="ReportBatchItemFailures" in properties.get("FunctionResponseTypes", []),
            lose_acknowledgements=lose_acknowledgements,
        )

    def _deliver(self, batch: list[dict[str, Any]], ids: list[str]) -> Cycle:
        answer = self.deployment.emulator.client("lambda").invoke(
            FunctionName=self.function, Payload=json.dumps({"Records": batch}).encode()
        )
        response = json.loads(answer["Payload"].read() or b"null")
        if "FunctionError" in answer:
            return cycle_of(ids, set(ids), execution=None, response=response)
        failed = failures(response, ids) if self.report_batch_item_failures else set()
        return cycle_of(ids, failed, execution=None, response=response)


def messages_in(deployment: Deployment, queue_url: str) -> list[dict[str, Any]]:
    """Every message on the queue ``queue_url`` (a dead-letter queue, say) once the loop is done: each
    ``{"messageId", "body"}``. Reading receives them, hidden for a minute."""
    sqs = deployment.emulator.client("sqs")
    found: dict[str, dict[str, Any]] = {}
    while received := sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, VisibilityTimeout=60).get("Messages"):
        found.update({message["MessageId"]: {"messageId": message["MessageId"], "body": message["Body"]} for message in received})
    return list(found.values())


def redrive(deployment: Deployment, dead_letter_queue_url: str, destination_url: str) -> dict[str, str]:
    """Redrive every message of the dead-letter queue ``dead_letter_queue_url`` to ``destination_url`` (its
    source queue), as a redrive task does (see above): ``{old message id: new message id}``."""
    sqs = deployment.emulator.client("sqs")
    for url in (dead_letter_queue_url, destination_url):
        if url.endswith(".fifo"):
            raise NotImplementedError(f"{url}: a FIFO queue's redrive (message groups, deduplication ids) is not modelled")
    moved: dict[str, str] = {}
    while received := sqs.receive_message(
        QueueUrl=dead_letter_queue_url, MaxNumberOfMessages=10, MessageAttributeNames=["All"], VisibilityTimeout=60
    ).get("Messages"):
        for message in received:
            attributes = message.get("MessageAttributes", {})
            sent = sqs.send_message(
                QueueUrl=destination_url, MessageBody=message["Body"], **({"MessageAttributes": attributes} if attributes else {})
            )
            sqs.delete_message(QueueUrl=dead_letter_queue_url, ReceiptHandle=message["ReceiptHandle"])
            moved[message["MessageId"]] = sent["MessageId"]
    return moved
