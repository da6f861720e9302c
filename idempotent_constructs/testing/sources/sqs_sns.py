"""SQS and SNS: a queue's message through a pipe (``sqs_via_pipe``, ``sqs_batch_via_pipe``) or through a
starter function (``sqs_via_starter``), and an SNS notification delivered into a queue (``sns_to_sqs``), each
with the pages of AWS's documentation that show its event and its duplicates.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..._readers.assembly import ACCOUNT, REGION
from .envelope import Delivery, _bytes, _content, _hex, _iso_millis, _millis, _moment, _uuid

# AWS's own sample values (the Pipes SQS sample's sender; the SNS-to-SQS sample's, SNS's principal).
_SQS_SENDER = "AIDAIENQZJOLO23YVJ4VO"
_SNS_SENDER = "AIDAISMY7JYY5F7RTT6AO"


# SQS


@dataclass(frozen=True)
class _SqsMessage:
    """One message in a queue: what stays the same on each receive of it."""

    message_id: str
    body: str
    sent: dt.datetime
    sender_id: str
    queue: str
    message_attributes: Mapping[str, Any]

    def record(self, attempt: int) -> dict[str, Any]:
        """The message as its ``attempt``-th receive gives it to Pipes or Lambda: AWS's SQS record."""
        first_receive = self.sent + dt.timedelta(milliseconds=20)
        handle = base64.b64encode(_bytes(132, "receipt-handle", self.message_id, attempt)).decode()
        return {
            "messageId": self.message_id,
            "receiptHandle": "AQEB" + handle,
            "body": self.body,
            "attributes": {
                "ApproximateReceiveCount": str(attempt),
                "SentTimestamp": str(_millis(self.sent)),
                "SenderId": self.sender_id,
                "ApproximateFirstReceiveTimestamp": str(_millis(first_receive)),
            },
            "messageAttributes": json.loads(json.dumps(dict(self.message_attributes))),
            "md5OfBody": hashlib.md5(self.body.encode(), usedforsecurity=False).hexdigest(),
            "eventSource": "aws:sqs",
            "eventSourceARN": f"arn:aws:sqs:{REGION}:{ACCOUNT}:{self.queue}",
            "awsRegion": REGION,
        }

    def sent_again(self, number: int) -> _SqsMessage:
        """The ``number``-th other message with this body: a new message id, sent a moment later."""
        return replace(
            self,
            message_id=_uuid("sqs-message", self.message_id, "again", number),
            sent=self.sent + dt.timedelta(seconds=number),
        )


def _sqs_delivery(messages: list[_SqsMessage], shape: Callable[[list[dict[str, Any]]], Any], generation: int = 0) -> Delivery:
    def duplicate() -> Delivery:
        return _sqs_delivery([message.sent_again(generation + 1) for message in messages], shape, generation + 1)

    def render(attempt: int) -> Any:
        return shape([message.record(attempt) for message in messages])

    return Delivery(render(1), render, _duplicate=duplicate)


def _sqs_message(
    body: str,
    *,
    message_id: str | None,
    seed: int,
    at: dt.datetime | None,
    queue: str,
    message_attributes: Mapping[str, Any] | None,
    sender_id: str,
    index: int = 0,
) -> _SqsMessage:
    return _SqsMessage(
        message_id=message_id or _uuid("sqs-message", queue, seed, index, _content(body)),
        body=body,
        sent=_moment(seed, at) + dt.timedelta(milliseconds=index),
        sender_id=sender_id,
        queue=queue,
        message_attributes=message_attributes or {},
    )


def sqs_via_pipe(
    body: str,
    *,
    message_id: str | None = None,
    message_attributes: Mapping[str, Any] | None = None,
    queue: str = "orders",
    seed: int = 0,
    at: dt.datetime | None = None,
) -> Delivery:
    """An SQS message through an EventBridge pipe to a Step Functions target: a JSON **array** of SQS
    records, even for one record (a batch of 1).

    Sample event (Pipes, SQS source):
    https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-pipes-sqs.html (the same record as
    Lambda's, https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html). The array even for one record:
    https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-pipes-batching-concurrency.html ("the entire
    JSON array is sent in one request", for Lambda and Step Functions targets).

    ``redelivered()``: the pipe's failed batch becomes visible again after the visibility timeout and is
    received again (eb-pipes-sqs.html): a new ``receiptHandle`` ("a new receipt handle is returned every
    time you receive a message", https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_Message.html)
    and ``ApproximateReceiveCount`` one more; ``messageId``, ``body``, ``SentTimestamp`` and
    ``ApproximateFirstReceiveTimestamp`` (the first receive's time) stay. A standard queue may also hand
    out a copy again without a failure (at-least-once delivery,
    https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/standard-queues-at-least-once-delivery.html).
    ``duplicated()``: the producer's ``SendMessage`` retried after a lost response makes a second message
    with the same body: a new ``messageId`` (and receipt handle, send and receive times).
    """
    message = _sqs_message(
        body, message_id=message_id, seed=seed, at=at, queue=queue, message_attributes=message_attributes, sender_id=_SQS_SENDER
    )
    return _sqs_delivery([message], list)


