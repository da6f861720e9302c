"""AWS's event sources, as a Step Functions execution receives their events, and their duplicates as AWS makes them.

A real duplicate is not identical: AWS redelivers a message in an envelope that changes (an SQS receipt
handle, an API Gateway request id). Each builder below makes the execution input that one source gives a
workflow for the business content you pass, in the shape of AWS's documented sample event (field names,
nesting and types: ``ApproximateReceiveCount`` is a string, an HTTP API's ``timeEpoch`` a number), and a
``Delivery`` that makes its duplicates:

    delivery = sqs_via_pipe('{"orderId": "o-1", "amount": 42}')
    first = delivery.event                   # [{"messageId": ..., "receiptHandle": ..., "body": ...}]
    again = delivery.redelivered().event     # a new receiptHandle, ApproximateReceiveCount "2"
    deployment.run("Orders", first); deployment.run("Orders", again)

- ``redelivered()``: the same message delivered again by the AWS service that delivers it (an SQS receive
  after the visibility timeout, an EventBridge rule's retry, a client's retry of an API request).
- ``duplicated()``: the same content arriving again as another message, as AWS documents it for the source
  (SNS delivering a notification twice into a queue, S3 sending a notification twice, a producer's retried
  ``PutEvents``, ``PutRecord`` or ``SendMessage``); a ``TypeError`` where AWS documents none.
- Another message altogether (a producer sending the same content again on purpose): the same builder with
  another ``seed``.

Generated values (message ids, receipt handles, request ids, sequence numbers, signatures) have AWS's
forms and are derived from the builder's arguments and ``seed``: the same call gives the same event, two
messages of different content never share an id, and AWS's fresh values are fresh in a redelivery. The
time is 2024-05-01T12:00:00Z plus ``seed`` minutes unless ``at`` is given. Account and Region are the
emulator's (``assembly.ACCOUNT``, ``assembly.REGION``).

What to key on, and what to compare, for each source. A technical key (the message's own id) is stable
across the redeliveries of one message only; a business key (an id inside the content) across every
duplicate, a producer's re-send included. The payload is what a duplicate must repeat (the library
compares it with the record's ``validation``): select the content, never the envelope, or a redelivery
fails with ``Idempotency.PayloadMismatch``. JSONPath forms are for ``IdempotencyKey.from_paths`` and
``IdempotencyPayload.from_paths``, JSONata forms (those reading ``$states.input``) for their
``from_jsonata``. In each row ``key:`` lists the keys that hold, separated by ``|`` (the message's own id
first where one holds, then an id in the content), and ``payload:`` a JSONPath form | a JSONata one; the
examples carry an ``orderId``.

====================================  ==========================================================================
source                                what changes · key · payload
====================================  ==========================================================================
sqs_via_pipe (Pipes, SQS → SFN)       redelivered: [0].receiptHandle, [0].attributes.ApproximateReceiveCount
                                      duplicated (producer's SendMessage retry): [0].messageId, [0].receiptHandle,
                                        [0].attributes.SentTimestamp, [0].attributes.ApproximateFirstReceiveTimestamp
                                      key: $[0].messageId (technical) | $parse($states.input[0].body).orderId
                                      payload: $[0].body | $parse($states.input[0].body)
sqs_batch_via_pipe                    as sqs_via_pipe, for each record [i]; one execution gets every record:
                                        keep the batch size at 1 to key each message (see its docstring)
sqs_via_starter (Lambda starts)       as sqs_via_pipe, without the [0]
                                      key: $.messageId (technical) | $parse($states.input.body).orderId
                                      payload: $.body | $parse($states.input.body)
sns_to_sqs (SNS → SQS → Pipes)        redelivered (by SQS): [0].receiptHandle, [0].attributes.ApproximateReceiveCount
                                      duplicated (by SNS): [0].messageId, [0].receiptHandle,
                                        [0].attributes.SentTimestamp, [0].attributes.ApproximateFirstReceiveTimestamp;
                                        the body (the SNS notification) is the same text
                                      key: $parse($states.input[0].body).MessageId (SNS's id; never $[0].messageId)
                                        | $parse($parse($states.input[0].body).Message).orderId
                                      payload: $[0].body | $parse($states.input[0].body).Message
sns_to_sqs(raw=True)                  as sqs_via_pipe, but an SNS duplicate keeps nothing of SNS's:
                                      key: $parse($states.input[0].body).orderId (business only)
                                      payload: $[0].body | $parse($states.input[0].body)
eventbridge_rule (rule → SFN)         redelivered (the rule's retry): nothing
                                      duplicated (producer's PutEvents retry): id, time
                                      key: $.id (technical) | $.detail.orderId
                                      payload: $.detail | $states.input.detail
s3_via_eventbridge (S3 → EventBridge) redelivered (the rule's retry): nothing
                                      duplicated (S3's retry): id
                                      key: $.detail.bucket.name, $.detail.object.key, $.detail.object.sequencer
                                        | $states.input.detail.[bucket.name, object.key, object.sequencer]  (never $.id)
                                      payload: $.detail.object | $states.input.detail.object
api_gateway_rest (REST API, Lambda    redelivered (the client's retry): requestContext.requestId,
  proxy, payload format 1.0)            requestContext.extendedRequestId, requestContext.requestTime,
                                        requestContext.requestTimeEpoch, headers.X-Amzn-Trace-Id,
                                        multiValueHeaders.X-Amzn-Trace-Id
                                      key: $.headers['Idempotency-Key'] (the client's header, in the case it sent)
                                        | $parse($states.input.body).orderId  (never requestContext.requestId)
                                      payload: $.body | $parse($states.input.body)
api_gateway_http (HTTP API, payload   redelivered (the client's retry): requestContext.requestId,
  format 2.0)                           requestContext.time, requestContext.timeEpoch, headers.x-amzn-trace-id
                                      key: $.headers['idempotency-key'] (header names are lowercased)
                                        | $parse($states.input.body).orderId
                                      payload: $.body | $parse($states.input.body)
api_gateway_start_execution (REST     redelivered (the client's retry): nothing; the input is the body
  API → StartExecution, mapping       key: $.orderId (as JSONata: $states.input.orderId)
  template)                           payload: the whole input (the default)
dynamodb_stream_via_pipe              redelivered (a retried batch): nothing
                                      key: $[0].eventID (technical: this change) | $[0].dynamodb.Keys.pk.S (this item)
                                      payload: $[0].dynamodb.NewImage | $states.input[0].dynamodb.NewImage
kinesis_via_pipe                      redelivered (a retried batch): nothing
                                      duplicated (producer's PutRecord retry): [0].sequenceNumber, [0].eventID,
                                        [0].approximateArrivalTimestamp
                                      key: $[0].eventID (technical) | $parse($base64decode($states.input[0].data)).orderId
                                      payload: $[0].data | $parse($base64decode($states.input[0].data))
====================================  ==========================================================================
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

from .._readers.assembly import ACCOUNT, REGION
from .items import item_size

__all__ = [
    "Delivery",
    "api_gateway_http",
    "api_gateway_rest",
    "api_gateway_start_execution",
    "dynamodb_stream_via_pipe",
    "eventbridge_rule",
    "kinesis_via_pipe",
    "s3_via_eventbridge",
    "sns_to_sqs",
    "sqs_batch_via_pipe",
    "sqs_via_pipe",
    "sqs_via_starter",
]

_BASE_TIME = dt.datetime(2024, 5, 1, 12, 0, tzinfo=dt.UTC)
# AWS's own sample values (the Pipes SQS sample's sender; the SNS-to-SQS sample's, SNS's principal).
_SQS_SENDER = "AIDAIENQZJOLO23YVJ4VO"
_SNS_SENDER = "AIDAISMY7JYY5F7RTT6AO"
_CLIENT_IP = "203.0.113.10"  # a documentation address (RFC 5737)


@dataclass(frozen=True)
class Delivery:
    """One delivery of a message as a Step Functions execution receives it: ``event`` is the execution's
    input, as AWS builds it, and ``attempt`` counts the deliveries of this message (1 for the first)."""

    event: Any
    _render: Callable[[int], Any] = field(repr=False, compare=False)
    attempt: int = 1
    _duplicate: Callable[[], Delivery] | None = field(default=None, repr=False, compare=False)

    def redelivered(self, attempt: int | None = None) -> Delivery:
        """The same message delivered again, as the AWS service that delivers it redelivers it: delivery
        number ``attempt`` (the next one unless given). Only the fields AWS changes change."""
        number = self.attempt + 1 if attempt is None else attempt
        if number < 2:
            raise ValueError(f"a redelivery is delivery 2 or later, got attempt={number}")
        return replace(self, event=self._render(number), attempt=number)

    def duplicated(self) -> Delivery:
        """The same content arriving again as another message, as AWS documents it for this source (its
        builder's docstring says how); a ``TypeError`` for a source AWS documents no such duplicate of."""
        if self._duplicate is None:
            raise TypeError("AWS documents no duplicate of this source other than a redelivery: use redelivered()")
        return self._duplicate()


# Deterministic values in AWS's forms: a stream of bytes from the names of what they are for.


def _bytes(count: int, *names: object) -> bytes:
    seed = "\x1f".join(map(str, names)).encode()
    out = b""
    block = 0
    while len(out) < count:
        out += hashlib.sha256(seed + block.to_bytes(4, "big")).digest()
        block += 1
    return out[:count]


def _uuid(*names: object) -> str:
    return str(uuid.UUID(bytes=_bytes(16, *names), version=4))


def _hex(count: int, *names: object) -> str:
    return _bytes(-(-count // 2), *names).hex()[:count]


def _digits(count: int, *names: object) -> str:
    return str(int.from_bytes(_bytes(count, *names), "big") % 10**count).zfill(count)


def _chars(count: int, alphabet: str, *names: object) -> str:
    return "".join(alphabet[byte % len(alphabet)] for byte in _bytes(count, *names))


_UPPER_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_LOWER_ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789"
_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def _moment(seed: int, at: dt.datetime | None) -> dt.datetime:
    return at.astimezone(dt.UTC) if at is not None else _BASE_TIME + dt.timedelta(minutes=seed)


def _millis(moment: dt.datetime) -> int:
    return round(moment.timestamp() * 1000)


def _clf(moment: dt.datetime) -> str:
    """API Gateway's CLF time: ``04/Mar/2020:19:15:17 +0000``."""
    return moment.strftime("%d/%b/%Y:%H:%M:%S +0000")


def _iso_seconds(moment: dt.datetime) -> str:
    """EventBridge's ``time``: ``2017-12-22T18:43:48Z``."""
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _iso_millis(moment: dt.datetime) -> str:
    """SNS's ``Timestamp``: ``2012-03-29T05:12:16.901Z``."""
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _content(value: Any) -> str:
    """A stable name for business content, so that different content never shares a generated id."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


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


# EventBridge


def _eventbridge_delivery(event: dict[str, Any], duplicate: Callable[[], Delivery] | None) -> Delivery:
    # The rule's retry sends the same event: a new copy each time, nothing in it changed.
    text = json.dumps(event)
    return Delivery(json.loads(text), lambda attempt: json.loads(text), _duplicate=duplicate)


def eventbridge_rule(
    detail: Mapping[str, Any],
    *,
    detail_type: str,
    source: str,
    resources: Sequence[str] = (),
    seed: int = 0,
    at: dt.datetime | None = None,
) -> Delivery:
    """An event put on an event bus, as a rule's Step Functions target receives it (the execution's
    input, with no input transformer): ``version``, ``id``, ``detail-type``, ``source``, ``account``,
    ``time``, ``region``, ``resources``, ``detail``.

    Structure and sample: https://docs.aws.amazon.com/eventbridge/latest/ref/events-structure.html (``id``:
    "A unique value is generated for every event") and Powertools' tests/events/eventBridgeEvent.json.

    ``redelivered()``: the rule retries delivering the event to its target after a retriable error (for
    24 hours and up to 185 times by default,
    https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-rule-retry-policy.html): the same event,
    ``id`` included. ``duplicated()``: the producer's ``PutEvents`` retried after a lost response puts
    another event: a new ``id`` and ``time`` (EventBridge's, when the producer sets no ``Time``), the same
    ``detail``.
    """
    moment = _moment(seed, at)
    content = _content([detail, detail_type, source])

    def build(generation: int) -> Delivery:
        event = {
            "version": "0",
            "id": _uuid("eventbridge-event", seed, content, generation),
            "detail-type": detail_type,
            "source": source,
            "account": ACCOUNT,
            "time": _iso_seconds(moment + dt.timedelta(seconds=generation)),
            "region": REGION,
            "resources": list(resources),
            "detail": json.loads(json.dumps(dict(detail))),
        }
        return _eventbridge_delivery(event, lambda: build(generation + 1))

    return build(0)


def s3_via_eventbridge(
    bucket: str,
    key: str,
    *,
    size: int = 1024,
    etag: str | None = None,
    version_id: str | None = None,
    reason: str = "PutObject",
    seed: int = 0,
    at: dt.datetime | None = None,
) -> Delivery:
    """An "Object Created" event that S3 sends to EventBridge, as a rule's Step Functions target receives
    it: ``detail`` with ``version``, ``bucket.name``, ``object`` (``key``, ``size``, ``etag``,
    ``version-id`` when the bucket is versioned, ``sequencer``), ``request-id``, ``requester``,
    ``source-ip-address`` and ``reason`` (the API that created it).

    Sample: https://docs.aws.amazon.com/AmazonS3/latest/userguide/ev-events.html and Powertools'
    tests/events/s3EventBridgeNotificationObjectCreatedEvent.json.

    ``redelivered()``: the rule's retry (``eventbridge_rule``'s): the same event. ``duplicated()``: S3's
    own retry sends the notification again. S3 notifications are delivered at least once
    (https://docs.aws.amazon.com/AmazonS3/latest/userguide/EventNotifications.html), and "duplicate event
    notifications for a specific object event have the same value for the sequencer key"
    (https://repost.aws/knowledge-center/s3-duplicate-sqs-messages, AWS's; ordering and duplicates also
    in https://aws.amazon.com/blogs/storage/manage-event-ordering-and-duplicate-events-with-amazon-s3-event-notifications/).
    That is all AWS says of what a duplicate keeps. Modelled here: a new ``id`` (ev-events.html: "a UUID
    generated for every event"), and the rest unchanged: ``time`` is when the event occurred,
    ``request-id`` the S3 request's, ``object`` the object's. Key on bucket, key and sequencer, which
    hold whatever else a duplicate changes; never on ``id``.
    """
    moment = _moment(seed, at)
    content = _content([bucket, key, version_id, seed])
    sequencer = "00" + _hex(16, "s3-sequencer", content).upper()
    obj: dict[str, Any] = {"key": key, "size": size, "etag": etag or _hex(32, "s3-etag", content)}
    if version_id is not None:
        obj["version-id"] = version_id
    obj["sequencer"] = sequencer
    detail = {
        "version": "0",
        "bucket": {"name": bucket},
        "object": obj,
        "request-id": _chars(16, _UPPER_ALNUM, "s3-request", content),
        "requester": ACCOUNT,
        "source-ip-address": _CLIENT_IP,
        "reason": reason,
    }

    def build(generation: int) -> Delivery:
        event = {
            "version": "0",
            "id": _uuid("s3-event", content, generation),
            "detail-type": "Object Created",
            "source": "aws.s3",
            "account": ACCOUNT,
            "time": _iso_seconds(moment),
            "region": REGION,
            "resources": [f"arn:aws:s3:::{bucket}"],
            "detail": detail,
        }
        return _eventbridge_delivery(event, lambda: build(generation + 1))

    return build(0)


# API Gateway


def _trace_id(moment: dt.datetime, *names: object) -> str:
    """An X-Ray trace header: ``Root=1-{epoch seconds in hex}-{24 hex digits}``."""
    return f"Root=1-{int(moment.timestamp()):08x}-{_hex(24, 'trace', *names)}"


def _extended_id(*names: object) -> str:
    """API Gateway's short request id form (``extendedRequestId``, an HTTP API's ``requestId``): ``BWZwSjE1IAMESgw=``."""
    return _chars(15, _ALNUM, *names) + "="


def api_gateway_rest(
    body: str | None,
    headers: Mapping[str, str],
    *,
    method: str = "POST",
    path: str = "/orders",
    resource: str | None = None,
    query: Mapping[str, str] | None = None,
    stage: str = "prod",
    api_id: str = "a1b2c3d4e5",
    seed: int = 0,
    at: dt.datetime | None = None,
) -> Delivery:
    """A REST API request as a Lambda proxy integration passes it (payload format 1.0) to a starter
    function that starts an execution with the event. ``headers`` are the client's; API Gateway adds
    ``Host``, ``X-Forwarded-For``, ``X-Forwarded-Port``, ``X-Forwarded-Proto`` and ``X-Amzn-Trace-Id``.
    The event has no ``requestContext.authorizer`` (no authorizer) and no ``identity.clientCert`` (no
    mutual TLS).

    Input format: https://docs.aws.amazon.com/apigateway/latest/developerguide/set-up-lambda-proxy-integrations.html
    (it has no ``version`` member; the ``version: "1.0"`` sample of
    https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-develop-integrations-lambda.html,
    copied as Powertools' tests/events/apiGatewayProxyEvent.json, is an HTTP API's format 1.0).

    ``redelivered()``: the client retries the request (after a timeout, say). API Gateway makes a new
    request of it: a new ``requestContext.requestId`` ("An ID for the request", unless the client sets
    it), ``extendedRequestId`` ("The extended ID that API Gateway generates and assigns to the API
    request"), ``requestTime`` and ``requestTimeEpoch``
    (https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-mapping-template-reference.html),
    and a new ``X-Amzn-Trace-Id`` header, which API Gateway adds to a request that has none
    (https://docs.aws.amazon.com/xray/latest/devguide/xray-services-apigateway.html). The body and the
    client's own headers (an ``Idempotency-Key``) are the client's: the same.
    """
    moment = _moment(seed, at)
    content = _content([body, dict(headers), method, path, seed])
    resource = resource or path
    user_agent = next((value for name, value in headers.items() if name.lower() == "user-agent"), None)

    def render(attempt: int) -> dict[str, Any]:
        when = moment + dt.timedelta(seconds=attempt - 1)
        all_headers = {
            **headers,
            "Host": f"{api_id}.execute-api.{REGION}.amazonaws.com",
            "X-Amzn-Trace-Id": _trace_id(when, "rest", content, attempt),
            "X-Forwarded-For": _CLIENT_IP,
            "X-Forwarded-Port": "443",
            "X-Forwarded-Proto": "https",
        }
        return {
            "resource": resource,
            "path": path,
            "httpMethod": method,
            "headers": all_headers,
            "multiValueHeaders": {name: [value] for name, value in all_headers.items()},
            "queryStringParameters": dict(query) if query else None,
            "multiValueQueryStringParameters": {name: [value] for name, value in query.items()} if query else None,
            "pathParameters": None,
            "stageVariables": None,
            "requestContext": {
                "accountId": ACCOUNT,
                "apiId": api_id,
                "domainName": f"{api_id}.execute-api.{REGION}.amazonaws.com",
                "domainPrefix": api_id,
                "extendedRequestId": _extended_id("rest-extended", content, attempt),
                "httpMethod": method,
                "identity": {
                    "accessKey": None,
                    "accountId": None,
                    "caller": None,
                    "cognitoAuthenticationProvider": None,
                    "cognitoAuthenticationType": None,
                    "cognitoIdentityId": None,
                    "cognitoIdentityPoolId": None,
                    "principalOrgId": None,
                    "sourceIp": _CLIENT_IP,
                    "user": None,
                    "userAgent": user_agent,
                    "userArn": None,
                },
                "path": f"/{stage}{path}",
                "protocol": "HTTP/1.1",
                "requestId": _uuid("rest-request", content, attempt),
                "requestTime": _clf(when),
                "requestTimeEpoch": _millis(when),
                "resourceId": _chars(6, _LOWER_ALNUM, "rest-resource", api_id, resource),
                "resourcePath": resource,
                "stage": stage,
            },
            "body": body,
            "isBase64Encoded": False,
        }

    return Delivery(render(1), render)


def api_gateway_http(
    body: str | None,
    headers: Mapping[str, str],
    *,
    method: str = "POST",
    path: str = "/orders",
    query: Mapping[str, str] | None = None,
    api_id: str = "a1b2c3d4e5",
    seed: int = 0,
    at: dt.datetime | None = None,
) -> Delivery:
    """An HTTP API request as a Lambda proxy integration passes it (payload format 2.0) to a starter
    function, on the ``$default`` stage. Header names are lowercased, the client's too; API Gateway adds
    ``host``, ``x-amzn-trace-id`` and ``x-forwarded-*``. Members with nothing to hold (``cookies``,
    ``queryStringParameters``, ``pathParameters``, ``stageVariables``, an authorizer) are left out.

    Format: https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-develop-integrations-lambda.html
    (header names lowercased, ``timeEpoch`` a number) and Powertools'
    tests/events/apiGatewayProxyV2Event.json; ``x-amzn-trace-id`` as in Powertools'
    tests/events/lambdaFunctionUrlEvent.json (the same format 2.0).

    ``redelivered()``: the client's retry, a new request: a new ``requestContext.requestId``, ``time``,
    ``timeEpoch`` and ``x-amzn-trace-id``
    (https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-logging-variables.html:
    ``$context.requestId``); ``requestContext.http`` (method, path, protocol, source IP, user agent), the
    body and the client's headers stay.
    """
    moment = _moment(seed, at)
    content = _content([body, dict(headers), method, path, seed])
    lowered = {name.lower(): value for name, value in headers.items()}
    raw_query = "&".join(f"{name}={value}" for name, value in (query or {}).items())

    def render(attempt: int) -> dict[str, Any]:
        when = moment + dt.timedelta(seconds=attempt - 1)
        event: dict[str, Any] = {
            "version": "2.0",
            "routeKey": f"{method} {path}",
            "rawPath": path,
            "rawQueryString": raw_query,
            "headers": {
                **lowered,
                "host": f"{api_id}.execute-api.{REGION}.amazonaws.com",
                "x-amzn-trace-id": _trace_id(when, "http", content, attempt),
                "x-forwarded-for": _CLIENT_IP,
                "x-forwarded-port": "443",
                "x-forwarded-proto": "https",
            },
        }
        if query:
            event["queryStringParameters"] = dict(query)
        event["requestContext"] = {
            "accountId": ACCOUNT,
            "apiId": api_id,
            "domainName": f"{api_id}.execute-api.{REGION}.amazonaws.com",
            "domainPrefix": api_id,
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": _CLIENT_IP,
                "userAgent": lowered.get("user-agent", ""),
            },
            "requestId": _extended_id("http-request", content, attempt),
            "routeKey": f"{method} {path}",
            "stage": "$default",
            "time": _clf(when),
            "timeEpoch": _millis(when),
        }
        if body is not None:
            event["body"] = body
        event["isBase64Encoded"] = False
        return event

    return Delivery(render(1), render)


def api_gateway_start_execution(body: str) -> Delivery:
    """A REST API method integrated with Step Functions' ``StartExecution`` directly (an AWS service
    integration), with the mapping template of Step Functions' tutorial:

        {"input": "$util.escapeJavaScript($input.json('$'))", "stateMachineArn": "arn:aws:states:..."}

    ``$input.json('$')`` is the request body, so the execution's input is the body and nothing else: no
    header, no request id, no time (https://docs.aws.amazon.com/step-functions/latest/dg/tutorial-api-gateway.html).
    ``redelivered()``, the client's retry, is the body again: identical. Without a ``"name"`` in the
    template each request starts an execution of its own; add headers to the template (the client's
    ``Idempotency-Key``) and they are in the input too. ``body`` must be JSON.
    """
    text = json.dumps(json.loads(body))
    return Delivery(json.loads(text), lambda attempt: json.loads(text))


# Streams through a pipe


def _attribute_value(value: Any) -> dict[str, Any]:
    """A plain value in DynamoDB's JSON (``{"S": "a"}``, ``{"N": "1"}``, ``{"M": {...}}``)."""
    if value is None:
        return {"NULL": True}
    if isinstance(value, bool):
        return {"BOOL": value}
    if isinstance(value, (int, float, Decimal)):
        return {"N": str(value)}
    if isinstance(value, str):
        return {"S": value}
    if isinstance(value, bytes):
        return {"B": base64.b64encode(value).decode()}
    if isinstance(value, Mapping):
        return {"M": {name: _attribute_value(item) for name, item in value.items()}}
    if isinstance(value, (list, tuple)):
        return {"L": [_attribute_value(item) for item in value]}
    raise TypeError(f"no DynamoDB type for {type(value).__name__}: pass str, number, bool, None, bytes, a dict or a list")


def _image(item: Mapping[str, Any]) -> dict[str, Any]:
    return {name: _attribute_value(value) for name, value in item.items()}


def _identical(event: Any) -> Delivery:
    text = json.dumps(event)
    return Delivery(json.loads(text), lambda attempt: json.loads(text))


def dynamodb_stream_via_pipe(
    new_image: Mapping[str, Any] | None,
    old_image: Mapping[str, Any] | None = None,
    *,
    keys: Mapping[str, Any],
    event_name: str | None = None,
    view_type: str = "NEW_AND_OLD_IMAGES",
    table: str = "Orders",
    seed: int = 0,
    at: dt.datetime | None = None,
) -> Delivery:
    """A change of one item, through an EventBridge pipe reading the table's stream, to a Step Functions
    target: an array of one stream record (``eventID``, ``eventName``, ``eventVersion``,
    ``eventSource``, ``awsRegion``, ``dynamodb`` with ``ApproximateCreationDateTime``, ``Keys``,
    ``NewImage``, ``OldImage``, ``SequenceNumber``, ``SizeBytes``, ``StreamViewType``, and
    ``eventSourceARN``). Items are plain values, written here in DynamoDB's JSON; ``event_name`` is
    INSERT without an old image, REMOVE without a new one, else MODIFY, unless given; ``view_type``
    decides which images the record holds. ``SizeBytes`` is approximated from the keys and images.

    Sample: https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-pipes-dynamodb.html and Powertools'
    tests/events/dynamoStreamEvent.json; the record:
    https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_streams_Record.html.

    ``redelivered()``: identical. A pipe checkpoints a shard "to the highest sequence number of a batch,
    but only when the batch is a complete success" (eb-pipes-dynamodb.html), so a failed batch is read
    again from the stream, where "each stream record appears exactly once"
    (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Streams.html): the same records,
    byte for byte. The retried batch is not always the same array, though: with batch item failures
    only the failed records are retried and ``AUTOMATIC_BISECT`` halves the batch (eb-pipes-dynamodb.html). With a batch size of 1 a retried
    batch is the same array. No other duplicate is documented: another write is another change, with
    its own ``eventID``.
    """
    if event_name is None:
        event_name = "INSERT" if old_image is None else "REMOVE" if new_image is None else "MODIFY"
    moment = _moment(seed, at)
    content = _content([dict(keys), dict(new_image or {}), dict(old_image or {}), event_name, table, seed])
    record_keys = _image(keys)
    images: dict[str, Any] = {}
    if new_image is not None and view_type in ("NEW_IMAGE", "NEW_AND_OLD_IMAGES"):
        images["NewImage"] = _image(new_image)
    if old_image is not None and view_type in ("OLD_IMAGE", "NEW_AND_OLD_IMAGES"):
        images["OldImage"] = _image(old_image)
    size = item_size(record_keys) + sum(item_size(image) for image in images.values())
    label = moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}"
    record = {
        "eventID": _hex(32, "dynamodb-event", content),
        "eventName": event_name,
        "eventVersion": "1.0",
        "eventSource": "aws:dynamodb",
        "awsRegion": REGION,
        "dynamodb": {
            "ApproximateCreationDateTime": float(int(moment.timestamp())),
            "Keys": record_keys,
            **images,
            "SequenceNumber": "4" + _digits(20, "dynamodb-sequence", content),
            "SizeBytes": size,
            "StreamViewType": view_type,
        },
        "eventSourceARN": f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{table}/stream/{label}",
    }
    return _identical([record])


def kinesis_via_pipe(
    data: bytes | str,
    partition_key: str,
    *,
    stream: str = "orders",
    shard: int = 0,
    pipe_role: str = "orders-pipe-role",
    seed: int = 0,
    at: dt.datetime | None = None,
) -> Delivery:
    """A record put on a Kinesis data stream, through an EventBridge pipe to a Step Functions target: an
    array of one record. Pipes' record is flat, unlike a Lambda event source mapping's (which nests the
    first five under ``kinesis``): ``kinesisSchemaVersion``, ``partitionKey``, ``sequenceNumber``,
    ``data`` (base64), ``approximateArrivalTimestamp``, then ``eventSource``, ``eventVersion``,
    ``eventID`` (shard and sequence number), ``eventName``, ``invokeIdentityArn`` (the pipe's role),
    ``awsRegion`` and ``eventSourceARN``.

    Sample: https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-pipes-kinesis.html, and again "When
    the event flows through your pipe, it'll look like the following"
    (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-pipes-event-filtering.html); Lambda's
    nested form is Powertools' tests/events/kinesisStreamEvent.json.

    ``redelivered()``: identical, as ``dynamodb_stream_via_pipe``'s (the pipe reads a failed batch again
    from its last checkpoint, eb-pipes-kinesis.html; the same caveats on the batch's array).
    ``duplicated()``: the producer's ``PutRecord`` retried after a timeout commits a second record:
    "Although the two records have identical data, they also have unique sequence numbers"
    (https://docs.aws.amazon.com/streams/latest/dev/kinesis-record-processor-duplicates.html): a new
    ``sequenceNumber``, ``eventID`` and arrival time, the same ``data`` and ``partitionKey``.
    """
    payload = data.encode() if isinstance(data, str) else data
    moment = _moment(seed, at)
    content = _content([base64.b64encode(payload).decode(), partition_key, stream, seed])

    def build(generation: int) -> Delivery:
        sequence = "4959" + _digits(52, "kinesis-sequence", content, generation)
        arrival = moment + dt.timedelta(milliseconds=987 + 1000 * generation)
        record = {
            "kinesisSchemaVersion": "1.0",
            "partitionKey": partition_key,
            "sequenceNumber": sequence,
            "data": base64.b64encode(payload).decode(),
            "approximateArrivalTimestamp": round(arrival.timestamp(), 3),
            "eventSource": "aws:kinesis",
            "eventVersion": "1.0",
            "eventID": f"shardId-{shard:012d}:{sequence}",
            "eventName": "aws:kinesis:record",
            "invokeIdentityArn": f"arn:aws:iam::{ACCOUNT}:role/{pipe_role}",
            "awsRegion": REGION,
            "eventSourceARN": f"arn:aws:kinesis:{REGION}:{ACCOUNT}:stream/{stream}",
        }
        delivery = _identical([record])
        return replace(delivery, _duplicate=lambda: build(generation + 1))

    return build(0)
