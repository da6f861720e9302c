"""The idempotency record schema and every name shared by the constructs and the Lambda handlers.

This module is imported by the CDK constructs (as ``idempotent_constructs.lambda_src.schema``) and by
the handlers at run time (as ``schema``), so both sides always agree. It must stay stdlib-only.

One item per idempotency key. Attribute names match Powertools for AWS Lambda where they overlap, so a
Powertools-decorated function can share the table.
"""

from __future__ import annotations

import hashlib
import re

# --- attributes -----------------------------------------------------------------------------------
ID = "id"  # S: "{namespace}#{sha256 of the canonical key selection}", the partition key
STATUS = "status"  # S: one of the statuses below
EXPIRATION = "expiration"  # N: epoch seconds, the table's TTL attribute; past it, the record is absent
IN_PROGRESS_EXPIRATION = "in_progress_expiration"  # N: epoch milliseconds, end of the holder's lease
OWNER = "owner"  # S: "{execution ARN}#{holder id}", the fencing token of every write after acquire
VALIDATION = "validation"  # S: sha256 of the canonical payload, to detect a key reused for another payload
# M: of the payload selection's top-level members (an object's, or a from_paths selection's paths), each name's
# digest cut to PAYLOAD_MEMBER_DIGEST hex digits (no value): what a mismatch names as differing (canonical.payload_members)
PAYLOAD_MEMBERS = "payload_members"
PAYLOAD_MEMBER_DIGEST = 16
PAYLOAD_MEMBERS_LIMIT = 64  # more members, or longer names than PAYLOAD_MEMBER_NAMES code points together: none kept
PAYLOAD_MEMBER_NAMES = 2048
# Nor for a selection whose JSON (as the engine writes it) is longer: the digests canonicalize each member again,
# which the native key's bounds (key_expressions.NATIVE_*) leave room for only on small payloads.
PAYLOAD_MEMBERS_TEXT = 16_384
KEY_FORMAT_ATTRIBUTE = "key_format"  # N: the canonical key's version (KEY_FORMAT) that made the id and validation
SHARD = "shard"  # S: "{namespace}#{the hash's first digit}", the partition key of NAMESPACE_INDEX (shard_of)
HELD_BY = "held_by"  # S: the holder's execution ARN while the record is in progress, the key of HOLDER_INDEX
DATA = "data"  # S: the result as JSON (absent when the result is stored in one of the two forms below)
# With ``ResultStorage.large()``, a result above the inline threshold is gzip-compressed and kept
DATA_GZIP = "data_gzip"  # B: in the record, if it then fits under the threshold,
DATA_LOCATION = "data_location"  # S: or in S3, at "s3://{bucket}/{key}", the record pointing there.
# The largest result kept as JSON in ``data``, counted in bytes of the JSON string literal it becomes
# (escaped once more): a record read into a state (Inspect's response, the guard's variable), or a
# request that writes it, then stays below Step Functions' 256 KiB with room for the rest.
RECORD_DATA_LIMIT = 160 * 1024
# The largest compressed result ``ResultStorage.inline()`` keeps in ``data_gzip`` (DynamoDB's items
# hold 400 KB; reads into a state leave ``data_gzip`` out).
RECORD_GZIP_LIMIT = 300_000


# --- the record id: "{namespace}#{hash}" --------------------------------------------------------
# The canonical key specification's version (docs/explanation/canonical-key.md) every id and validation is
# computed by, written with each record (KEY_FORMAT_ATTRIBUTE). Another version computes other ids.
KEY_FORMAT = 4
ID_SEPARATOR = "#"  # never in a namespace (see NAMESPACE_PATTERN) nor in a hash


def id_prefix(namespace: str) -> str:
    """What every record id of ``namespace`` starts with."""
    return namespace + ID_SEPARATOR


# A namespace's records, by id, without a scan: a global secondary index, keys only, whose partition key is the
# namespace and the hash's first hex digit (SHARD), so that one busy namespace writes to 16 index partitions,
# not one (an index partition takes about 1,000 writes a second, and an index that throttles throttles the
# table), and a namespace's 16 shards, queried in order, give its ids in order. Written once, with the id.
NAMESPACE_INDEX = "by-namespace"
SHARDS = "0123456789abcdef"
# The records an execution holds, by its ARN, without reading its history: a global secondary index, keys only,
# on HELD_BY, which the writes that make a run the holder set and those that finish its record remove, so that
# it holds records in progress only (a sparse index). The release function queries it.
HOLDER_INDEX = "by-holder"


