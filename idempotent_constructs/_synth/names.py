"""The physical names ``IdempotentStateMachine`` generates: its Standard state machine's and its log group's."""

from __future__ import annotations

import functools
import re

from aws_cdk import Fn, Stack, Token
from constructs import Construct

from . import read_once

MAX_NAME_LENGTH = 80
_NOT_IN_NAMES = re.compile(r"[^A-Za-z0-9-]")  # what generated names replace by '-'


@read_once.per_object
def generated_name(construct: Construct) -> str:
    """A state machine name unique in the account and region, stable across deploys:
    ``{stack name}_{construct id}-{hash of the construct path}``. In a nested stack,
    ``{stack name}-{nested stack id}-{construct id}-{hash}``: no ``_``, so that no stack's prefix
    (``name_prefix``) matches it. (Worked out once a construct: it names a workflow and its log group.)"""
    suffix = read_once.address(construct)[:8]  # from its path, which its workflow reads anyway: no more calls into jsii
    label, nested = _stack_label(read_once.stack(construct))
    readable = _NOT_IN_NAMES.sub("-", read_once.path(construct).rsplit("/", 1)[-1])
    if label:
        readable = f"{label}{'-' if nested else '_'}{readable}"
    return f"{readable[: MAX_NAME_LENGTH - len(suffix) - 1]}-{suffix}"


def name_prefix(construct: Construct) -> str | None:
    """How the generated names of the construct's stack start, and no other's: the stack's name,
    then ``_``, which stack names cannot contain and the rest of a generated name does not. ``None``
    in a nested stack, or if the stack's name is only known at deploy time."""
    label, nested = _stack_label(read_once.stack(construct))
    return f"{label}_" if label and not nested else None


@read_once.per_object
def _stack_label(stack: Stack) -> tuple[str, bool]:
    """What the generated names of ``stack`` start with, and whether it is nested."""
    parent = stack.nested_stack_parent
    if parent is not None:
        outer, _ = _stack_label(parent)
        return (f"{outer}-{_NOT_IN_NAMES.sub('-', stack.node.id)}" if outer else ""), True
    return ("" if Token.is_unresolved(stack.stack_name) else _NOT_IN_NAMES.sub("-", stack.stack_name)), False


# Log groups Step Functions may write to without adding each to the account's CloudWatch Logs resource
# policy (5,120 characters per account and Region): "Avoiding Amazon CloudWatch Logs resource policy
# size restrictions", Step Functions Developer Guide (bp-cwl.html).
VENDED_LOGS_PREFIX = "/aws/vendedlogs/"


def vended_log_group_name(construct: Construct) -> str:
    """``/aws/vendedlogs/states/{generated_name}-{the stack's id}``: under the prefix that keeps the
    account's log resource policy from growing, stable across deploys, and new when the stack is
    created again (the log group is retained, so its name must not be taken on a new create)."""
    return f"{VENDED_LOGS_PREFIX}states/{generated_name(construct)}-{_stack_uuid()}"


@functools.cache
def _stack_uuid() -> str:
    """The last part of the stack's id (its UUID), as a token of no stack's: made once a process, resolved in each."""
    return str(Fn.select(2, Fn.split("/", read_once.pseudo().stack_id)))
