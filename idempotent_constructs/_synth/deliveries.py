"""How each kind of source delivers a workflow's input (``Source``): the fields of its record that a redelivery and a
producer's duplicate change, the recipes that hold, a pipe's default batch size; and the limits of the sources
that starters.py reads from the construct tree. Read by starters.py and the advice (source_advice.py,
delivery_advice.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Source:
    """How one kind of source delivers: the fields of its record (dotted) that its redelivery and a
    producer's re-sent duplicate change, each told of (``{path}``: the source) with the recipe that holds."""

    redelivery: str = ""  # "an SQS message redelivered through the pipe {path}"
    redelivered: tuple[str, ...] = ()
    recipe: str = ""
    duplicate: str = ""
    duplicated: tuple[str, ...] = ()
    business: str = ""  # a key in the content, which a producer's duplicate repeats too
    parameters: str = ""  # its pipe's source parameters, which hold its batchSize
    batch: int | None = None  # a pipe's batch size where batchSize is not set (None: more than one, by AWS's choice)
    redriven: str = ""  # the recipe where the source's messages may be redriven from a dead-letter queue
    retries: str = ""  # how long its pipe delivers a failed record again, by its own settings
    # The BatchSource of an IdempotentBatch it starts: through a pipe, through a Lambda event source mapping (what
    # names a failed record to each: IdempotentBatch's BatchSource).
    batches: tuple[str, str] = ("", "")


