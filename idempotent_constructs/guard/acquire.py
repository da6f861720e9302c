"""The first phase: compute the key and take it (``Acquire``), or take over a lapsed holder's key.

Acquire is one conditional write whose request computes the record id, the payload digest, the
owner token and the clock natively; the chain's input passes through untouched. A JMESPath key,
which JSONata cannot evaluate, is computed by the key function first (``ComputeKey``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_cdk import aws_stepfunctions as sfn

from ..jsonata_key import literal
from ..lambda_src import schema
from . import records
from .protocol import CONDITION_FAILED, QUERY_FAILED, TRANSIENT_DYNAMODB_ERRORS, expression
from .tasks import SAME_INPUT, ItemTask, fail, invoke, retry_transient

if TYPE_CHECKING:
    from . import IdempotencyGuard


def _assign(guard: IdempotencyGuard, fields: dict[str, str]) -> dict[str, str]:
    return {guard.facts.name: expression(records.jsonata_object(fields))}


def _holding(guard: IdempotencyGuard, state: str, arguments: str) -> ItemTask:
    task = ItemTask(
        guard,
        state,
        config=guard.config,
        action="updateItem",
        arguments=arguments,
        assign=_assign(guard, records.held(guard.config)),
    )
    retry_transient(task, TRANSIENT_DYNAMODB_ERRORS)
    return task


MISSING = "The idempotency key selection is missing, null or empty in the input, or holds a number of magnitude 2^53 or more."


def key_missing(guard: IdempotencyGuard) -> sfn.Fail:
    return fail(
        guard,
        guard.config,
        "KeyMissing",
        error=schema.KEY_MISSING,
        # What the key function or the key's expression said (never a payload value).
        cause=expression(f"$exists($states.input.Cause) ? $states.input.Cause : {literal(MISSING)}"),
    )


def acquire(guard: IdempotencyGuard, inspect: sfn.IChainable, missing: sfn.Fail) -> tuple[sfn.State, ItemTask]:
    """``(start state, Acquire)``; a taken key goes to ``inspect`` with the key in the variable."""
    config = guard.config
    task = _holding(guard, "Acquire", records.acquire(config, guard.facts))
    if config.key.kind == schema.KIND_JMESPATH:
        compute = invoke(
            guard,
            config,
            "ComputeKey",
            guard.key_function,
            {
                "input": expression(
                    records.within_payload("$states.input", "the input is too large to send to the key function")
                ),
                "namespace": config.namespace,
                "kind": config.key.kind,
                "expression": config.key.expression,
            },
            outputs=SAME_INPUT,
            assign={guard.facts.name: expression("$states.result")},
        )
        compute.add_catch(missing, errors=[schema.KEY_MISSING, QUERY_FAILED])
        compute.next(task)
        task.catch(inspect, [CONDITION_FAILED])
        start: sfn.State = compute
    else:
        # The failed write's key is computed again: a catcher cannot see the request's values.
        task.catch(inspect, [CONDITION_FAILED], assign={guard.facts.name: expression(records.key(config, guard.facts))})
        start = task
    task.catch(missing, [QUERY_FAILED], output=None)
    return start, task


def takeover(guard: IdempotencyGuard, inspect: sfn.IChainable) -> ItemTask:
    task = _holding(guard, "Takeover", records.takeover(guard.config, guard.facts))
    task.catch(inspect, [CONDITION_FAILED])
    return task