def shard_of(record_id: str) -> str:
    """The ``SHARD`` of a record id: its namespace, the separator and the hash's first digit."""
    namespace, digest = split_id(record_id)
    return id_prefix(namespace) + digest[:1]


def split_id(record_id: str) -> tuple[str, str]:
    """``(namespace, hash)`` of a record id."""
    namespace, _, digest = record_id.rpartition(ID_SEPARATOR)
    return namespace, digest


def object_prefix(namespace: str) -> str:
    """Where a namespace's result objects live in a results bucket: "#" cannot occur in a namespace,
    so one namespace's prefix never contains another's ("orders#/" and "orders/eu#/")."""
    return id_prefix(namespace) + "/"


ERROR = "error"  # S: error name of a cached failure
CAUSE = "cause"  # S: error cause of a cached failure
ATTRIBUTES = (
    ID,
    STATUS,
    EXPIRATION,
    IN_PROGRESS_EXPIRATION,
    OWNER,
    VALIDATION,
    PAYLOAD_MEMBERS,
    KEY_FORMAT_ATTRIBUTE,
    SHARD,
    HELD_BY,
    DATA,
    DATA_GZIP,
    DATA_LOCATION,
    ERROR,
    CAUSE,
)

# --- namespaces -----------------------------------------------------------------------------------
# A namespace prefixes every record id ("{namespace}#{hash}"). Letters, digits and ``_ . : / = + @ -``
# only: no "#" (the separator), and none of IAM's wildcard and variable characters (``* ? $``), so a
# namespace can be matched exactly in a ``dynamodb:LeadingKeys`` condition.
NAMESPACE_PATTERN = r"[A-Za-z0-9_.:/=+@-]+"
NAMESPACE_MAX_LENGTH = 256


def valid_namespace(name: str) -> bool:
    return len(name) <= NAMESPACE_MAX_LENGTH and re.fullmatch(NAMESPACE_PATTERN, name) is not None


# --- metrics ----------------------------------------------------------------------------------------
# Every workflow's metrics live in the CloudWatch namespace "IdempotentConstructs/{namespace}" (the
# characters CloudWatch does not allow in a namespace become "-"; so does ":", which PutMetricData takes
# but a metric filter's MetricNamespace refuses: its pattern is [^:*$]*, AWS::Logs::MetricFilter
# MetricTransformation).
METRICS_PREFIX = "IdempotentConstructs/"
# From the state machine's execution log (a metric filter): entered states, by state name.
STATES_ENTERED_METRIC = "StatesEntered"


METRICS_NAMESPACE_MAX_LENGTH = 255  # CloudWatch's limit


def metrics_namespace(namespace: str) -> str:
    """The CloudWatch namespace of a workflow's metrics; a long one ends in a hash of the whole."""
    name = METRICS_PREFIX + re.sub(r"[^A-Za-z0-9._/#\- ]", "-", namespace)
    if len(name) <= METRICS_NAMESPACE_MAX_LENGTH:
        return name
    digest = hashlib.sha256(namespace.encode()).hexdigest()[:16]
    return f"{name[: METRICS_NAMESPACE_MAX_LENGTH - len(digest) - 1]}-{digest}"


# --- the owner token: "{execution ARN}#{holder}" -----------------------------------------------------
# An execution ARN holds no "#"; the holder part may (a UUID, or a state's name and the time it was entered).
OWNER_SEPARATOR = "#"


def owner_execution(owner: str) -> str:
    """The execution ARN of an owner token ("" for a record without one, as Powertools writes)."""
    return owner.partition(OWNER_SEPARATOR)[0]


def owned_by(owner: str, execution_arn: str) -> bool:
    """Whether the owner token is one of that execution's (any of its holders)."""
    return owner.startswith(execution_arn + OWNER_SEPARATOR)


# --- the fence: the condition of every write after the acquire (contract B8) -----------------------
# ``:owner`` is the writer's owner token.
FENCE = f"#{OWNER} = :{OWNER}"
# Ending a run (complete, record a failure): still ours, or gone (released after this execution
# failed, which a redrive of it then completes).
FENCE_OR_RELEASED = f"attribute_not_exists(#{ID}) OR {FENCE}"


