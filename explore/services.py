"""What the generated states call, answered as AWS would answer: DynamoDB's item API (by moto, the project's
emulator, evaluating each request's ConditionExpression and UpdateExpression on the item as the explored
world holds it), the library's own Lambda functions (the result, key and release functions' handlers, as
they are deployed), ``DescribeExecution`` (from the world's executions), and the side effect the explorer
plays itself.

Each answer is a pure function of the request and the world it reads, so it is computed once
(``functools.lru_cache`` on the texts): the explorer meets the same request on the same item in many of
its states.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
from collections.abc import Iterator
from functools import cache
from typing import Any, NamedTuple

from idempotent_constructs.lambda_src import canonical, compute_key, release, results, schema

from .world import text, value

TABLE = "explored"
# What the explorer's side effect returns, as a LambdaInvoke's Payload: whose it is, padded where asked.
EFFECT = "effect"


class Reply(NamedTuple):
    """A call's answer: the result, or an error name and cause; and for an item call, the item after it
    (``before`` unchanged where the call changed nothing)."""

    result: Any = None
    error: str | None = None
    cause: str = ""
    item: str | None = None  # the item after the call, as text (None: absent)

    @property
    def failed(self) -> bool:
        return self.error is not None


class Services:
    """DynamoDB on moto, and the library's functions: open while the explorer runs (``open``)."""

    def __init__(self) -> None:
        self._stack = contextlib.ExitStack()
        self.client: Any = None

    def __enter__(self) -> Services:
        import boto3
        from moto import mock_aws

        for name, setting in (("AWS_ACCESS_KEY_ID", "explorer"), ("AWS_SECRET_ACCESS_KEY", "explorer")):
            self._stack.enter_context(_environment(name, setting))
        self._stack.enter_context(_environment("AWS_DEFAULT_REGION", "us-east-1"))
        self._stack.enter_context(_environment(schema.TABLES_ENV, TABLE))  # the release function's tables
        self._stack.enter_context(mock_aws())
        self.client = boto3.client("dynamodb", region_name="us-east-1")
        # Within an emulator already running (a test session's), moto keeps its state when this mock ends: the
        # table is made afresh, and dropped on the way out.
        with contextlib.suppress(self.client.exceptions.ResourceNotFoundException):
            self.client.delete_table(TableName=TABLE)
        self.client.create_table(
            TableName=TABLE,
            BillingMode="PAY_PER_REQUEST",
            KeySchema=[{"AttributeName": schema.ID, "KeyType": "HASH"}],
            AttributeDefinitions=[
                {"AttributeName": schema.ID, "AttributeType": "S"},
                {"AttributeName": schema.HELD_BY, "AttributeType": "S"},
            ],
            GlobalSecondaryIndexes=[  # the holder index the release function lists an execution's records by
                {
                    "IndexName": schema.HOLDER_INDEX,
                    "KeySchema": [{"AttributeName": schema.HELD_BY, "KeyType": "HASH"}],
                    "Projection": {"ProjectionType": "KEYS_ONLY"},
                }
            ],
        )
        self._stack.callback(self.client.delete_table, TableName=TABLE)
        for module in (results, compute_key, release):
            level = module.logger.log_level
            module.logger.setLevel("CRITICAL")  # the functions' own logs are not the explorer's output
            self._stack.callback(module.logger.setLevel, level)
        results._clients.clear()  # made again inside the emulator
        self._stack.callback(results._clients.clear)
        _SERVICES.append(self)
        self._stack.callback(_SERVICES.remove, self)
        return self

    def __exit__(self, *exc_info: Any) -> None:
        item_call.cache_clear()
        function_call.cache_clear()
        release_call.cache_clear()
        self._stack.close()

    def load(self, record_id: str, item: str | None) -> None:
        """Make the emulator's table hold ``item`` (as text) alone (through moto's table itself: the call
        that follows is the one that goes through the API)."""
        table = self._table()
        table.items.clear()
        if item is not None:
            table.put_item(value(item))

    def read(self, record_id: str) -> str | None:
        from moto.dynamodb.models.dynamo_type import DynamoType

        found = self._table().get_item(DynamoType({"S": record_id}), None)
        return None if found is None else text(_from_boto(found.to_json()["Attributes"]))

    def _table(self) -> Any:
        from moto.dynamodb.models import dynamodb_backends

        return dynamodb_backends["123456789012"]["us-east-1"].get_table(TABLE)


_SERVICES: list[Services] = []


class Unexpected(Exception):
    """A function asked for something the explorer does not model, or failed as it never should."""


# The errors the functions raise by design (each named for Step Functions), as Lambda reports them.
FUNCTION_ERRORS = (
    results.LeaseLost,
    results.ResultMissing,
    results.ResultTooLarge,
    compute_key.InputTooLarge,
    canonical.KeyMissing,
    canonical.PayloadMissing,
)


def _open() -> Services:
    if not _SERVICES:
        raise RuntimeError("the explorer's services are not open: use `with Services():`")
    return _SERVICES[-1]


@contextlib.contextmanager
def _environment(name: str, setting: str) -> Iterator[None]:
    before = os.environ.get(name)
    os.environ[name] = setting
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before


def _to_boto(typed: Any) -> Any:
    """An item or value in DynamoDB's typed form, as JSON carries it (binary base64), as boto3 takes it."""
    if isinstance(typed, dict):
        return {key: base64.b64decode(inner) if key == "B" else _to_boto(inner) for key, inner in typed.items()}
    return [_to_boto(inner) for inner in typed] if isinstance(typed, list) else typed


