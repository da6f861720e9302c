"""Finding the idempotency table of a deployed stack, for the command-line tool and runbooks (plain
boto3, no CDK)."""

from __future__ import annotations

import re
from typing import Any

from ..errors import TableNotFoundError
from ..lambda_src import schema

# A table's ARN, or one under it (a stream's, an index's): the table name.
_TABLE_ARN = re.compile(r"^arn:[^:]+:dynamodb:[^:]*:[^:]*:table/([^/]+)(?:/.*)?$", re.DOTALL)
_NAMES_THE_TABLE = re.compile(r"idempotency.*table|table.*idempotency", re.IGNORECASE | re.DOTALL)


def table_of_stack(stack_name: str, *, cloudformation: Any = None, dynamodb: Any = None) -> str:
    """The name of the idempotency table of a deployed stack.

    In this order: the stack output whose key or description names an idempotency table (both
    words, for example ``IdempotencyTableName``; its value may be the name or the ARN); else the
    stack's one ``AWS::DynamoDB::Table`` whose key is a partition key ``id`` alone; else, among
    several such tables, the one whose TTL attribute is ``expiration``. A table adopted with
    ``IdempotencyTable(table=...)`` is not a resource of the stack: name it in an output, or pass the
    table name instead.

    :raises TableNotFoundError: no such table, or several that cannot be told apart.
    """
    import boto3

    cloudformation = cloudformation or boto3.client("cloudformation")
    dynamodb = dynamodb or boto3.client("dynamodb")
    (stack,) = cloudformation.describe_stacks(StackName=stack_name)["Stacks"]
    outputs = {
        output["OutputKey"]: _TABLE_ARN.sub(r"\1", output["OutputValue"])
        for output in stack.get("Outputs", [])
        if _NAMES_THE_TABLE.search(f"{output['OutputKey']} {output.get('Description', '')}")
    }
    if len(set(outputs.values())) == 1:
        return next(iter(outputs.values()))
    if outputs:
        raise TableNotFoundError(
            f"stack {stack_name!r} has several outputs naming an idempotency table "
            f"({', '.join(f'{key}={value}' for key, value in sorted(outputs.items()))}); pass the table name instead"
        )
    tables = {
        resource["LogicalResourceId"]: resource["PhysicalResourceId"]
        for page in cloudformation.get_paginator("list_stack_resources").paginate(StackName=stack_name)
        for resource in page["StackResourceSummaries"]
        if resource["ResourceType"] == "AWS::DynamoDB::Table" and resource.get("PhysicalResourceId")
    }
    keyed_by_id = {
        logical_id: name
        for logical_id, name in tables.items()
        if dynamodb.describe_table(TableName=name)["Table"]["KeySchema"] == [{"AttributeName": schema.ID, "KeyType": "HASH"}]
    }
    candidates = keyed_by_id
    if len(candidates) > 1:
        candidates = {
            logical_id: name
            for logical_id, name in keyed_by_id.items()
            if _expires_on_expiration(dynamodb.describe_time_to_live(TableName=name)["TimeToLiveDescription"])
        }
    if len(candidates) == 1:
        return str(next(iter(candidates.values())))
    if not keyed_by_id:
        raise TableNotFoundError(
            f"stack {stack_name!r} has no idempotency table: no output names one and none of its "
            f"{len(tables)} DynamoDB tables has the partition key {schema.ID!r} alone; pass the table name instead"
        )
    raise TableNotFoundError(
        f"stack {stack_name!r} has several tables that may hold idempotency records "
        f"({', '.join(f'{logical_id}={name}' for logical_id, name in sorted(keyed_by_id.items()))}); "
        "pass the table name instead"
    )


def _expires_on_expiration(ttl: dict[str, Any]) -> bool:
    return ttl.get("TimeToLiveStatus") in ("ENABLED", "ENABLING") and ttl.get("AttributeName") == schema.EXPIRATION
