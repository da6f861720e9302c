"""The calls faults are injected into: what identifies one, so that a seed replays its faults, and the
error AWS answers a failed one with, so that the caller's own retry rules meet what they meet on AWS.

A call is identified by its service, its operation, its resources (the tables, the function) and the
content that tells two calls apart: a DynamoDB call's items' keys, not the whole request (the rest of a
request, a lease's expiry or an owner token naming the execution, differs from run to run, where the
item it reads or writes does not), and an invocation's qualifier and payload. A name CloudFormation
generated counts without the unique string that ends it, so that a seed replays its faults on the next
deployment of the stack too. Faults are drawn from this identity, the number of times the same identity
was seen before and the seed, never from the order in which threads happen to run (``Faults``).
Identical calls are interchangeable: when two of them race (two executions writing one item, one
function invoked twice with one payload), which of them is the first and which the second depends on
timing.

A fault answers as the AWS service itself answers: its HTTP status, its error code, its message. botocore
retries a 500 and the throttling codes, so a user's own Lambda function that writes to DynamoDB under
injected faults recovers through its SDK as it would on AWS: in standard mode (the default of the
botocore installed here), up to 4 attempts for DynamoDB, throttles among them ``RequestLimitExceeded``
and ``TooManyRequestsException``; in legacy mode, up to 10 for DynamoDB, a 429, ``ThrottlingException``
and ``ProvisionedThroughputExceededException`` but not ``RequestLimitExceeded``, as on AWS. The Step
Functions interpreter calls through clients with retries turned off (moto's ``boto_client_for``:
``total_max_attempts`` 1, which ``gaps.boto_clients`` keeps), so every fault reaches the state's own
``Retry`` and ``Catch``, as Step Functions' integrations surface a service's error (``DynamoDB.<code>``,
``Lambda.<code>``): a test of a state's retries counts them alone. What tells an answer apart as
injected is a header of its own, ``x-injected-fault`` (the kind of fault), which botocore hands over in
``ClientError.response["ResponseMetadata"]["HTTPHeaders"]``.
"""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from moto.core.exceptions import JsonRESTError

MARKER_HEADER = "x-injected-fault"
# The prefix DynamoDB writes before its error codes in "__type" (Amazon DynamoDB Developer Guide,
# "Error handling with DynamoDB", "Error components": the example response's body).
_DYNAMODB_TYPE = "com.amazonaws.dynamodb.v20120810#"


@dataclass(frozen=True)
class AwsError:
    """An error as the service answers it: ``code`` (botocore's ``Error.Code``), HTTP ``status``,
    ``message``, and the other fields of its body (Lambda's ``Type`` and ``Reason``; ``message_field``,
    the member its model names the message: ``message``, or ``Message`` for Lambda's ServiceException)."""

    code: str
    status: int
    message: str
    fields: dict[str, str] = field(default_factory=dict)
    message_field: str = "message"


# DynamoDB, as its developer guide lists them ("Error handling with DynamoDB", "Error messages and codes":
# each exception with its HTTP status code and message; "OK to retry? Yes" for all four), and as the API
# reference lists them among GetItem's, PutItem's, UpdateItem's, DeleteItem's and TransactWriteItems'
# errors ("InternalServerError: An error occurred on the server side. HTTP Status Code: 500").
DYNAMODB_ERRORS = {
    error.code: error
    for error in (
        AwsError(
            "ProvisionedThroughputExceededException",
            400,
            "You exceeded your maximum allowed provisioned throughput for a table or for one or more global "
            "secondary indexes. To view performance metrics for provisioned throughput vs. consumed throughput, "
            "open the Amazon CloudWatch console.",
        ),
        AwsError("ThrottlingException", 400, "Rate of requests exceeds the allowed throughput."),
        AwsError(
            "RequestLimitExceeded",
            400,
            "Throughput exceeds the current throughput limit for your account. To request a limit increase, "
            "contact AWS Support at https://aws.amazon.com/support.",
        ),
        # The guide gives no message for a 500 ("DynamoDB could not process your request"); this is the one
        # DynamoDB sends (quoted in aws/aws-sdk-js#3891: "Error [InternalServerError]: Internal server error").
        AwsError("InternalServerError", 500, "Internal server error"),
    )
}
# Not DynamoDB's codes: the names Step Functions' DynamoDB integration may give a failure that has none
# of its own (guard/protocol.py, TRANSIENT_DYNAMODB_ERRORS): AmazonDynamoDBException, the AWS SDK for
# Java's base exception, and SdkClientException, its client-side failure (no reply at all). They exist
# to show that a state's Retry matches those names too; sent as a 500 (no AWS answer has them), so that
# any other caller's SDK retries them as a server error. Aim them at the idempotency table (``tables=``).
INTEGRATION_NAMES = {
    name: AwsError(name, 500, "Internal server error") for name in ("AmazonDynamoDBException", "SdkClientException")
}
# A write applied, its reply lost: what the caller gets is DynamoDB's 500.
LOST_REPLY = DYNAMODB_ERRORS["InternalServerError"]

