"""Copying the finished records of a guard whose key changes to the ids its new key computes (``key-migrate``),
so that duplicates of earlier work replay after the deploy instead of running again. Plain boto3, no CDK.

A record holds digests, never its input: the input is read back from the holder's execution, whose id the
record's owner token names (a Standard execution's history, kept 90 days after it ends), or given by the
caller (``inputs``: what an Express workflow, which keeps no history, was started with). An input is the
record's where the previous key computes its id from it; the new key then computes the id the copy gets.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .._jsonata import key_expressions
from .._readers.key_settings import KeySettings
from ..lambda_src import canonical, schema
from .listing import list_records

# What a copy keeps of the record it copies: its outcome, when it expires, and its owner token (the result
# function restores a result kept in S3 only for the token the record names).
_KEPT = (
    schema.STATUS,
    schema.EXPIRATION,
    schema.OWNER,
    schema.DATA,
    schema.DATA_GZIP,
    schema.DATA_LOCATION,
    schema.ERROR,
    schema.CAUSE,
)


@dataclass
class Migration:
    """What ``migrate`` did (with ``dry_run``: would do) to one namespace's records, by outcome, with the ids."""

    copied: list[tuple[str, str]] = field(default_factory=list)  # (old id, new id)
    present: list[str] = field(default_factory=list)  # the new id has a record already: kept
    same: list[str] = field(default_factory=list)  # the new key computes the same id
    unmatched: list[str] = field(default_factory=list)  # no input found that the old key computes this id from
    in_progress: list[str] = field(default_factory=list)  # its holder may still run: migrate again once it ended


def record_id(settings: KeySettings, document: Any) -> tuple[str, str]:
    """``(id, validation)`` that a guard of ``settings`` computes for ``document``, as its states do."""
    selection = key_expressions.select(document, settings.key_kind, settings.key_expression)
    validation = canonical.payload_validation(
        key_expressions.select_payload(document, settings.payload_kind, settings.payload_expression)
    )
    return canonical.selection_id(settings.namespace, settings.key_kind, selection), validation


def migrate(
    table: str,
    old: KeySettings,
    new: KeySettings,
    *,
    dynamodb: Any,
    stepfunctions: Any = None,
    inputs: Iterable[Any] = (),
    dry_run: bool = False,
    on_record: Callable[[str], None] | None = None,
) -> Migration:
    """Copy each finished record of ``old``'s namespace to the id ``new`` computes from its input.

    A copy is written only where the new id has no record (a condition), with the old record's outcome,
    expiration and owner token, and the validation, key format and namespace shard of the new settings; the old
    record is left as it is. A record in progress is left (its holder may still run: wait until it ended).

    :param stepfunctions: a Step Functions client, to read a record's input from its holder's execution history.
        Default: only ``inputs`` are matched.
    :param inputs: documents to match besides, each a guard's input (an execution's, for a whole workflow).
    :param dry_run: write nothing; say what would be copied.
    :param on_record: called with each record id as it is handled, to show progress.
    """
    given = _by_id(old, inputs)
    done = Migration()
    for record in list_records(table, namespace=old.namespace, client=dynamodb):
        old_id = record[schema.ID]["S"]
        if on_record is not None:
            on_record(old_id)
        if record.get(schema.STATUS, {}).get("S") == schema.INPROGRESS:
            done.in_progress.append(old_id)
            continue
        document = given.get(old_id, _missing)
        if document is _missing and stepfunctions is not None:
            document = _by_id(old, _holder_inputs(stepfunctions, record)).get(old_id, _missing)
        if document is _missing:
            done.unmatched.append(old_id)
            continue
        new_id, validation = record_id(new, document)
        if new_id == old_id:
            done.same.append(old_id)
        elif dry_run or _copied(dynamodb, table, record, new_id, validation, new):
            done.copied.append((old_id, new_id))
        else:
            done.present.append(new_id)
    return done


_missing = object()


def _by_id(settings: KeySettings, documents: Iterable[Any]) -> dict[str, Any]:
    """The documents by the id ``settings`` computes from each; those it cannot key are no record's input."""
    found: dict[str, Any] = {}
    for document in documents:
        try:
            found.setdefault(record_id(settings, document)[0], document)
        except (canonical.KeyMissing, canonical.PayloadMissing, ValueError, TypeError):
            continue
    return found


def _holder_inputs(stepfunctions: Any, record: dict[str, Any]) -> Iterator[Any]:
    """The inputs of every state the record's holder execution entered (its guard's among them), and its own."""
    holder = schema.owner_execution(record.get(schema.OWNER, {}).get("S", ""))
    if not holder:
        return
    try:
        pages = stepfunctions.get_paginator("get_execution_history").paginate(executionArn=holder, includeExecutionData=True)
        for page in pages:
            for event in page["events"]:
                details = event.get("stateEnteredEventDetails") or event.get("executionStartedEventDetails") or {}
                if "input" in details:
                    yield json.loads(details["input"])
    except stepfunctions.exceptions.ClientError as error:
        # An Express execution, or a history past its retention: give its inputs with ``inputs``.
        if error.response["Error"]["Code"] not in ("ExecutionDoesNotExist", "InvalidArn", "AccessDeniedException"):
            raise


def _copied(dynamodb: Any, table: str, record: dict[str, Any], new_id: str, validation: str, new: KeySettings) -> bool:
    """Write the copy under ``new_id`` unless a record is there; whether it was written."""
    item = {name: record[name] for name in _KEPT if name in record}
    item.update(
        {
            schema.ID: {"S": new_id},
            schema.VALIDATION: {"S": validation},
            schema.KEY_FORMAT_ATTRIBUTE: {"N": str(new.key_format)},
            schema.SHARD: {"S": schema.shard_of(new_id)},
        }
    )
    try:
        dynamodb.put_item(
            TableName=table,
            Item=item,
            ConditionExpression=f"attribute_not_exists(#{schema.ID})",
            ExpressionAttributeNames={f"#{schema.ID}": schema.ID},
        )
    except dynamodb.exceptions.ConditionalCheckFailedException:
        return False
    return True
