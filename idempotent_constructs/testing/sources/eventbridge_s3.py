"""EventBridge: an event put on a bus as a rule's Step Functions target receives it (``eventbridge_rule``),
and S3's "Object Created" event sent to EventBridge (``s3_via_eventbridge``), each with the pages of AWS's
documentation that show its event and its duplicates.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..._readers.assembly import ACCOUNT, REGION
from .envelope import _CLIENT_IP, _UPPER_ALNUM, Delivery, _chars, _content, _hex, _iso_seconds, _moment, _uuid


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
    ``request-id`` the S3 request's, ``object`` the object's. The same bytes uploaded again are another
    object event: pass the first's ``etag`` and another ``seed`` (a new ``id``, ``time``, ``sequencer`` and
    ``request-id``). Key on bucket, key and ETag, which a duplicate and a re-upload of the same bytes keep ("The
    ETag reflects changes only to the contents of an object", S3 API reference, ``Object``), or on the
    sequencer to run each upload once; never on ``id``.
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