# Lambda's Invoke (AWS Lambda API Reference, "Invoke", "Errors": "TooManyRequestsException: The request
# throughput limit was exceeded. HTTP Status Code: 429"; "ServiceException: The Lambda service encountered
# an internal error. HTTP Status Code: 500"). The throttle's message and fields are those
# the service sends ("Rate Exceeded.", its "Type" and "Reason": AWS re:Post Knowledge Center, "How do I
# troubleshoot Lambda function throttling with 'Rate exceeded' and 429 'TooManyRequestsException'
# errors?"; the Reason values are the API reference's ThrottleReason).
LAMBDA_ERRORS = {
    error.code: error
    for error in (
        AwsError(
            "TooManyRequestsException",
            429,
            "Rate Exceeded.",
            {"Type": "User", "Reason": "ConcurrentInvocationLimitExceeded"},
        ),
        AwsError("ServiceException", 500, "The Lambda service encountered an internal error.", {"Type": "Service"}, "Message"),
    )
}


def dynamodb_error(name: str) -> AwsError:
    """The answer of ``Faults.dynamodb_error`` ``name``; ``ValueError`` naming the choices for another."""
    if name in DYNAMODB_ERRORS:
        return DYNAMODB_ERRORS[name]
    if name in INTEGRATION_NAMES:
        return INTEGRATION_NAMES[name]
    raise ValueError(
        f"Faults.dynamodb_error must be one of DynamoDB's transient errors ({', '.join(DYNAMODB_ERRORS)}) or one "
        f"of the integration's names ({', '.join(INTEGRATION_NAMES)}), got {name!r}"
    )


def lambda_error(name: str | None) -> AwsError | None:
    """The answer of ``Faults.lambda_error`` ``name`` (None: each fault draws one of the two)."""
    if name is None or name in LAMBDA_ERRORS:
        return LAMBDA_ERRORS[name] if name else None
    raise ValueError(f"Faults.lambda_error must be None or one of {', '.join(LAMBDA_ERRORS)}, got {name!r}")


class InjectedFault(JsonRESTError):  # type: ignore[misc]  # moto's, seen as Any
    """An error answer moto's response handlers send as it is: its status, DynamoDB's ``__type`` or
    Lambda's ``x-amzn-ErrorType``, its body, and the marker header naming the fault's kind."""

    def __init__(self, error: AwsError, kind: str, *, service: str) -> None:
        super().__init__(f"{_DYNAMODB_TYPE}{error.code}" if service == "dynamodb" else error.code, error.message)
        self.code = error.status
        self.kind = kind
        if service != "dynamodb":
            self.description = json.dumps({**error.fields, error.message_field: error.message})

    def get_headers(self, *args: Any, **kwargs: Any) -> list[tuple[str, str]]:
        return [*super().get_headers(*args, **kwargs), (MARKER_HEADER, self.kind)]


# moto's handler method for each DynamoDB item operation, and the operation's API name.
DYNAMODB_OPERATIONS = {
    "get_item": "GetItem",
    "put_item": "PutItem",
    "update_item": "UpdateItem",
    "delete_item": "DeleteItem",
    "transact_write_items": "TransactWriteItems",
}
_TRANSACTION_ACTIONS = ("Put", "Update", "Delete", "ConditionCheck")
# The unique string that ends a name CloudFormation generates ("{stack}-{logical id}-{string}"; AWS
# CloudFormation User Guide, "Name type"; moto's are 12 of A-Z and 0-9): new on every deployment.
_GENERATED_SUFFIX = re.compile(r"-[A-Z0-9]{12,13}$")
_MOST_CONTENT_LOGGED = 200


