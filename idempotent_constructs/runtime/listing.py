"""Listing a table's records (``list_records``, which ``operations`` re-exports): one namespace through the
table's index of namespaces, every namespace or a prefix by a scan. Plain boto3, no CDK."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from ..lambda_src import schema


def dynamodb_client(client: Any) -> Any:
    """``client``, or by default ``boto3.client("dynamodb")`` (which honours ``AWS_ENDPOINT_URL``)."""
    if client is not None:
        return client
    import boto3

    return boto3.client("dynamodb")


def list_records(
    table_name: str,
    *,
    namespace: str | None = None,
    status: str | None = None,
    after: str | None = None,
    client: Any = None,
    on_page: Callable[[int], None] | None = None,
) -> Iterator[dict[str, Any]]:
    """The table's records (DynamoDB JSON), optionally of one namespace and one status, lazily.

    One namespace is read through the table's index of namespaces (``schema.NAMESPACE_INDEX``, which
    ``IdempotencyTable`` creates): its records only, in id order, each read consistently. Every namespace, or
    those starting with a prefix, is a paginated Scan with a filter, in the table's scan order, which reads
    (and is billed for) the whole table; so is one namespace where the table has no such index (a table of
    your own) or where the index holds none of its records. Records written without the index's attribute
    (Powertools' for a function; the library's before the index) are listed only by a scan: a prefix
    (``"Orders*"``) scans. A listing
    never holds the table in memory.

    :param namespace: only records of this namespace (ids ``"{namespace}#..."``). A trailing ``*``
        selects every namespace that starts with the rest, for example ``"Orders/*"`` (a namespace
        never contains ``*``). Default: every namespace.
    :param status: only records with this status (``INPROGRESS``, ``COMPLETED``, ``FAILED``).
        Default: any status.
    :param after: resume after the record with this id, the last one a previous listing returned
        (it need not exist any more). Default: from the start.
    :param on_page: called with the number of records each page read, to show progress.
    """
    dynamodb = dynamodb_client(client)
    if namespace is not None and not namespace.endswith("*"):
        indexed = _by_index(dynamodb, table_name, namespace, status, after, on_page)
        try:
            first = next(indexed, None)
        except dynamodb.exceptions.ClientError as error:
            # The table has no such index: AWS says ValidationException, moto ResourceNotFoundException.
            if error.response["Error"]["Code"] not in ("ValidationException", "ResourceNotFoundException"):
                raise
        else:
            if first is not None:
                yield first
                yield from indexed
                return
            # Nothing in the index: the namespace may hold records written without a shard (Powertools', or
            # written before the index was added), which only a scan finds.
    yield from _scanned(dynamodb, table_name, namespace, status, after, on_page)


def _by_index(
    dynamodb: Any, table_name: str, namespace: str, status: str | None, after: str | None, on_page: Callable[[int], None] | None
) -> Iterator[dict[str, Any]]:
    """``list_records`` of one namespace through its index: each shard's ids in order, the shards in order."""
    start = schema.shard_of(after) if after is not None else ""
    for digit in schema.SHARDS:
        shard = schema.id_prefix(namespace) + digit
        if shard < start:
            continue
        request: dict[str, Any] = {
            "TableName": table_name,
            "IndexName": schema.NAMESPACE_INDEX,
            "KeyConditionExpression": f"#{schema.SHARD} = :shard" + (f" AND #{schema.ID} > :after" if shard == start else ""),
            "ExpressionAttributeNames": {
                f"#{schema.SHARD}": schema.SHARD,
                **({f"#{schema.ID}": schema.ID} if shard == start else {}),
            },
            "ExpressionAttributeValues": {":shard": {"S": shard}, **({":after": {"S": after}} if shard == start else {})},
        }
        for page in dynamodb.get_paginator("query").paginate(**request):
            ids = [item[schema.ID]["S"] for item in page["Items"]]
            if on_page is not None:
                on_page(len(ids))
            for start_at in range(0, len(ids), 100):  # BatchGetItem takes 100 keys at most
                read = _batch_get(dynamodb, table_name, ids[start_at : start_at + 100])
                for record_id in ids[start_at : start_at + 100]:
                    item = read.get(record_id)  # gone since the index was read: left out
                    if item is not None and (status is None or item.get(schema.STATUS, {}).get("S") == status):
                        yield item


def _batch_get(dynamodb: Any, table_name: str, ids: list[str]) -> dict[str, dict[str, Any]]:
    """The records of ``ids`` that exist, by id, read consistently (unprocessed keys asked for again)."""
    found: dict[str, dict[str, Any]] = {}
    keys = [{schema.ID: {"S": record_id}} for record_id in ids]
    while keys:
        answer = dynamodb.batch_get_item(RequestItems={table_name: {"Keys": keys, "ConsistentRead": True}})
        for item in answer["Responses"].get(table_name, []):
            found[item[schema.ID]["S"]] = item
        keys = answer.get("UnprocessedKeys", {}).get(table_name, {}).get("Keys", [])
    return found


def _scanned(
    dynamodb: Any,
    table_name: str,
    namespace: str | None,
    status: str | None,
    after: str | None,
    on_page: Callable[[int], None] | None,
) -> Iterator[dict[str, Any]]:
    """``list_records`` by a Scan with a filter."""
    conditions, names, values = [], {}, {}
    if namespace is not None:
        prefix = namespace[:-1] if namespace.endswith("*") else schema.id_prefix(namespace)
        conditions.append(f"begins_with(#{schema.ID}, :prefix)")
        names[f"#{schema.ID}"] = schema.ID
        values[":prefix"] = {"S": prefix}
    if status is not None:
        conditions.append(f"#{schema.STATUS} = :status")
        names[f"#{schema.STATUS}"] = schema.STATUS
        values[":status"] = {"S": status}
    request: dict[str, Any] = {"TableName": table_name}
    if conditions:
        request |= {
            "FilterExpression": " AND ".join(conditions),
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
        }
    if after is not None:
        request["ExclusiveStartKey"] = {schema.ID: {"S": after}}
    for page in dynamodb.get_paginator("scan").paginate(**request):
        if on_page is not None:
            on_page(page.get("ScannedCount", 0))
        yield from page["Items"]
