"""API Gateway: a REST API's request (payload format 1.0, ``api_gateway_rest``) and an HTTP API's (payload
format 2.0, ``api_gateway_http``) as a Lambda proxy integration hands them to a starter function, and a REST
API integrated with ``StartExecution`` directly (``api_gateway_start_execution``), each with the pages of
AWS's documentation that show its event and a client's retry.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from typing import Any

from ..._readers.assembly import ACCOUNT, REGION
from .envelope import _ALNUM, _CLIENT_IP, _LOWER_ALNUM, Delivery, _chars, _clf, _content, _hex, _millis, _moment, _uuid


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