def _from_boto(typed: Any) -> Any:
    """boto3's answer as JSON carries it, as Step Functions' DynamoDB integration hands it over (binary
    base64: ``testing.gaps.dynamodb_binary``)."""
    if isinstance(typed, (bytes, bytearray)):
        return base64.b64encode(typed).decode()
    if isinstance(typed, dict):
        return {key: _from_boto(inner) for key, inner in typed.items() if key != "ResponseMetadata"}
    return [_from_boto(inner) for inner in typed] if isinstance(typed, list) else typed


ITEM_ACTIONS = {"getItem": "get_item", "putItem": "put_item", "updateItem": "update_item", "deleteItem": "delete_item"}
WRITES = ("putItem", "updateItem", "deleteItem")


@cache
def item_call(action: str, request: str, item: str | None) -> Reply:
    """DynamoDB's answer to ``action`` (the integration's name, ``updateItem``) with ``request`` (text),
    on the table holding ``item`` (text) alone: moto evaluates the request, conditions and validation
    included."""
    from botocore.exceptions import ClientError

    services = _open()
    asked = value(request)
    record_id = asked["Key"][schema.ID]["S"]
    services.load(record_id, item)
    try:
        answer = getattr(services.client, ITEM_ACTIONS[action])(**{**_to_boto(asked), "TableName": TABLE})
    except ClientError as error:
        code = error.response["Error"]["Code"]
        return Reply(error=f"DynamoDB.{code}", cause=error.response["Error"].get("Message", ""), item=item)
    except Exception as error:  # a request moto cannot even read (a typed value without its type): DynamoDB refuses it
        return Reply(error="DynamoDB.ValidationException", cause=f"{type(error).__name__}: {error}", item=item)
    return Reply(result=_from_boto(answer), item=services.read(record_id))


@cache
def function_call(kind: str, event: str, item: str | None, now: int) -> Reply:
    """The library's function ``kind`` ("result" or "key") invoked with ``event`` (text), its table holding
    ``item``, at ``now`` (the function's clock, epoch milliseconds): its return value, or its error as
    Lambda reports it (the exception's name, and a cause with its message)."""
    services = _open()
    asked = value(event)
    if "table" in asked:
        asked = {**asked, "table": TABLE}
    record_id = asked.get("id") or asked.get("idempotency", {}).get("id")
    if record_id is not None:
        services.load(record_id, item)
    handler = results.handler if kind == "result" else compute_key.handler
    with _clock(now):
        try:
            returned = handler(asked)
        except FUNCTION_ERRORS as error:  # the function failed as it may: Lambda reports its type and message
            name = type(error).__name__
            cause = json.dumps({"errorMessage": str(error), "errorType": name})
            return Reply(error=name, cause=cause, item=item)
        except Exception as error:
            raise Unexpected(f"the {kind} function raised {type(error).__name__}: {error}") from error
    after = services.read(record_id) if record_id is not None else item
    return Reply(result=returned, item=after)


class _Time:
    def __init__(self, now: int) -> None:
        self.now = now

    def time(self) -> float:
        return self.now / 1000


@contextlib.contextmanager
def _replaced(module: Any, name: str, stand_in: Any) -> Iterator[None]:
    """``module.name`` is ``stand_in`` while the block runs: what a function reads from the world, the
    explorer's (its clock, its clients)."""
    real = getattr(module, name)
    setattr(module, name, stand_in)
    try:
        yield
    finally:
        setattr(module, name, real)


def _clock(now: int) -> contextlib.AbstractContextManager[None]:
    """The result function reads the time for a record's expiration: the explorer's."""
    return _replaced(results, "time", _Time(now))


class _StepFunctions:
    """What the release function asks Step Functions, answered from the explored world: the execution's
    status and redrive count."""

    def __init__(self, status: str, redrives: int) -> None:
        self.status, self.redrives = status, redrives

    def describe_execution(self, executionArn: str, **_: Any) -> dict[str, Any]:  # boto3's names
        return {"executionArn": executionArn, "status": self.status, "redriveCount": self.redrives}


@cache
def release_call(event: str, status: str, redrives: int, record_id: str, item: str | None) -> Reply:
    """The release function's handler run on ``event``, the execution now ``status`` after ``redrives``
    redrives; the table holding ``item``, which it lists by its holder index. The one item the explorer
    has is the only one it may delete."""
    services = _open()
    services.load(record_id, item)
    sfn = _StepFunctions(status, redrives)

    class Clients:
        @staticmethod
        def client(service: str, **options: Any) -> Any:
            if service == "stepfunctions":
                return sfn
            if service != "dynamodb" or options:
                raise Unexpected(f"the release function asked for a {service} client the explorer does not give")
            return services.client

    with _replaced(release, "boto3", Clients):
        try:
            returned = release.handler(json.loads(event))
        except Exception as error:  # nothing here is transient: a failure is the explorer's or the function's
            raise Unexpected(f"the release function raised {type(error).__name__}: {error}") from error
    return Reply(result=returned, item=services.read(record_id))


def effect(run: str, padding: int) -> dict[str, Any]:
    """The side effect's result (a LambdaInvoke's Payload): which run made it, padded to ``padding`` bytes."""
    result: dict[str, Any] = {EFFECT: run}
    if padding:
        result["padding"] = "x" * padding
    return result


def invoked(payload: Any) -> dict[str, Any]:
    """A ``lambda:invoke`` integration's result around a function's ``payload``."""
    return {"ExecutedVersion": "$LATEST", "Payload": payload, "StatusCode": 200}


def table_request(request: dict[str, Any]) -> str:
    """A request as the explorer keeps it: the table named as in the emulator."""
    return text({**request, "TableName": TABLE})
