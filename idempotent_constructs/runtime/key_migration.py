"""Copying the finished records of a guard whose key changes to the ids its new key computes (``key-migrate``),
so that duplicates of earlier work replay after the deploy instead of running again. Plain boto3, no CDK.

A record holds digests, never its input: the input is read back from the holder's execution, whose id the
record's owner token names (a Standard execution's history, kept 90 days after it ends), or given by the
caller (``inputs``: what an Express workflow, which keeps no history, was started with). An input is the
record's where the previous key computes its id and its validation from it; the new key then computes the id
the copy gets.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
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
    present: list[str] = field(default_factory=list)  # the new id has a record already: kept (a copy, or new work)
    same: list[str] = field(default_factory=list)  # the new key computes the same id
    unkeyable: list[str] = field(default_factory=list)  # the new key cannot key its input (a field it lacks)
    in_s3: list[str] = field(default_factory=list)  # its result is in S3 under the old namespace: keep namespace=
    unmatched: list[str] = field(default_factory=list)  # no input found from which the old key computes it
    in_progress: list[str] = field(default_factory=list)  # its holder may still run: migrate again once it ended

    @property
    def complete(self) -> bool:
        """Every finished record of the namespace is found under the new key, or could not be (``unkeyable``)."""
        return not (self.in_progress or self.unmatched or self.in_s3)


# The guard's states whose input is the guard's input, by the name after its prefix.
ENTRY_STATES = ("Begin", "ComputeKey", "Acquire", "AcquireComputed")


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
    guard_states: tuple[str, ...] = (),
    inputs: Iterable[Any] = (),
    dry_run: bool = False,
) -> Migration:
    """Copy each finished record of ``old``'s namespace to the id ``new`` computes from its input.

    An input is a record's where the old settings compute its id and its validation from it; where several
    are, and the new key tells them apart (no payload compared, say), the record is left as unmatched. A copy is written
    only where the new id has no record (a condition), with the old record's outcome, expiration and owner
    token, and the validation, key format and namespace shard of the new settings; the old record is left as it
    is. A record in progress is left (its holder may still run: migrate again once it ended). The namespace's
    records are all listed before the first copy is written, so that no copy is taken for a record to copy.

    :param stepfunctions: a Step Functions client, to read a record's input from its holder's execution history:
        the input of one of ``guard_states`` (the guard's states its input enters: ``ENTRY_STATES`` after its
        prefix). Default: only ``inputs`` are matched.
    :param inputs: documents to match besides, each a guard's input (an execution's, for a whole workflow).
    :param dry_run: write nothing; say what would be copied.
    """
    if {old.key_format, new.key_format} != {schema.KEY_FORMAT}:
        raise ValueError(
            f"the canonical key's format {old.key_format} -> {new.key_format}: this version computes format "
            f"{schema.KEY_FORMAT} only"
        )
    given = list(inputs)
    histories: dict[str, list[Any]] = {}
    done = Migration()
    for record in list(list_records(table, namespace=old.namespace, client=dynamodb)):
        old_id = record[schema.ID]["S"]
        if record.get(schema.STATUS, {}).get("S") == schema.INPROGRESS:
            done.in_progress.append(old_id)
            continue
        candidates = given
        if stepfunctions is not None and guard_states:
            holder = schema.owner_execution(record.get(schema.OWNER, {}).get("S", ""))
            if holder and holder not in histories:
                histories[holder] = list(_entered(stepfunctions, holder, guard_states))
            candidates = [*given, *histories.get(holder, [])]
        documents = _matching(old, record, candidates)
        if not documents:
            # A copy an earlier run wrote (its input computes its id under the new key), or no input found.
            (done.present if _matching(new, record, candidates) else done.unmatched).append(old_id)
            continue
        try:
            keyed = {record_id(new, document) for document in documents}
        except (canonical.KeyMissing, canonical.PayloadMissing):
            done.unkeyable.append(old_id)
            continue
        if len(keyed) > 1:  # inputs that made this record's id and validation, which the new key tells apart
            done.unmatched.append(old_id)
            continue
        ((new_id, validation),) = keyed
        if new_id == old_id:
            done.same.append(old_id)
        elif new.namespace != old.namespace and schema.DATA_LOCATION in record:
            done.in_s3.append(old_id)  # the result function reads S3 under the namespaces it serves only
        elif dry_run or _copied(dynamodb, table, record, new_id, validation, new):
            done.copied.append((old_id, new_id))
        else:
            done.present.append(new_id)
    return done


def _matching(settings: KeySettings, record: dict[str, Any], documents: Iterable[Any]) -> list[Any]:
    """The documents from which ``settings`` compute the record's id and its validation."""
    wanted = (record[schema.ID]["S"], record.get(schema.VALIDATION, {}).get("S"))
    found = []
    for document in documents:
        try:
            computed = record_id(settings, document)
        except (canonical.KeyMissing, canonical.PayloadMissing, ValueError, TypeError):
            continue
        if computed[0] == wanted[0] and wanted[1] in (None, computed[1]):
            found.append(document)
    return found


def _entered(stepfunctions: Any, execution_arn: str, states: tuple[str, ...]) -> Iterator[Any]:
    """The inputs the execution gave ``states`` (each entry of the guard's, in a Map each iteration's)."""
    try:
        pages = stepfunctions.get_paginator("get_execution_history").paginate(
            executionArn=execution_arn, includeExecutionData=True
        )
        for page in pages:
            for event in page["events"]:
                details = event.get("stateEnteredEventDetails") or {}
                if details.get("name") in states and "input" in details:
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