@dataclass(frozen=True)
class Call:
    """One request: ``service`` ("dynamodb" or "lambda"), ``operation`` (its API name), ``resources``
    (table names, or the function's name) and ``content`` (the items' keys as JSON, or the invocation's
    qualifier and payload)."""

    service: str
    operation: str
    resources: tuple[str, ...]
    content: str

    @property
    def identity(self) -> str:
        """What identifies the call, the same on the next deployment of the same stack (``stable_name``)."""
        resources = ",".join(stable_name(resource) for resource in self.resources)
        return "\x1f".join((self.service, self.operation, resources, self.content))

    @property
    def shown(self) -> str:
        """``content`` as a fault's record shows it: cut to 200 characters."""
        cut = self.content[:_MOST_CONTENT_LOGGED]
        return cut if cut == self.content else f"{cut}…"


def stable_name(name: str) -> str:
    """``name`` without the unique string CloudFormation ends a name it generates with, so that a seed
    replays its faults on another deployment of the stack: ``Orders-CountersB1E3C9A0-OENLB6DRFEM7`` is
    ``Orders-CountersB1E3C9A0``."""
    return _GENERATED_SUFFIX.sub("", name)


def table_name(name: str) -> str:
    """A table's name, from its name or its ARN (``arn:aws:dynamodb:us-east-1:123456789012:table/Orders``)."""
    if name.startswith("arn:") and ":table/" in name:
        return name.split(":table/", 1)[1].split("/")[0]
    return name


def function_name(name: str) -> tuple[str, str]:
    """A function's name and qualifier (or ""), from how Invoke may address it: its name, its ARN or its
    partial ARN (``123456789012:function:Charge``), each with or without a qualifier (``Charge:live``)."""
    if ":function:" in name:
        name = name.split(":function:", 1)[1]
    function, _, qualifier = name.partition(":")
    return function, qualifier


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def _key_of(backend: Any, table: str, request: dict[str, Any]) -> dict[str, Any]:
    """The item's key in a request: its ``Key``, or the key attributes of its ``Item`` (a PutItem)."""
    if "Key" in request:
        return dict(request["Key"])
    item = request.get("Item") or {}
    try:
        found = backend.get_table(table)
        names = [found.hash_key_attr, found.range_key_attr]
    except Exception:  # no such table: moto answers ResourceNotFoundException, drawn on the whole item
        return dict(item)
    return {name: item[name] for name in names if name and name in item}


def dynamodb_call(handler: Any, method: str) -> Call:
    """The call a DynamoDB item request makes (``method``, moto's handler method; ``handler.body``, its
    parameters parsed): each item's table and key, in the request's order."""
    body = handler.body if isinstance(handler.body, dict) else {}
    backend = handler.dynamodb_backend
    if method == "transact_write_items":
        actions = [entry[name] for entry in body.get("TransactItems") or [] for name in _TRANSACTION_ACTIONS if name in entry]
    else:
        actions = [body]
    targets = [(table_name(str(action.get("TableName", ""))), action) for action in actions]
    keys = [[stable_name(table), _key_of(backend, table, action)] for table, action in targets]
    tables = tuple(dict.fromkeys(table for table, _ in targets))
    return Call("dynamodb", DYNAMODB_OPERATIONS[method], tables, _canonical(keys))


def lambda_call(response: Any) -> Call:
    """The call a Lambda Invoke makes: the function's name, and its qualifier and payload."""
    addressed = unquote(response.path.rsplit("/", 2)[-2])  # a name, or an ARN, with or without a qualifier
    function, qualifier = function_name(addressed)
    qualifier = (response.querystring.get("Qualifier") or [qualifier])[0]
    raw = response.body
    payload = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw or "")
    with contextlib.suppress(ValueError):  # not JSON: as it is
        payload = _canonical(json.loads(payload))
    return Call("lambda", "Invoke", (function,), f"{qualifier}\x1f{payload}")
