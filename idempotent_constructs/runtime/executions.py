"""Starting executions idempotently by name: the caller-side pattern of the seed articles.

Step Functions refuses a second Standard execution with the same name for 90 days after the first one
ends (``ExecutionAlreadyExists``), and a start with the name and input of a running execution returns
that execution. Naming each execution after its idempotency key therefore deduplicates starts at the
door, without a table. It is Standard-only (Express names are not checked for uniqueness), limited to
the 90 days Step Functions remembers closed executions, and input-sensitive (the same name with
another input is refused, and only a name collision tells you so). Combined with the table-based
wrapper: the name catches duplicate *starts* cheaply and tells the caller which execution handles the
request; the wrapper still protects the work itself against redrives, retries of steps, starts past
the 90 days or under another name, and Express workflows.

Plain boto3, no CDK: for callers (APIs, queues, schedulers).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from ..lambda_src import canonical, schema

__all__ = ["MAX_NAME_LENGTH", "IdempotentStart", "execution_name", "in_flight_holder", "start_idempotent_execution"]

MAX_NAME_LENGTH = 80
# Execution names may not contain whitespace, brackets, wildcards, these punctuation marks or control characters.
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


@dataclass(frozen=True)
class IdempotentStart:
    """The outcome of ``start_idempotent_execution``."""

    execution_arn: str
    started: bool
    """``False`` if the execution already existed and had ended, or had another input. ``True`` if
    this call started it, and also when an execution with this name and input is still running:
    Step Functions answers such a start as if it were new, with the running execution's ARN."""
    status: str
    """``RUNNING`` for a new execution; the existing execution's status otherwise."""
    same_input: bool
    """Whether the execution's input equals this call's input (canonically); ``False`` means the name
    was already used for another request."""
    followed_from: str | None = None
    """The execution that gave up with ``Idempotency.InFlight`` and named this one as the holder of
    the key; ``None`` when ``execution_arn`` is the execution that was started or found by name."""


def execution_name(key: str, prefix: str = "") -> str:
    """A valid, deterministic execution name for ``key``: the readable part of ``prefix`` and
    ``key`` (letters, digits, ``-`` and ``_``), then the SHA-256 of the key, at most 80 characters."""
    digest = hashlib.sha256(key.encode()).hexdigest()[:40]
    readable = _UNSAFE.sub("-", f"{prefix}{key}")[: MAX_NAME_LENGTH - len(digest) - 1]
    return f"{readable}-{digest}" if readable else digest


def _execution_arn(state_machine_arn: str, name: str) -> str:
    """The ARN of execution ``name`` of a state machine, also when started through a version or an
    alias (``...:stateMachine:orders:3``): executions are named under the state machine itself."""
    prefix, _, machine = state_machine_arn.rpartition(":stateMachine:")
    return f"{prefix}:execution:{machine.partition(':')[0]}:{name}"


