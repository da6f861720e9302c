"""The key function: computes the record id of a JMESPath key (one per stack)."""

from __future__ import annotations

from constructs import Construct, IConstruct

from .shared import SharedFunction, singleton

# Construct IDs are API: changing one replaces the function in every deployed stack.
KEY_FUNCTION_ID = "IdempotencyKeyFunction"


class KeyFunction(SharedFunction):
    """Computes idempotency keys; pure computation, no AWS permissions beyond its own logs."""

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(
            scope,
            construct_id,
            handler="compute_key.handler",
            description="idempotent-constructs: computes idempotency keys (shared by the stack)",
        )


def key_function(scope: IConstruct) -> KeyFunction:
    """The stack's key function, created on first use."""
    return singleton(scope, KEY_FUNCTION_ID, KeyFunction)
