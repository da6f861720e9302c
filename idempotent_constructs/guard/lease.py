"""``extend_lease``: a state the user places in a long body that pushes the holder's lease forward.

A holder is trusted for ``lease``; past it, a duplicate may take the key over (without the owner
check, at once). A body that may run longer keeps its lease by passing through an extend state now
and then (in a polling loop, say): one fenced DynamoDB update, no Lambda call. A holder whose key was
taken over meanwhile fails there with ``Idempotency.LeaseLost`` instead of working on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_cdk import aws_stepfunctions as sfn

from ..errors import IdempotencyConfigurationError
from ..lambda_src import schema
from . import records
from .config import MAX_STATE_NAME_LENGTH
from .protocol import CONDITION_FAILED, TRANSIENT_DYNAMODB_ERRORS
from .tasks import ItemTask, retry_transient

if TYPE_CHECKING:
    from . import IdempotencyGuard

LOST = ".LeaseLost"  # the name of an extend state's Fail state: the extend state's, then this


def extend_lease(guard: IdempotencyGuard, construct_id: str) -> ItemTask:
    config = guard.config
    longest = config.name(construct_id + LOST)
    if len(longest) > MAX_STATE_NAME_LENGTH:
        raise IdempotencyConfigurationError(
            guard.node.path,
            [
                f"extend_lease: the state name {longest!r} is longer than Step Functions' {MAX_STATE_NAME_LENGTH}; use a shorter id"
            ],
        )
    task = ItemTask(guard, construct_id, config=config, action="updateItem", arguments=records.extend_lease(config, guard.facts))
    retry_transient(task, TRANSIENT_DYNAMODB_ERRORS)
    lost = sfn.Fail.jsonata(
        guard,
        construct_id + LOST,
        state_name=longest,
        error=schema.LEASE_LOST,
        cause="Another execution took this idempotency key over after this run's lease lapsed; stop working on it.",
    )
    task.catch(lost, [CONDITION_FAILED], output=None)
    return task