def sqs_batch_via_pipe(bodies: Sequence[str], *, queue: str = "orders", seed: int = 0, at: dt.datetime | None = None) -> Delivery:
    """N SQS messages through a pipe in one batch: one execution gets an array of N records (same
    sources as ``sqs_via_pipe``). One execution does the work of every message in it, so a key or
    payload selecting one record (``$[0]...``) says nothing of the others, and SQS makes no promise to
    batch the same messages together again after a failure: for one idempotent execution per message,
    set the pipe's batch size to 1. ``redelivered()`` receives every message of the batch again;
    ``duplicated()`` sends every one again."""
    messages = [
        _sqs_message(
            body, message_id=None, seed=seed, at=at, queue=queue, message_attributes=None, sender_id=_SQS_SENDER, index=index
        )
        for index, body in enumerate(bodies)
    ]
    return _sqs_delivery(messages, list)


def sqs_via_starter(
    body: str,
    *,
    message_id: str | None = None,
    message_attributes: Mapping[str, Any] | None = None,
    queue: str = "orders",
    seed: int = 0,
    at: dt.datetime | None = None,
) -> Delivery:
    """An SQS message through a Lambda function (an SQS event source mapping) that starts an execution
    with the record: one SQS record object, not an array, as it appears in Lambda's ``Records``
    (sample: https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html). Redeliveries and duplicates
    as ``sqs_via_pipe``'s; Lambda's event source mapping delivers at least once
    (https://docs.aws.amazon.com/lambda/latest/dg/invocation-eventsourcemapping.html)."""
    message = _sqs_message(
        body, message_id=message_id, seed=seed, at=at, queue=queue, message_attributes=message_attributes, sender_id=_SQS_SENDER
    )
    return _sqs_delivery([message], lambda records: records[0])


# SNS


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _sns_body(fields: dict[str, Any]) -> str:
    """The notification as SNS writes it into an SQS body: one member a line, ``"Name" : value``."""
    members = (f"  {json.dumps(name)} : {_compact(value)}" for name, value in fields.items())
    return "{\n" + ",\n".join(members) + "\n}"


def sns_to_sqs(
    message: str,
    *,
    subject: str | None = None,
    message_attributes: Mapping[str, Mapping[str, str]] | None = None,
    raw: bool = False,
    topic: str = "orders",
    queue: str = "orders",
    seed: int = 0,
    at: dt.datetime | None = None,
) -> Delivery:
    """An SNS notification delivered to an SQS queue, then through a pipe to Step Functions: an array of
    one SQS record whose ``body`` is SNS's notification JSON (``Type``, ``MessageId``, ``TopicArn``,
    ``Subject`` when published with one, ``Message``, ``Timestamp``, ``SignatureVersion``, ``Signature``,
    ``SigningCertURL``, ``UnsubscribeURL``, ``MessageAttributes`` when published with some), formatted as
    SNS formats it. With ``raw=True`` (raw message delivery) the body is the message itself.

    Samples: https://docs.aws.amazon.com/sns/latest/dg/sns-sqs-as-subscriber.html (the body, and
    Powertools' tests/events/snsSqsEvent.json, the record); the fields and when ``Subject`` is left out:
    https://docs.aws.amazon.com/sns/latest/dg/http-notification-json.html; raw delivery:
    https://docs.aws.amazon.com/sns/latest/dg/sns-large-payload-raw-message-delivery.html.

    ``redelivered()``: SQS receives the same SQS message again (as ``sqs_via_pipe``'s). ``duplicated()``:
    SNS delivers the notification again: "For a notification that Amazon SNS resends during a retry, the
    message ID of the original message is used" (http-notification-json.html), so the queue gets a second
    SQS message (new ``messageId``, receipt handle, send and receive times) whose body is the same text;
    the signature signs only fields that stay (``Message``, ``MessageId``, ``Subject``, ``Type``,
    ``Timestamp``, ``TopicArn``). With ``raw=True`` nothing of SNS's id survives: only the content can key it.
    A publisher's second ``Publish`` is another notification: the same call with another ``seed``.
    """
    moment = _moment(seed, at)
    sns_id = _uuid("sns-message", topic, seed, _content([message, subject]))
    if raw:
        if message_attributes:
            raise ValueError("raw delivery's SNS message attributes are not modelled: pass message_attributes without raw")
        body = message
    else:
        topic_arn = f"arn:aws:sns:{REGION}:{ACCOUNT}:{topic}"
        fields: dict[str, Any] = {"Type": "Notification", "MessageId": sns_id, "TopicArn": topic_arn}
        if subject is not None:
            fields["Subject"] = subject
        fields |= {
            "Message": message,
            "Timestamp": _iso_millis(moment),
            "SignatureVersion": "1",
            "Signature": base64.b64encode(_bytes(256, "sns-signature", sns_id)).decode(),
            "SigningCertURL": f"https://sns.{REGION}.amazonaws.com/SimpleNotificationService-{_hex(32, 'sns-cert')}.pem",
            "UnsubscribeURL": f"https://sns.{REGION}.amazonaws.com/?Action=Unsubscribe&SubscriptionArn={topic_arn}:"
            + _uuid("sns-subscription", topic, queue),
        }
        if message_attributes:
            fields["MessageAttributes"] = {name: dict(value) for name, value in message_attributes.items()}
        body = _sns_body(fields)
    sqs = _SqsMessage(
        message_id=_uuid("sqs-message", queue, "sns", sns_id),
        body=body,
        sent=moment + dt.timedelta(milliseconds=40),
        sender_id=_SNS_SENDER,
        queue=queue,
        message_attributes={},
    )
    return _sqs_delivery([sqs], list)
