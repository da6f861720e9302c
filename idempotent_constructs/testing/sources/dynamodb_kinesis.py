"""Streams through a pipe: a change of a DynamoDB item read from the table's stream
(``dynamodb_stream_via_pipe``) and a record put on a Kinesis data stream (``kinesis_via_pipe``; through a Lambda
event source mapping into a starter function, ``kinesis_via_starter``), each with the pages of AWS's
documentation that show its event and its duplicates.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from collections.abc import Mapping
from dataclasses import replace
from decimal import Decimal
from typing import Any

from ..._readers.assembly import ACCOUNT, REGION
from ..items import item_size
from .envelope import Delivery, _content, _digits, _hex, _moment


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
    return _kinesis(data, partition_key, stream, shard, f"arn:aws:iam::{ACCOUNT}:role/{pipe_role}", seed, at, nested=False)


def kinesis_via_starter(
    data: bytes | str,
    partition_key: str,
    *,
    stream: str = "orders",
    shard: int = 0,
    function_role: str = "orders-starter-role",
    seed: int = 0,
    at: dt.datetime | None = None,
) -> Delivery:
    """The same record through a Lambda event source mapping, as a starter function hands it on (one record of
    the event's ``Records``; an ``IdempotentBatch`` with ``BatchSource.KINESIS_MAPPING`` takes the list): Lambda's
    record nests ``kinesisSchemaVersion``, ``partitionKey``, ``sequenceNumber``, ``data`` and
    ``approximateArrivalTimestamp`` under ``kinesis``, and its ``invokeIdentityArn`` is the function's role.
    A failed record is named by its ``kinesis.sequenceNumber`` ("itemIdentifier": "<SequenceNumber>", Lambda
    developer guide, "Configuring partial batch response with Kinesis Data Streams and Lambda").

    Sample: https://docs.aws.amazon.com/lambda/latest/dg/with-kinesis.html and Powertools'
    tests/events/kinesisStreamEvent.json. ``redelivered()`` and ``duplicated()``: as ``kinesis_via_pipe``'s.
    """
    return _kinesis(data, partition_key, stream, shard, f"arn:aws:iam::{ACCOUNT}:role/{function_role}", seed, at, nested=True)


def _kinesis(
    data: bytes | str,
    partition_key: str,
    stream: str,
    shard: int,
    identity: str,
    seed: int,
    at: dt.datetime | None,
    *,
    nested: bool,
) -> Delivery:
    payload = data.encode() if isinstance(data, str) else data
    moment = _moment(seed, at)
    content = _content([base64.b64encode(payload).decode(), partition_key, stream, seed])

    def build(generation: int) -> Delivery:
        sequence = "4959" + _digits(52, "kinesis-sequence", content, generation)
        arrival = moment + dt.timedelta(milliseconds=987 + 1000 * generation)
        kinesis = {
            "kinesisSchemaVersion": "1.0",
            "partitionKey": partition_key,
            "sequenceNumber": sequence,
            "data": base64.b64encode(payload).decode(),
            "approximateArrivalTimestamp": round(arrival.timestamp(), 3),
        }
        record = {
            **({"kinesis": kinesis} if nested else kinesis),
            "eventSource": "aws:kinesis",
            "eventVersion": "1.0",
            "eventID": f"shardId-{shard:012d}:{sequence}",
            "eventName": "aws:kinesis:record",
            "invokeIdentityArn": identity,
            "awsRegion": REGION,
            "eventSourceARN": f"arn:aws:kinesis:{REGION}:{ACCOUNT}:stream/{stream}",
        }
        delivery = _identical(record if nested else [record])
        return replace(delivery, _duplicate=lambda: build(generation + 1))

    return build(0)