SQS = Source(
    "an SQS message redelivered through the pipe {path}",
    ("receiptHandle", "attributes.ApproximateReceiveCount"),
    'key=IdempotencyKey.from_paths("$[0].messageId"), payload=IdempotencyPayload.from_paths("$[0].body")',
    "an SQS message sent again by a producer's retried SendMessage, through the pipe {path},",
    ("messageId", "receiptHandle", "attributes.SentTimestamp", "attributes.ApproximateFirstReceiveTimestamp"),
    'key=IdempotencyKey.from_jsonata("$parse($states.input[0].body).orderId") (your id in the body), '
    'payload=IdempotencyPayload.from_paths("$[0].body")',
    # "By default, EventBridge polls up to 10 messages in your queue simultaneously and sends that batch to your
    # pipe" (EventBridge user guide, "Amazon SQS as a source").
    "sqsQueueParameters",
    10,
    # A redrive from the dead-letter queue sends a message again with a new messageId, its body the same (SQS
    # developer guide, "Learn how to configure a dead-letter queue redrive"): the body is the key.
    'key=IdempotencyKey.from_paths("$[0].body"), payload=IdempotencyPayload.none()',
    "until its receive count reaches the source queue's maxReceiveCount, then goes to its dead-letter queue",
    ("SQS", "SQS"),
)
# A stream's failed record, through a pipe: "Discard records after the specified number of retries. The default
# value is -1 ... EventBridge retries failed records until the record expires in the event source", and records
# older than MaximumRecordAgeInSeconds (-1: never) (Pipes API reference, PipeSourceKinesisStreamParameters and
# PipeSourceDynamoDBStreamParameters); then to its DeadLetterConfig, where it has one.
_STREAM_RETRIES = (
    "until the pipe's {parameters}.maximumRetryAttempts or maximumRecordAgeInSeconds (by default, until the record "
    "leaves the stream), then goes to its deadLetterConfig"
)
KINESIS = Source(
    duplicate="a Kinesis record put again by a producer's retried PutRecord, through the pipe {path},",
    duplicated=("sequenceNumber", "eventID", "approximateArrivalTimestamp"),
    business='key=IdempotencyKey.from_jsonata("$parse($base64decode($states.input[0].data)).orderId") (your id in the '
    'data), payload=IdempotencyPayload.from_paths("$[0].data")',
    parameters="kinesisStreamParameters",
    retries=_STREAM_RETRIES.format(parameters="kinesisStreamParameters"),
    batches=("KINESIS", "KINESIS_MAPPING"),
)
# A retried batch is byte-identical, and a stream has no producer's duplicate.
DYNAMODB = Source(
    parameters="dynamoDbStreamParameters",
    retries=_STREAM_RETRIES.format(parameters="dynamoDbStreamParameters"),
    batches=("DYNAMODB_STREAMS", "DYNAMODB_STREAMS_MAPPING"),
)
EVENTBRIDGE = Source(
    duplicate="an event published again by a producer's retried PutEvents, through the rule {path},",
    duplicated=("id", "time"),
    business='key=IdempotencyKey.from_paths("$.detail.orderId") (your id in the detail), '
    'payload=IdempotencyPayload.from_paths("$.detail")',
)
# S3's "Object Created" through a rule: S3 may notify twice (a new id), and the same bytes uploaded again are a new
# object event (a new id, time, sequencer and request-id); the ETag holds for both ("The ETag reflects changes only to
# the contents of an object", S3 API reference, Object).
S3 = Source(
    duplicate="an S3 event notification sent twice, or the same bytes uploaded again, through the rule {path},",
    duplicated=("id", "time", "detail.object.sequencer", "detail.request-id"),
    business='key=IdempotencyKey.from_paths("$.detail.bucket.name", "$.detail.object.key", "$.detail.object.etag") '
    '(the object\'s content), payload=IdempotencyPayload.from_paths("$.detail.object.size")',
)
# An SQS queue's MessageRetentionPeriod when it is not set: 4 days (SQS API reference, SetQueueAttributes).
SQS_RETENTION_SECONDS = 345_600
# An SQS queue's VisibilityTimeout when it is not set: 30 seconds (SQS API reference, SetQueueAttributes).
SQS_VISIBILITY_SECONDS = 30
# A Lambda function's timeout when it is not set: 3 seconds (Lambda API reference, CreateFunction).
LAMBDA_TIMEOUT_SECONDS = 3
# The longest an Express execution runs: 5 minutes (Step Functions developer guide, "Choosing workflow type").
EXPRESS_RUN_SECONDS = 300
# An SQS queue's MaximumMessageSize when it is not set: 262,144 bytes (SQS API reference, SetQueueAttributes;
# a queue may allow up to 1,048,576).
SQS_MESSAGE_BYTES = 262_144
# What an SQS record adds to its body in the array a pipe sends, about: its messageId, receiptHandle,
# attributes, md5OfBody, eventSource, eventSourceARN and awsRegion with their names (462 characters in Lambda's
# documented example, whose receipt handle is cut to 36 characters; a real one runs to a few hundred).
SQS_ENVELOPE_CHARACTERS = 1_024
# How long an EventBridge rule retries delivering an event to a target that failed to take it, unless its target's
# RetryPolicy says otherwise: "MaximumEventAgeInSeconds ... The default is 24 hours and 185 times" (EventBridge user
# guide, "Event retry policy and using dead-letter queues").
RULE_EVENT_AGE_SECONDS = 86_400
# An API Gateway integration's timeout when it is not set: 29 seconds (API Gateway developer guide, quotas).
API_TIMEOUT_MILLIS = 29_000
# An HTTP API integration's: "between 50 and 30,000 milliseconds ... The default value is 30 seconds for HTTP APIs"
# (AWS::ApiGatewayV2::Integration, TimeoutInMillis).
HTTP_API_TIMEOUT_MILLIS = 30_000
# What an HTTP API's AWS service integration sends Step Functions is what its request parameters map (the body,
# usually: "$request.body"): a client's retry changes nothing the mapping does not name.
HTTP_API = Source("a request retried by its client through the HTTP API integration {path}")


def api_gateway(template: str) -> Source:
    """What a client's retry changes in the input that ``template`` (a request mapping template, as
    ``StepFunctionsIntegration`` writes it) makes: its request id, and its trace header among the headers."""
    changed = tuple(
        field
        for field, pattern in (
            ("requestContext.requestId", r"\$context\.(requestId|extendedRequestId|requestTime)"),
            ("header.X-Amzn-Trace-Id", r"#set\(\$includeHeaders = true\)|\$input\.params\(\)\.header|X-Amzn-Trace-Id"),
        )
        if re.search(pattern, template, re.IGNORECASE)
    )
    recipe = (
        'key=IdempotencyKey.from_paths("$.body.orderId") (your id in the body), payload=IdempotencyPayload.from_paths("$.body")'
    )
    return Source("a request retried by its client through the API method {path}", changed, recipe)