# --- Step Functions execution statuses ------------------------------------------------------------
# After these nothing runs any more (PENDING_REDRIVE is about to run again).
EXECUTION_ENDED = ("SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED")
# Those of them that may leave a record in progress: the release function's events.
EXECUTION_ENDED_WITHOUT_RELEASE = ("FAILED", "TIMED_OUT", "ABORTED")
# DescribeExecution's redriveStatus of an ended execution that RedriveExecution can still resume.
REDRIVABLE = ("REDRIVABLE", "REDRIVABLE_BY_MAP_RUN")

# --- statuses -------------------------------------------------------------------------------------
INPROGRESS = "INPROGRESS"
COMPLETED = "COMPLETED"
FAILED = "FAILED"

# --- error names raised by the generated states ---------------------------------------------------
KEY_MISSING = "Idempotency.KeyMissing"
# The payload selection (``payload=``) selects nothing in the input.
PAYLOAD_MISSING = "Idempotency.PayloadMissing"
PAYLOAD_MISMATCH = "Idempotency.PayloadMismatch"
IN_FLIGHT = "Idempotency.InFlight"  # cause: JSON, INFLIGHT_CAUSE_FIELDS
# FailurePolicy.KEEP_FOR_REDRIVE: the holder's execution ended and can be redriven (cause: INFLIGHT_CAUSE_FIELDS).
AWAITING_REDRIVE = "Idempotency.AwaitingRedrive"
ALREADY_COMPLETED = "Idempotency.AlreadyCompleted"  # cause: JSON, COMPLETED_CAUSE_FIELDS
# A replay marker was asked for, and the stored result is not an object to carry it.
REPLAY_MARKER_UNSUPPORTED = "Idempotency.ReplayMarkerUnsupported"
LEASE_LOST = "Idempotency.LeaseLost"
# The record says the work completed, but holds no result this guard can read (a large result's S3
# object was deleted, or a guard with large results wrote it and this one keeps results inline).
RESULT_MISSING = "Idempotency.ResultMissing"
# The chain failed with one of Step Functions' own errors (States.*), which no Fail state may raise
# again; the cause is {"Error": <original name>, "Cause": <original cause>} as JSON.
BODY_FAILED = "Idempotency.BodyFailed"
# The input is beyond the native key's bounds and too large to send to the key function with the
# fields of its request (within about 8 KiB of Step Functions' 256 KiB).
INPUT_TOO_LARGE = "Idempotency.InputTooLarge"
# The result cannot be kept: too large for the record even compressed, and no bucket to put it in.
RESULT_TOO_LARGE = "Idempotency.ResultTooLarge"
# Internal: raised by the poll loop while the holder is still running, retried with backoff, never
# surfaces (exhausting the retries turns into ``IN_FLIGHT``).
STILL_IN_FLIGHT = "Idempotency.StillInFlight"
# Internal: raised by the poll loop once it is past its deadline with the holder still busy; not retried,
# it turns into ``IN_FLIGHT`` at once.
WAITED_OUT = "Idempotency.WaitedOut"

# The JSON causes of IN_FLIGHT and ALREADY_COMPLETED: what a caller needs to act, never a payload.
# "holder_execution_arn": the execution that holds the key (as this run last read the record);
# "lease_expires_at" / "completed_at": ISO-8601 UTC; "record_id": the record's id.
INFLIGHT_CAUSE_FIELDS = ("record_id", "holder_execution_arn", "lease_expires_at")
COMPLETED_CAUSE_FIELDS = ("record_id", "completed_at")

# --- selection strategies (the "kind" of a key or payload spec sent to the key function) -----------
KIND_WHOLE_INPUT = "whole_input"
KIND_JMESPATH = "jmespath"
KIND_PATHS = "paths"
KIND_JSONATA = "jsonata"
KIND_NONE = "none"  # a payload selection only: no payload is compared


# --- environment variables ------------------------------------------------------------------------
# Set on a user's function by ``IdempotencyTable.grant_powertools_idempotency``: where Powertools'
# DynamoDBPersistenceLayer finds the table, and the key prefix that keeps its records in their own
# namespace of the shared table.
TABLE_NAME_ENV = "IDEMPOTENCY_TABLE_NAME"
TABLES_ENV = "IDEMPOTENCY_TABLES"  # the release function's: the tables it releases records of, comma-separated
KEY_PREFIX_ENV = "IDEMPOTENCY_KEY_PREFIX"
