"""Values read from the CDK's Node.js process once, not at each use: every read of a construct's attribute, of a
duration's length or of a pseudo parameter is a call into jsii, which is most of what synth costs (issue 56).

Each read is kept once a process (the pseudo parameters: the same tokens in every stack) or once an object (a
duration, a size, a table: kept as long as the object lives). Values only: what the CDK would give again. And
``unresolved``, which asks the CDK whether a value is a token only where it could be one, and of a text once.
"""

from __future__ import annotations

import functools
import hashlib
import re
import weakref
from collections.abc import Callable
from typing import Any, NamedTuple

from aws_cdk import Aws, Duration, Size, Stack, Token
from aws_cdk import aws_dynamodb as dynamodb


class Pseudo(NamedTuple):
    """The pseudo parameters' tokens, which the CDK makes once (``Aws``)."""

    partition: str
    region: str
    account_id: str
    stack_id: str


@functools.cache
def pseudo() -> Pseudo:
    return Pseudo(Aws.PARTITION, Aws.REGION, Aws.ACCOUNT_ID, Aws.STACK_ID)


def per_object(read: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``read(value)``, once for each object passed (by identity, for as long as it lives)."""
    kept: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()

    @functools.wraps(read)
    def once(value: Any) -> Any:
        try:
            return kept[value]
        except KeyError:
            kept[value] = found = read(value)
            return found

    return once


def may_hold_token(text: str) -> bool:
    """Whether ``text`` may hold a token: a string token's or a list token's marker (``${Token[``, ``#{Token[``), or
    a number token's text (``-1.8...e+289``)."""
    return "{Token[" in text or "e+289" in text


def unresolved(value: Any) -> bool:
    """``Token.is_unresolved(value)``, without the call into jsii where ``value`` cannot hold a token: a text
    that may not (``may_hold_token``), a number above the doubles a number token is made of (about -1.9e289:
    their top bits are the CDK's)."""
    if isinstance(value, str):
        return may_hold_token(value) and _text_unresolved(value)
    if isinstance(value, int | float) and not isinstance(value, bool) and value > -1e288:
        return False
    return bool(Token.is_unresolved(value))


@functools.lru_cache(maxsize=4096)
def _text_unresolved(text: str) -> bool:
    # Asked once a text: the CDK answers for a text by its markers alone (TokenString.test), so the answer
    # for the same text is the same in every stack and app.
    return bool(Token.is_unresolved(text))


@per_object
def path(construct: Any) -> str:
    """``construct.node.path`` (a construct's path never changes)."""
    return str(construct.node.path)


# An id the constructs library writes into a path as it is: versions of it write a "/" (all) or a newline (10.8) as
# "--", and Python cannot hash a lone surrogate as JavaScript does (as U+FFFD).
_AS_IT_IS = re.compile("[^/\n\ud800-\udfff]+")


def child_path(scope: Any, child: Any, construct_id: str) -> str:
    """``child.node.path``, for ``child`` made in ``scope`` as ``construct_id``: from ``scope``'s path where the
    constructs library writes the id into it as it is (``path``'s read of the child otherwise)."""
    if not _AS_IT_IS.fullmatch(construct_id):
        return str(path(child))
    parent = path(scope)
    return f"{parent}/{construct_id}" if parent else construct_id


def address(construct: Any) -> str:
    """``construct.node.addr``, from its ``path``, as the constructs library makes it (``addressOf``): the SHA-1 of
    the ids of its scopes from the root's (which the path leaves out where it is empty, an ``App``'s), each followed by
    a newline, every ``Default`` left out, after ``c8``. Read from the CDK where its path holds a lone surrogate."""
    parts = path(construct).split("/")
    if any(not _AS_IT_IS.fullmatch(part) for part in parts if part):
        return str(construct.node.addr)
    digest = hashlib.sha1(usedforsecurity=False)
    for part in ([""] if _root_id(stack(construct)) == "" else []) + parts:
        if part != "Default":
            digest.update(part.encode() + b"\n")
    return "c8" + digest.hexdigest()


@per_object
def _root_id(stack: Any) -> str:
    """The id of the root of ``stack``'s tree: an ``App``'s is empty."""
    return str(stack.node.root.node.id)


@per_object
def stack(construct: Any) -> Stack:
    """``Stack.of(construct)`` (a construct never moves to another stack)."""
    return Stack.of(construct)


@per_object
def millis(duration: Duration) -> float:
    """``duration.to_milliseconds()``."""
    return duration.to_milliseconds()


@per_object
def seconds(duration: Duration) -> float:
    """``duration.to_seconds()`` (which refuses a duration of a fraction of a second, as the CDK does)."""
    return duration.to_seconds()


@per_object
def size_bytes(size: Size) -> float:
    """``size.to_bytes()``."""
    return size.to_bytes()


class FunctionFacts(NamedTuple):
    arn: str
    current_version: Any


@per_object
def function(function: Any) -> FunctionFacts:
    """A function's ARN and the version published with this template (``current_version``, which the CDK
    makes on the first read and gives again after)."""
    return FunctionFacts(function.function_arn, function.current_version)


class TableFacts(NamedTuple):
    name: str
    arn: str
    encryption_key: Any


@per_object
def table(table: dynamodb.ITable) -> TableFacts:
    """A table's name, ARN and customer managed key (``None`` without one)."""
    return TableFacts(table.table_name, table.table_arn, table.encryption_key)