def start_idempotent_execution(
    state_machine_arn: str,
    payload: Any,
    *,
    key: str | None = None,
    client: Any = None,
    follow_holder: bool = True,
) -> IdempotentStart:
    """Start an execution of a Standard state machine named after the request's idempotency key, or
    return the execution that already carries that name.

    :param payload: the execution input (JSON-serializable).
    :param key: the idempotency key of the request, for example an order id; its readable part shows
        in the execution's name (consoles, CloudTrail), so pass no secret. Default: the SHA-256 of
        the canonical JSON of ``payload`` alone (equal payloads, whatever their key order or ``1``
        vs ``1.0``, get one execution, and no payload value shows in the name).
    :param client: a boto3 Step Functions client. Default: ``boto3.client("stepfunctions")``.
    :param follow_holder: when the execution of that name, with this input, gave up with
        ``Idempotency.InFlight`` (another execution held the key), return the holder's execution
        instead (``followed_from`` names the one that gave up): the one that does the work. Only an
        execution of the same state machine is followed; one of another state machine (the holder of
        a nested guard, or of a namespace shared between workflows) does other work, and a cause that
        names no holder is not the guard's: the failed execution is returned as it is then. Default:
        on; ``False`` returns the failed execution as it is.
    """
    client = client or _client()
    name = execution_name(key) if key is not None else canonical.digest(payload)[:MAX_NAME_LENGTH]
    text = json.dumps(payload, separators=(",", ":"))
    try:
        response = client.start_execution(stateMachineArn=state_machine_arn, name=name, input=text)
        return IdempotentStart(response["executionArn"], started=True, status="RUNNING", same_input=True)
    except client.exceptions.ExecutionAlreadyExists:
        existing = client.describe_execution(executionArn=_execution_arn(state_machine_arn, name))
    same = canonical.digest(json.loads(existing.get("input") or "null")) == canonical.digest(payload)
    if follow_holder and same and _gave_up_in_flight(existing):
        holder = _named_holder(existing)
        if holder is not None and _state_machine_of(holder) == _state_machine_of(existing["executionArn"]):
            followed = _holder(existing, holder, client)
            if followed is not None:
                return followed
    return IdempotentStart(existing["executionArn"], started=False, status=existing["status"], same_input=same)


def in_flight_holder(execution_arn: str, *, client: Any = None) -> IdempotentStart | None:
    """The execution that held the key when ``execution_arn`` gave up with ``Idempotency.InFlight``:
    attach to it (await or describe it) instead of starting again. ``None`` if the execution did not
    end with that error.

    The holder is the one named in the error's cause (as the failed run last read the record); it
    has the same payload, which the guard checked before waiting. ``status`` is the holder's status
    now, or ``UNKNOWN`` for an Express holder, which DescribeExecution cannot describe. ``None`` too
    when the cause names no holder (a state of the user's raised that error), or the holder's
    execution is gone (Step Functions keeps a closed execution 90 days).
    """
    client = client or _client()
    ended = client.describe_execution(executionArn=execution_arn)  # with its error and cause
    if not _gave_up_in_flight(ended):
        return None
    holder = _named_holder(ended)
    return _holder(ended, holder, client) if holder is not None else None


def _client() -> Any:
    import boto3

    return boto3.client("stepfunctions")


def _gave_up_in_flight(execution: dict[str, Any]) -> bool:
    return execution.get("status") == "FAILED" and execution.get("error") == schema.IN_FLIGHT


def _named_holder(gave_up: dict[str, Any]) -> str | None:
    """The holder's execution ARN that the guard's ``Idempotency.InFlight`` cause names; ``None`` for a
    cause of another making (not JSON, or without the field)."""
    try:
        cause = json.loads(gave_up.get("cause") or "")
    except ValueError:
        return None
    holder = cause.get(schema.INFLIGHT_CAUSE_FIELDS[1]) if isinstance(cause, dict) else None
    return holder if isinstance(holder, str) and _state_machine_of(holder) is not None else None


def _state_machine_of(execution_arn: str) -> tuple[str, ...] | None:
    """Partition, region, account and state machine name of a Standard (``:execution:``) or Express
    (``:express:``) execution ARN; ``None`` for anything else."""
    parts = execution_arn.split(":")
    if len(parts) < 8 or parts[0] != "arn" or parts[2] != "states" or parts[5] not in ("execution", "express"):
        return None
    return (parts[1], parts[3], parts[4], parts[6])


def _holder(gave_up: dict[str, Any], holder: str, client: Any) -> IdempotentStart | None:
    """The execution ``holder`` that the ``Idempotency.InFlight`` cause of ``gave_up`` names, with its
    status now; ``None`` if Step Functions no longer knows it."""
    status = "UNKNOWN"
    if ":express:" not in holder:
        try:
            status = client.describe_execution(executionArn=holder, includedData="METADATA_ONLY")["status"]
        except client.exceptions.ExecutionDoesNotExist:
            return None
    return IdempotentStart(holder, started=False, status=status, same_input=True, followed_from=gave_up["executionArn"])
