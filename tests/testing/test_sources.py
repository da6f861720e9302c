"""idempotent_constructs/testing/sources/: AWS's events per source, in AWS's documented shapes, and their
duplicates changing exactly what AWS changes.

The expected field sets are those of AWS's samples as Powertools' tests/events/*.json copy them (named in
each test), written out here; where our event differs from the sample, the test says which fields and why.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from idempotent_constructs import IdempotencyKey
from idempotent_constructs._jsonata.engine import UNDEFINED, evaluate
from idempotent_constructs.lambda_src.canonical import parse_path
from idempotent_constructs.testing import sources
from idempotent_constructs.testing.sources import (
    Delivery,
    api_gateway_http,
    api_gateway_rest,
    api_gateway_start_execution,
    dynamodb_stream_via_pipe,
    eventbridge_rule,
    kinesis_via_pipe,
    kinesis_via_starter,
    s3_via_eventbridge,
    sns_to_sqs,
    sqs_batch_via_pipe,
    sqs_via_pipe,
    sqs_via_starter,
)

ORDER = {"orderId": "o-1", "amount": 42}
BODY = json.dumps(ORDER)
HEADERS = {"Content-Type": "application/json", "Idempotency-Key": "k-o-1", "User-Agent": "curl/8.7.1"}


def leaves(value: Any, path: str = "") -> dict[str, Any]:
    """Every scalar (and empty container) of ``value`` by its path: ``[0].attributes.SenderId``."""
    if isinstance(value, dict) and value:
        return {k: v for name, item in value.items() for k, v in leaves(item, f"{path}.{name}" if path else name).items()}
    if isinstance(value, list) and value:
        return {k: v for index, item in enumerate(value) for k, v in leaves(item, f"{path}[{index}]").items()}
    return {path: value}


def differing(first: Any, second: Any) -> set[str]:
    """The paths whose values differ between two events, or that only one of them has."""
    a, b = leaves(first), leaves(second)
    return {path for path in a.keys() | b.keys() if a.get(path, ...) != b.get(path, ...)}


# The shapes, against AWS's samples

SQS_RECORD = {  # tests/events/sqsEvent.json, Records[0]; the same as eb-pipes-sqs.html's
    "messageId",
    "receiptHandle",
    "body",
    "attributes",
    "messageAttributes",
    "md5OfBody",
    "eventSource",
    "eventSourceARN",
    "awsRegion",
}
SQS_ATTRIBUTES = {"ApproximateReceiveCount", "SentTimestamp", "SenderId", "ApproximateFirstReceiveTimestamp"}


def test_a_pipe_gives_sqs_records_in_an_array_even_for_one_record():
    event = sqs_via_pipe(BODY).event
    assert isinstance(event, list)
    assert len(event) == 1
    assert event[0]["body"] == BODY


def test_an_sqs_record_has_the_fields_and_types_of_aws_sample():
    record = sqs_via_pipe(BODY, message_attributes={"tenant": {"stringValue": "t-1", "dataType": "String"}}).event[0]
    assert set(record) == SQS_RECORD
    assert set(record["attributes"]) == SQS_ATTRIBUTES
    assert all(isinstance(value, str) for value in record["attributes"].values())
    assert record["attributes"]["ApproximateReceiveCount"] == "1"
    assert re.fullmatch(r"\d{13}", record["attributes"]["SentTimestamp"])  # epoch milliseconds, as text
    assert record["md5OfBody"] == hashlib.md5(BODY.encode()).hexdigest()
    assert record["messageAttributes"] == {"tenant": {"stringValue": "t-1", "dataType": "String"}}
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", record["messageId"])
    assert record["receiptHandle"].startswith("AQEB")
    assert (record["eventSource"], record["eventSourceARN"]) == ("aws:sqs", "arn:aws:sqs:us-east-1:123456789012:orders")


def test_a_message_id_can_be_given():
    assert sqs_via_pipe(BODY, message_id="m-1").event[0]["messageId"] == "m-1"


def test_a_batch_is_one_array_of_a_record_a_message():
    event = sqs_batch_via_pipe([BODY, json.dumps({"orderId": "o-2"}), json.dumps({"orderId": "o-3"})]).event
    assert [json.loads(record["body"])["orderId"] for record in event] == ["o-1", "o-2", "o-3"]
    assert len({record["messageId"] for record in event}) == 3
    assert all(set(record) == SQS_RECORD for record in event)


def test_a_starter_function_starts_the_execution_with_one_record_not_an_array():
    event = sqs_via_starter(BODY).event
    assert isinstance(event, dict)
    assert set(event) == SQS_RECORD


SNS_NOTIFICATION = {  # snsSqsEvent.json's body, with the Subject of sns-sqs-as-subscriber.html's sample
    "Type",
    "MessageId",
    "TopicArn",
    "Subject",
    "Message",
    "Timestamp",
    "SignatureVersion",
    "Signature",
    "SigningCertURL",
    "UnsubscribeURL",
}


def test_an_sns_notification_in_a_queue_is_the_body_of_an_sqs_record_formatted_as_sns_formats_it():
    record = sns_to_sqs(BODY, subject="New order").event[0]
    assert set(record) == SQS_RECORD
    notification = json.loads(record["body"])
    assert set(notification) == SNS_NOTIFICATION
    assert notification["Message"] == BODY
    assert notification["Type"] == "Notification"
    assert record["body"].startswith('{\n  "Type" : "Notification",\n  "MessageId" : "')  # as in snsSqsEvent.json
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", notification["Timestamp"])


def test_an_sns_notification_has_a_subject_and_message_attributes_only_when_published_with_them():
    assert set(json.loads(sns_to_sqs(BODY).event[0]["body"])) == SNS_NOTIFICATION - {"Subject"}
    attributes = {"tenant": {"Type": "String", "Value": "t-1"}}
    notification = json.loads(sns_to_sqs(BODY, message_attributes=attributes).event[0]["body"])
    assert notification["MessageAttributes"] == attributes


def test_raw_message_delivery_puts_the_message_itself_in_the_body():
    assert sns_to_sqs(BODY, raw=True).event[0]["body"] == BODY


def test_an_eventbridge_event_has_the_fields_of_aws_sample():
    event = eventbridge_rule(ORDER, detail_type="Order Placed", source="com.example.orders").event
    # eventBridgeEvent.json, less "replay-name", which only an event replayed from an archive has.
    assert set(event) == {"version", "id", "detail-type", "source", "account", "time", "region", "resources", "detail"}
    assert event["detail"] == ORDER
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", event["time"])


def test_an_s3_object_created_event_has_the_fields_of_aws_sample():
    event = s3_via_eventbridge("orders-bucket", "in/o-1.json", size=184662).event
    # s3EventBridgeNotificationObjectCreatedEvent.json
    assert set(event) == {"version", "id", "detail-type", "source", "account", "time", "region", "resources", "detail"}
    assert set(event["detail"]) == {"version", "bucket", "object", "request-id", "requester", "source-ip-address", "reason"}
    assert set(event["detail"]["object"]) == {"key", "size", "etag", "sequencer"}
    assert (event["detail-type"], event["source"], event["resources"]) == (
        "Object Created",
        "aws.s3",
        ["arn:aws:s3:::orders-bucket"],
    )
    assert event["detail"]["object"]["size"] == 184662
    assert re.fullmatch(r"[0-9A-F]{18}", event["detail"]["object"]["sequencer"])


def test_an_object_of_a_versioned_bucket_has_its_version_id():
    event = s3_via_eventbridge("orders-bucket", "in/o-1.json", version_id="IYV3p45BT0ac8hjHg1houSdS1a.Mro8e").event
    assert event["detail"]["object"]["version-id"] == "IYV3p45BT0ac8hjHg1houSdS1a.Mro8e"


REST_EVENT = {  # apiGatewayProxyEvent.json, less "version" (an HTTP API's format 1.0 has it, a REST API's has not)
    "resource",
    "path",
    "httpMethod",
    "headers",
    "multiValueHeaders",
    "queryStringParameters",
    "multiValueQueryStringParameters",
    "requestContext",
    "pathParameters",
    "stageVariables",
    "body",
    "isBase64Encoded",
}
REST_CONTEXT = {  # its requestContext, less "authorizer": the API has none
    "accountId",
    "apiId",
    "domainName",
    "domainPrefix",
    "extendedRequestId",
    "httpMethod",
    "identity",
    "path",
    "protocol",
    "requestId",
    "requestTime",
    "requestTimeEpoch",
    "resourceId",
    "resourcePath",
    "stage",
}
REST_IDENTITY = {  # its identity, less "clientCert": no mutual TLS
    "accessKey",
    "accountId",
    "caller",
    "cognitoAuthenticationProvider",
    "cognitoAuthenticationType",
    "cognitoIdentityId",
    "cognitoIdentityPoolId",
    "principalOrgId",
    "sourceIp",
    "user",
    "userAgent",
    "userArn",
}


def test_a_rest_api_proxy_event_has_the_fields_and_types_of_aws_sample():
    event = api_gateway_rest(BODY, HEADERS).event
    assert set(event) == REST_EVENT
    assert set(event["requestContext"]) == REST_CONTEXT
    assert set(event["requestContext"]["identity"]) == REST_IDENTITY
    assert isinstance(event["requestContext"]["requestTimeEpoch"], int)
    assert re.fullmatch(r"\d\d/[A-Z][a-z]{2}/\d{4}:\d\d:\d\d:\d\d \+0000", event["requestContext"]["requestTime"])
    assert event["body"] == BODY
    assert event["headers"]["Idempotency-Key"] == "k-o-1"  # the client's header, in the case it sent
    assert event["multiValueHeaders"]["Idempotency-Key"] == ["k-o-1"]
    assert re.fullmatch(r"Root=1-[0-9a-f]{8}-[0-9a-f]{24}", event["headers"]["X-Amzn-Trace-Id"])
    assert event["queryStringParameters"] is None
    assert event["requestContext"]["identity"]["userAgent"] == "curl/8.7.1"


def test_an_http_api_event_has_the_fields_and_types_of_aws_sample():
    event = api_gateway_http(BODY, HEADERS).event
    # apiGatewayProxyV2Event.json, less the members with nothing to hold: no cookie, query string, path
    # parameter or stage variable was sent or configured.
    assert set(event) == {
        "version",
        "routeKey",
        "rawPath",
        "rawQueryString",
        "headers",
        "requestContext",
        "body",
        "isBase64Encoded",
    }
    # its requestContext, less "authentication" and "authorizer" (no mutual TLS, no authorizer)
    assert set(event["requestContext"]) == {
        "accountId",
        "apiId",
        "domainName",
        "domainPrefix",
        "http",
        "requestId",
        "routeKey",
        "stage",
        "time",
        "timeEpoch",
    }
    assert set(event["requestContext"]["http"]) == {"method", "path", "protocol", "sourceIp", "userAgent"}
    assert isinstance(event["requestContext"]["timeEpoch"], int)
    assert event["version"] == "2.0"
    assert event["headers"]["idempotency-key"] == "k-o-1"  # lowercased
    assert all(name == name.lower() for name in event["headers"])


def test_an_http_api_event_has_its_query_string_when_one_is_sent():
    event = api_gateway_http(None, {}, method="GET", query={"status": "open"}).event
    assert event["queryStringParameters"] == {"status": "open"}
    assert event["rawQueryString"] == "status=open"
    assert "body" not in event


def test_a_start_execution_mapping_template_passes_the_body_only():
    assert api_gateway_start_execution(BODY).event == ORDER


DYNAMODB_RECORD = {"eventID", "eventVersion", "dynamodb", "awsRegion", "eventName", "eventSourceARN", "eventSource"}


def test_a_dynamodb_stream_record_through_a_pipe_has_the_fields_of_aws_sample():
    event = dynamodb_stream_via_pipe({"pk": "o-1", "amount": 43}, {"pk": "o-1", "amount": 42}, keys={"pk": "o-1"}).event
    assert isinstance(event, list)
    assert len(event) == 1
    (record,) = event
    assert set(record) == DYNAMODB_RECORD  # dynamoStreamEvent.json's records
    # the union of its two records' (the first has ApproximateCreationDateTime, the MODIFY an OldImage)
    assert set(record["dynamodb"]) == {
        "ApproximateCreationDateTime",
        "Keys",
        "NewImage",
        "OldImage",
        "SequenceNumber",
        "SizeBytes",
        "StreamViewType",
    }
    assert record["eventName"] == "MODIFY"
    assert record["dynamodb"]["Keys"] == {"pk": {"S": "o-1"}}
    assert record["dynamodb"]["NewImage"] == {"pk": {"S": "o-1"}, "amount": {"N": "43"}}
    assert isinstance(record["dynamodb"]["SizeBytes"], int)
    assert isinstance(record["dynamodb"]["ApproximateCreationDateTime"], float)
    assert re.fullmatch(r"\d{21}", record["dynamodb"]["SequenceNumber"])


@pytest.mark.parametrize(
    ("new", "old", "view_type", "name", "images"),
    [
        ({"pk": "o-1"}, None, "NEW_AND_OLD_IMAGES", "INSERT", {"NewImage"}),
        (None, {"pk": "o-1"}, "NEW_AND_OLD_IMAGES", "REMOVE", {"OldImage"}),
        ({"pk": "o-1"}, {"pk": "o-1"}, "NEW_IMAGE", "MODIFY", {"NewImage"}),
        ({"pk": "o-1"}, {"pk": "o-1"}, "KEYS_ONLY", "MODIFY", set()),
    ],
)
def test_the_event_name_follows_the_images_and_the_view_type_decides_which_images_there_are(new, old, view_type, name, images):
    (record,) = dynamodb_stream_via_pipe(new, old, keys={"pk": "o-1"}, view_type=view_type).event
    assert record["eventName"] == name
    assert set(record["dynamodb"]) & {"NewImage", "OldImage"} == images


def test_items_are_written_in_dynamodb_json():
    (record,) = dynamodb_stream_via_pipe(
        {"pk": "o-1", "ok": True, "none": None, "lines": [{"sku": "a", "qty": 2}], "raw": b"\x00"}, keys={"pk": "o-1"}
    ).event
    assert record["dynamodb"]["NewImage"] == {
        "pk": {"S": "o-1"},
        "ok": {"BOOL": True},
        "none": {"NULL": True},
        "lines": {"L": [{"M": {"sku": {"S": "a"}, "qty": {"N": "2"}}}]},
        "raw": {"B": "AA=="},
    }


def test_a_kinesis_record_through_a_pipe_is_flat_as_the_pipes_sample():
    (record,) = kinesis_via_pipe(BODY, "o-1").event
    # kinesisStreamEvent.json is Lambda's record, which nests the first five under "kinesis"; the Pipes
    # sample (eb-pipes-kinesis.html) has the same fields, flat.
    lambda_kinesis = {"kinesisSchemaVersion", "partitionKey", "sequenceNumber", "data", "approximateArrivalTimestamp"}
    lambda_record = {
        "kinesis",
        "eventSource",
        "eventVersion",
        "eventID",
        "eventName",
        "invokeIdentityArn",
        "awsRegion",
        "eventSourceARN",
    }
    assert set(record) == lambda_record - {"kinesis"} | lambda_kinesis
    assert base64.b64decode(record["data"]).decode() == BODY
    assert record["eventID"] == f"shardId-000000000000:{record['sequenceNumber']}"
    assert re.fullmatch(r"\d{56}", record["sequenceNumber"])
    assert isinstance(record["approximateArrivalTimestamp"], float)


# What a duplicate changes: exactly the fields AWS changes


def test_an_sqs_redelivery_has_a_new_receipt_handle_and_one_more_receive():
    first = sqs_via_pipe(BODY)
    again = first.redelivered()
    assert differing(first.event, again.event) == {"[0].receiptHandle", "[0].attributes.ApproximateReceiveCount"}
    assert again.event[0]["attributes"]["ApproximateReceiveCount"] == "2"
    assert again.redelivered().event[0]["attributes"]["ApproximateReceiveCount"] == "3"
    assert first.redelivered(attempt=5).event[0]["attributes"]["ApproximateReceiveCount"] == "5"
    handles = {delivery.event[0]["receiptHandle"] for delivery in (first, again, again.redelivered())}
    assert len(handles) == 3


def test_a_delivery_is_redelivered_as_delivery_2_or_later():
    with pytest.raises(ValueError, match="delivery 2 or later"):
        sqs_via_pipe(BODY).redelivered(attempt=1)


def test_an_sqs_message_sent_again_by_its_producer_is_another_message_with_the_same_body():
    first = sqs_via_pipe(BODY)
    assert differing(first.event, first.duplicated().event) == {
        "[0].messageId",
        "[0].receiptHandle",
        "[0].attributes.SentTimestamp",
        "[0].attributes.ApproximateFirstReceiveTimestamp",
    }
    assert first.duplicated().redelivered().event[0]["messageId"] == first.duplicated().event[0]["messageId"]


def test_a_redelivered_batch_receives_every_message_again():
    first = sqs_batch_via_pipe([BODY, json.dumps({"orderId": "o-2"})])
    changed = {f"[{index}].{path}" for index in (0, 1) for path in ("receiptHandle", "attributes.ApproximateReceiveCount")}
    assert differing(first.event, first.redelivered().event) == changed


def test_a_starter_function_gets_the_same_redelivery_as_a_pipe():
    first = sqs_via_starter(BODY)
    assert differing(first.event, first.redelivered().event) == {"receiptHandle", "attributes.ApproximateReceiveCount"}


def test_an_sns_notification_redelivered_by_sqs_changes_as_an_sqs_message():
    first = sns_to_sqs(BODY, subject="New order")
    assert differing(first.event, first.redelivered().event) == {"[0].receiptHandle", "[0].attributes.ApproximateReceiveCount"}


def test_an_sns_notification_delivered_twice_is_two_sqs_messages_with_one_sns_body():
    first = sns_to_sqs(BODY, subject="New order")
    twice = first.duplicated()
    assert differing(first.event, twice.event) == {
        "[0].messageId",
        "[0].receiptHandle",
        "[0].attributes.SentTimestamp",
        "[0].attributes.ApproximateFirstReceiveTimestamp",
    }
    assert twice.event[0]["body"] == first.event[0]["body"]  # SNS's MessageId and signature included


def test_an_eventbridge_rule_retries_with_the_very_same_event():
    first = eventbridge_rule(ORDER, detail_type="Order Placed", source="com.example.orders")
    assert first.redelivered().event == first.event


def test_an_event_put_again_by_its_producer_has_a_new_id_and_time():
    first = eventbridge_rule(ORDER, detail_type="Order Placed", source="com.example.orders")
    assert differing(first.event, first.duplicated().event) == {"id", "time"}
    assert first.duplicated().duplicated().event["id"] != first.duplicated().event["id"]


def test_s3_sending_a_notification_twice_gives_a_new_event_id_and_the_same_object_event():
    first = s3_via_eventbridge("orders-bucket", "in/o-1.json")
    assert first.redelivered().event == first.event
    assert differing(first.event, first.duplicated().event) == {"id"}


def test_a_client_retrying_a_rest_request_makes_a_new_request_with_the_same_body_and_headers():
    first = api_gateway_rest(BODY, HEADERS)
    assert differing(first.event, first.redelivered().event) == {
        "requestContext.requestId",
        "requestContext.extendedRequestId",
        "requestContext.requestTime",
        "requestContext.requestTimeEpoch",
        "headers.X-Amzn-Trace-Id",
        "multiValueHeaders.X-Amzn-Trace-Id[0]",
    }
    assert first.redelivered().event["requestContext"]["requestTimeEpoch"] > first.event["requestContext"]["requestTimeEpoch"]


def test_a_client_retrying_an_http_api_request_makes_a_new_request_with_the_same_body_and_headers():
    first = api_gateway_http(BODY, HEADERS)
    assert differing(first.event, first.redelivered().event) == {
        "requestContext.requestId",
        "requestContext.time",
        "requestContext.timeEpoch",
        "headers.x-amzn-trace-id",
    }


def test_a_retried_start_execution_request_is_the_same_input():
    first = api_gateway_start_execution(BODY)
    assert first.redelivered().event == first.event


@pytest.mark.parametrize(
    "delivery",
    [
        dynamodb_stream_via_pipe({"pk": "o-1"}, keys={"pk": "o-1"}),
        kinesis_via_pipe(BODY, "o-1"),
    ],
    ids=["dynamodb", "kinesis"],
)
def test_a_retried_stream_batch_is_byte_identical(delivery):
    assert json.dumps(delivery.redelivered().event) == json.dumps(delivery.event)


def test_a_kinesis_record_put_twice_by_its_producer_has_a_new_sequence_number_and_the_same_data():
    first = kinesis_via_pipe(BODY, "o-1")
    assert differing(first.event, first.duplicated().event) == {
        "[0].sequenceNumber",
        "[0].eventID",
        "[0].approximateArrivalTimestamp",
    }


@pytest.mark.parametrize(
    "delivery",
    [
        api_gateway_rest(BODY, HEADERS),
        api_gateway_http(BODY, HEADERS),
        api_gateway_start_execution(BODY),
        dynamodb_stream_via_pipe({"pk": "o-1"}, keys={"pk": "o-1"}),
    ],
    ids=["rest", "http", "start-execution", "dynamodb"],
)
def test_a_source_with_no_documented_duplicate_but_a_redelivery_says_so(delivery):
    with pytest.raises(TypeError, match="redelivered"):
        delivery.duplicated()


# Reproducible, and distinct where AWS makes values distinct


def test_the_same_call_gives_the_same_event():
    assert sns_to_sqs(BODY).event == sns_to_sqs(BODY).event
    assert api_gateway_rest(BODY, HEADERS).redelivered().event == api_gateway_rest(BODY, HEADERS).redelivered().event


def test_different_content_or_another_seed_never_shares_an_id():
    other = json.dumps({"orderId": "o-2"})
    assert sqs_via_pipe(BODY).event[0]["messageId"] != sqs_via_pipe(other).event[0]["messageId"]
    assert sqs_via_pipe(BODY).event[0]["messageId"] != sqs_via_pipe(BODY, seed=1).event[0]["messageId"]
    first, later = (eventbridge_rule(ORDER, detail_type="Order Placed", source="s", seed=seed).event for seed in (0, 1))
    assert differing(first, later) == {"id", "time"}


# The module's table: each recommended key holds across every duplicate of a source and tells two orders
# apart; each recommended payload is the same in every duplicate; the whole input is not.


@dataclass(frozen=True)
class Advice:
    source: str
    deliver: Callable[[dict[str, Any]], Delivery]
    duplicates: Callable[[Delivery], list[Delivery]]
    keys: tuple[tuple[str, ...] | str, ...]  # paths as a tuple, JSONata as a string
    payloads: tuple[str, ...]


def redeliveries(delivery: Delivery) -> list[Delivery]:
    return [delivery.redelivered(), delivery.redelivered().redelivered()]


def every_duplicate(delivery: Delivery) -> list[Delivery]:
    return [*redeliveries(delivery), delivery.duplicated(), delivery.duplicated().redelivered()]


ADVICE = [
    Advice(
        "sqs_via_pipe",
        lambda order: sqs_via_pipe(json.dumps(order)),
        redeliveries,
        (("$[0].messageId",), "$parse($states.input[0].body).orderId"),
        ("$[0].body", "$parse($states.input[0].body)"),
    ),
    Advice(
        "sqs_via_pipe",
        lambda order: sqs_via_pipe(json.dumps(order)),
        every_duplicate,
        ("$parse($states.input[0].body).orderId",),
        ("$[0].body", "$parse($states.input[0].body)"),
    ),
    Advice(
        "sqs_via_starter",
        lambda order: sqs_via_starter(json.dumps(order)),
        redeliveries,
        (("$.messageId",), "$parse($states.input.body).orderId"),
        ("$.body", "$parse($states.input.body)"),
    ),
    Advice(
        "sns_to_sqs",
        lambda order: sns_to_sqs(json.dumps(order)),
        every_duplicate,
        ("$parse($states.input[0].body).MessageId", "$parse($parse($states.input[0].body).Message).orderId"),
        ("$[0].body", "$parse($states.input[0].body).Message"),
    ),
    Advice(
        "sns_to_sqs(raw=True)",
        lambda order: sns_to_sqs(json.dumps(order), raw=True),
        every_duplicate,
        ("$parse($states.input[0].body).orderId",),
        ("$[0].body", "$parse($states.input[0].body)"),
    ),
    Advice(
        "eventbridge_rule",
        lambda order: eventbridge_rule(order, detail_type="Order Placed", source="com.example.orders"),
        redeliveries,
        (("$.id",), ("$.detail.orderId",)),
        ("$.detail", "$states.input.detail"),
    ),
    Advice(
        "eventbridge_rule",
        lambda order: eventbridge_rule(order, detail_type="Order Placed", source="com.example.orders"),
        every_duplicate,
        (("$.detail.orderId",),),
        ("$.detail", "$states.input.detail"),
    ),
    Advice(
        "s3_via_eventbridge",
        lambda order: s3_via_eventbridge("orders-bucket", f"in/{order['orderId']}.json"),
        every_duplicate,
        (
            ("$.detail.bucket.name", "$.detail.object.key", "$.detail.object.etag"),
            "$states.input.detail.[bucket.name, object.key, object.etag]",
        ),
        ("$.detail.object.size", "$states.input.detail.object.size"),
    ),
    Advice(
        "api_gateway_rest",
        lambda order: api_gateway_rest(json.dumps(order), {**HEADERS, "Idempotency-Key": f"k-{order['orderId']}"}),
        redeliveries,
        (("$.headers['Idempotency-Key']",), "$parse($states.input.body).orderId"),
        ("$.body", "$parse($states.input.body)"),
    ),
    Advice(
        "api_gateway_http",
        lambda order: api_gateway_http(json.dumps(order), {**HEADERS, "Idempotency-Key": f"k-{order['orderId']}"}),
        redeliveries,
        (("$.headers['idempotency-key']",), "$parse($states.input.body).orderId"),
        ("$.body", "$parse($states.input.body)"),
    ),
    Advice(
        "api_gateway_start_execution",
        lambda order: api_gateway_start_execution(json.dumps(order)),
        redeliveries,
        (("$.orderId",), "$states.input.orderId"),
        (),
    ),
    Advice(
        "dynamodb_stream_via_pipe",
        lambda order: dynamodb_stream_via_pipe({"pk": order["orderId"], "amount": 42}, keys={"pk": order["orderId"]}),
        redeliveries,
        (("$[0].eventID",), ("$[0].dynamodb.Keys.pk.S",)),
        ("$[0].dynamodb.NewImage", "$states.input[0].dynamodb.NewImage"),
    ),
    Advice(
        "kinesis_via_pipe",
        lambda order: kinesis_via_pipe(json.dumps(order), order["orderId"]),
        redeliveries,
        (("$[0].eventID",), "$parse($base64decode($states.input[0].data)).orderId"),
        ("$[0].data", "$parse($base64decode($states.input[0].data))"),
    ),
    Advice(
        "kinesis_via_pipe",
        lambda order: kinesis_via_pipe(json.dumps(order), order["orderId"]),
        every_duplicate,
        ("$parse($base64decode($states.input[0].data)).orderId",),
        ("$[0].data", "$parse($base64decode($states.input[0].data))"),
    ),
    Advice(
        "kinesis_via_starter",
        lambda order: kinesis_via_starter(json.dumps(order), order["orderId"]),
        redeliveries,
        (("$.eventID",), "$parse($base64decode($states.input.kinesis.data)).orderId"),
        ("$.kinesis.data", "$parse($base64decode($states.input.kinesis.data))"),
    ),
    Advice(
        "kinesis_via_starter",
        lambda order: kinesis_via_starter(json.dumps(order), order["orderId"]),
        every_duplicate,
        ("$parse($base64decode($states.input.kinesis.data)).orderId",),
        ("$.kinesis.data", "$parse($base64decode($states.input.kinesis.data))"),
    ),
]


def as_key(spec: tuple[str, ...] | str) -> IdempotencyKey:
    return IdempotencyKey.from_paths(*spec) if isinstance(spec, tuple) else IdempotencyKey.from_jsonata(spec)


def select(event: Any, expression: str) -> Any:
    """What a payload selection selects: a JSONPath (``$.a``, ``$[0].b``) or a JSONata expression."""
    if not expression.startswith(("$.", "$[")):
        return evaluate(expression, {"states": {"input": event}})
    for segment in parse_path(expression):
        event = event[segment]
    return event


def test_the_table_names_every_source_and_every_recommended_expression():
    table = sources.__doc__ or ""
    for advice in ADVICE:
        assert advice.source in table
        for spec in advice.keys:
            for expression in spec if isinstance(spec, tuple) else (spec,):
                assert expression in table, expression
        for expression in advice.payloads:
            assert expression in table, expression
    assert set(sources.__all__) - {"Delivery"} <= {advice.source for advice in ADVICE} | {"sqs_batch_via_pipe"}


@pytest.mark.parametrize("advice", ADVICE, ids=lambda advice: f"{advice.source}-{advice.duplicates.__name__}")
def test_a_recommended_key_holds_across_the_duplicates_and_tells_two_orders_apart(advice):
    first = advice.deliver(ORDER)
    other = advice.deliver({"orderId": "o-2", "amount": 42})
    for spec in advice.keys:
        key = as_key(spec)
        ids = {key.record_id(delivery.event, namespace="Orders") for delivery in [first, *advice.duplicates(first)]}
        assert len(ids) == 1, spec
        assert key.record_id(other.event, namespace="Orders") not in ids, spec


@pytest.mark.parametrize(
    "advice", [advice for advice in ADVICE if advice.payloads], ids=lambda advice: f"{advice.source}-{advice.duplicates.__name__}"
)
def test_a_recommended_payload_is_the_same_in_every_duplicate(advice):
    first = advice.deliver(ORDER)
    for expression in advice.payloads:
        selection = select(first.event, expression)
        assert selection is not UNDEFINED, expression
        assert selection not in (None, "", {}, []), expression
        assert all(select(duplicate.event, expression) == selection for duplicate in advice.duplicates(first)), expression


@pytest.mark.parametrize(
    ("source", "delivery"),
    [
        ("sqs_via_pipe", sqs_via_pipe(BODY)),
        ("sns_to_sqs", sns_to_sqs(BODY)),
        ("api_gateway_rest", api_gateway_rest(BODY, HEADERS)),
        ("api_gateway_http", api_gateway_http(BODY, HEADERS)),
    ],
)
def test_the_whole_input_is_not_the_payload_where_a_redelivery_changes_the_envelope(source, delivery):
    # Why the table selects a payload: with the whole input (the default), these redeliveries would be
    # a PayloadMismatch.
    whole = IdempotencyKey.whole_input()
    assert whole.record_id(delivery.event, namespace="Orders") != whole.record_id(
        delivery.redelivered().event, namespace="Orders"
    )


@pytest.mark.parametrize(
    ("delivery", "path"),
    [
        (sns_to_sqs(BODY), "$[0].messageId"),
        (s3_via_eventbridge("orders-bucket", "in/o-1.json"), "$.id"),
        (kinesis_via_pipe(BODY, "o-1"), "$[0].eventID"),
    ],
    ids=["sns-sqs-message-id", "s3-event-id", "kinesis-event-id"],
)
def test_a_technical_id_is_not_a_key_where_aws_duplicates_the_message_under_a_new_one(delivery, path):
    key = IdempotencyKey.from_paths(path)
    assert key.record_id(delivery.event, namespace="Orders") != key.record_id(delivery.duplicated().event, namespace="Orders")
