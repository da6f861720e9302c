"""AWS's event sources, as a Step Functions execution receives their events, and their duplicates as AWS makes them.

A real duplicate is not identical: AWS redelivers a message in an envelope that changes (an SQS receipt
handle, an API Gateway request id). Each builder of this package makes the execution input that one source
gives a workflow for the business content you pass, in the shape of AWS's documented sample event (field
names, nesting and types: ``ApproximateReceiveCount`` is a string, an HTTP API's ``timeEpoch`` a number),
and a ``Delivery`` that makes its duplicates:

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
                                      duplicated (S3's retry): id; the same bytes uploaded again (its
                                        etag, another seed): id, time, sequencer, request-id
                                      key: $.detail.bucket.name, $.detail.object.key, $.detail.object.etag
                                        | $states.input.detail.[bucket.name, object.key, object.etag]  (never $.id)
                                      payload: $.detail.object.size | $states.input.detail.object.size
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
kinesis_via_starter (Lambda mapping   as kinesis_via_pipe, one record without the [0], its first five fields under
  → starter function → SFN)             kinesis: a batch of them is BatchSource.KINESIS_MAPPING's, named by
                                        kinesis.sequenceNumber
                                      key: $.eventID | $parse($base64decode($states.input.kinesis.data)).orderId
                                      payload: $.kinesis.data | $parse($base64decode($states.input.kinesis.data))
====================================  ==========================================================================

Where each lives:

- ``envelope``: ``Delivery``, and the ids and times AWS generates, in AWS's forms.
- ``sqs_sns``: ``sqs_via_pipe``, ``sqs_batch_via_pipe``, ``sqs_via_starter``, ``sns_to_sqs``.
- ``eventbridge_s3``: ``eventbridge_rule``, ``s3_via_eventbridge``.
- ``api_gateway``: ``api_gateway_rest``, ``api_gateway_http``, ``api_gateway_start_execution``.
- ``dynamodb_kinesis``: ``dynamodb_stream_via_pipe``, ``kinesis_via_pipe``, ``kinesis_via_starter``.
"""

from .api_gateway import api_gateway_http, api_gateway_rest, api_gateway_start_execution
from .dynamodb_kinesis import dynamodb_stream_via_pipe, kinesis_via_pipe, kinesis_via_starter
from .envelope import Delivery
from .eventbridge_s3 import eventbridge_rule, s3_via_eventbridge
from .sqs_sns import sns_to_sqs, sqs_batch_via_pipe, sqs_via_pipe, sqs_via_starter

__all__ = [
    "Delivery",
    "api_gateway_http",
    "api_gateway_rest",
    "api_gateway_start_execution",
    "dynamodb_stream_via_pipe",
    "eventbridge_rule",
    "kinesis_via_pipe",
    "kinesis_via_starter",
    "s3_via_eventbridge",
    "sns_to_sqs",
    "sqs_batch_via_pipe",
    "sqs_via_pipe",
    "sqs_via_starter",
]
