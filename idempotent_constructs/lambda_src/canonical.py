"""Canonical JSON, hashing and record ids: the one Python implementation every key goes through. What a key
or a payload selects of the input is ``key_selection``'s, whose names (``select``, ``KeyMissing``, ...) are
this module's too.

Stdlib only, so the same code runs in the key function, in the constructs' synth-time validation and in tools.

It implements the canonical key specification, ``docs/explanation/canonical-key.md`` (version ``schema.KEY_FORMAT``), which the
generated JSONata states implement too (``idempotent_constructs._jsonata.key_expressions``): numbers are the
doubles they read as, written in a form no engine's number formatting can change (the digits of a whole
number below 2**53, ``m p e`` otherwise), strings escaped as ``JSON.stringify`` escapes them, object members
ordered by UTF-16 code units, and long texts hashed in pieces.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from typing import Any

try:  # imported as part of the library
    from . import key_selection, schema
except ImportError:  # imported by the Lambda runtime from the asset root
    import key_selection  # type: ignore[no-redef,import-not-found]
    import schema  # type: ignore[no-redef,import-not-found]

HASH_PIECE = 2500  # code points hashed at once (docs/explanation/canonical-key.md, section 3)
EXACT_LIMIT = 2**53  # a key number of this magnitude or more is no longer exact as a double
# Python's own text of a value is canonical but for its numbers and its characters from U+D800 up.
# Past U+D800 (where code point and UTF-16 orders part, and lone surrogates) the writer (_write) walks the
# value. Below it, a number is rewritten where it stands when it may be a float or a large integer (``1.0``,
# ``1e+16``, 16 digits or more); a match inside a string only costs the rewrite. Python writes a float as the
# shortest text that reads back as the same double, so reading it back gives the double the writer gets.
_WIDE = re.compile("[\ud800-\U0010ffff]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_NOT_PLAIN = re.compile("[0-9](?:[.eE]|[0-9]{15})")
_STRINGS = re.compile(r'("[^"\\]*(?:\\.[^"\\]*)*")')  # split on: the text between them is numbers and punctuation
_NUMBER = re.compile("-?[0-9][0-9.eE+-]*")

# What a key or a payload selects of the input (key_selection), named here too: every caller computes a key
# with this module's names.
KeyMissing = key_selection.KeyMissing
PayloadMissing = key_selection.PayloadMissing
is_empty = key_selection.is_empty
jmespath_problem = key_selection.jmespath_problem
parse_path = key_selection.parse_path
select = key_selection.select
select_payload = key_selection.select_payload


class _Inexact(ValueError):
    """A number of the key selection is 2**53 or more in magnitude."""


def _number(value: float | int, exact: bool) -> str:
    """``N(x)``: a whole double below 2**53 in magnitude as its decimal digits, any other as ``m`` + ``p`` +
    ``e`` (``x = m * 2**e``, ``m`` odd): the one form every JSONata engine computes alike, by arithmetic that
    doubles carry exactly, never by how an engine writes numbers (docs/explanation/canonical-key.md, section 2)."""
    if type(value) is int and -EXACT_LIMIT < value < EXACT_LIMIT:  # the fast path: most numbers of a payload
        return str(value)
    if exact and abs(value) >= EXACT_LIMIT:
        raise _Inexact()
    number = float(value)  # as a double carries it, whatever the engine held
    if not math.isfinite(number):
        raise ValueError("not a double")
    if number.is_integer() and abs(number) < EXACT_LIMIT:
        return str(int(number))
    sign = "-" if number < 0 else ""
    numerator, denominator = abs(number).as_integer_ratio()  # the denominator a power of two, the numerator odd
    if denominator > 1:
        return f"{sign}{numerator}p-{denominator.bit_length() - 1}"
    twos = (numerator & -numerator).bit_length() - 1
    return f"{sign}{numerator >> twos}p{twos}"


def _read(token: str) -> float | int:
    """A number as Python wrote it: an int's digits, or a float's shortest text."""
    return int(token) if token.lstrip("-").isdigit() else float(token)


def _string(text: str) -> str:
    quoted = json.dumps(text, ensure_ascii=False)
    return _SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", quoted)


def _utf16(name: str) -> bytes:
    return name.encode("utf-16-be", "surrogatepass")


def _write(value: Any, out: list[str], exact: bool) -> None:
    if isinstance(value, str):
        out.append(_string(value))
    elif value is None:
        out.append("null")
    elif value is True or value is False:
        out.append("true" if value else "false")
    elif isinstance(value, (int, float)):
        out.append(_number(value, exact))
    elif isinstance(value, dict):
        out.append("{")
        for position, name in enumerate(sorted(value, key=_utf16)):
            if position:
                out.append(",")
            out.append(_string(name))
            out.append(":")
            _write(value[name], out, exact)
        out.append("}")
    elif isinstance(value, (list, tuple)):
        out.append("[")
        for position, item in enumerate(value):
            if position:
                out.append(",")
            _write(item, out, exact)
        out.append("]")
    else:
        raise TypeError(f"not a JSON value: {type(value).__name__}")


def canonical_json(value: Any, *, exact: bool = False) -> str:
    """The canonical text of ``value`` (docs/explanation/canonical-key.md, section 2). With ``exact``, a number of
    magnitude 2**53 or more raises ``ValueError``, since a double cannot carry it exactly."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    if not text.isascii() and _WIDE.search(text):
        out: list[str] = []
        _write(value, out, exact)
        return "".join(out)
    if not _NOT_PLAIN.search(text):
        return text
    parts = _STRINGS.split(text)
    rewrite = lambda number: _number(_read(number[0]), exact)  # noqa: E731
    parts[::2] = [_NUMBER.sub(rewrite, part) if _NOT_PLAIN.search(part) else part for part in parts[::2]]
    return "".join(parts)


def text_digest(text: str) -> str:
    """``D(text)``: SHA-256 hex, of the text or, for a long text, of its pieces' digests."""
    if len(text) <= HASH_PIECE:
        return _sha256(text)
    pieces = "".join(_sha256(text[start : start + HASH_PIECE]) for start in range(0, len(text), HASH_PIECE))
    return _sha256("chunks:" + pieces)


def digest(value: Any) -> str:
    """The digest of the canonical text of ``value``."""
    return text_digest(_canonical_input(value, exact=False))


def idempotency_id(namespace: str, document: Any, kind: str, expression: Any = None) -> str:
    """The record id of ``document`` under a key spec: ``{namespace}#{digest of the selection}``."""
    return selection_id(namespace, kind, select(document, kind, expression))


def selection_id(namespace: str, kind: str, selection: Any) -> str:
    """The record id of a key ``selection`` already made (a JSONata key's, evaluated elsewhere). Only what
    was selected counts, never how (``kind`` says only whether its numbers must be exact)."""
    return record_id(namespace, _canonical_input(selection, exact=_exact(kind)))


def payload_validation(selection: Any) -> str:
    """The ``validation`` of a payload ``selection``: ``D(C(selection))``, whatever selected it (``None`` for
    ``Payload.none()``, whose validation the route never compares)."""
    return text_digest(_canonical_input(selection, exact=False))


def payload_members(payload_kind: str, payload_expression: Any, selection: Any) -> dict[str, str]:
    """``schema.PAYLOAD_MEMBERS`` of a payload ``selection``: by name, the first digits of the digest of each
    top-level member (each path's value, for a ``from_paths`` selection), so that a mismatch says which differ;
    nothing for a selection that is no object, or has more members or longer names than the record keeps, or
    whose JSON is longer than ``schema.PAYLOAD_MEMBERS_TEXT`` (nor for the member named "", which a DynamoDB map
    refuses)."""
    if payload_kind == schema.KIND_NONE:
        return {}
    named = dict(zip(payload_expression, selection, strict=True)) if payload_kind == schema.KIND_PATHS else selection
    if not isinstance(named, dict) or not members_kept(list(named)):
        return {}
    if len(json.dumps(selection, ensure_ascii=False, separators=(",", ":"))) > schema.PAYLOAD_MEMBERS_TEXT:
        return {}  # about as the states measure it ($string): they keep no digests of a longer one either
    return {name: digest(value)[: schema.PAYLOAD_MEMBER_DIGEST] for name, value in named.items() if name != ""}


def members_kept(names: list[str]) -> bool:
    """Whether a record keeps the digests of members of these names (``schema.PAYLOAD_MEMBERS_LIMIT``)."""
    return len(names) <= schema.PAYLOAD_MEMBERS_LIMIT and sum(map(len, names)) <= schema.PAYLOAD_MEMBER_NAMES


def key_and_validation(
    namespace: str,
    document: Any,
    kind: str,
    expression: Any = None,
    payload_kind: str = schema.KIND_WHOLE_INPUT,
    payload_expression: Any = None,
) -> tuple[str, str]:
    """``(record id, validation)`` of ``document``: the id as ``idempotency_id`` gives it, and the
    digest of its payload selection (by default the whole document)."""
    selection = select(document, kind, expression)
    payload = select_payload(document, payload_kind, payload_expression)
    if payload_kind == schema.KIND_WHOLE_INPUT and selection is document:
        # One canonical text, and one digest, serve both.
        digest = text_digest(_canonical_input(document, exact=_exact(kind)))
        return schema.id_prefix(namespace) + digest, digest
    return selection_id(namespace, kind, selection), payload_validation(payload)


def key_fields(
    namespace: str,
    document: Any,
    kind: str,
    expression: Any = None,
    payload_kind: str = schema.KIND_WHOLE_INPUT,
    payload_expression: Any = None,
) -> dict[str, Any]:
    """``{"id", "validation", "members"}`` of ``document``, as the states compute them natively and the key
    function returns them: the members' digests typed as the record's map keeps them."""
    record_id, validation = key_and_validation(namespace, document, kind, expression, payload_kind, payload_expression)
    members = payload_members(payload_kind, payload_expression, select_payload(document, payload_kind, payload_expression))
    return {"id": record_id, "validation": validation, "members": typed_members(members)}


def typed_members(members: dict[str, str]) -> dict[str, dict[str, str]]:
    """``payload_members`` as a DynamoDB map's values, as the record keeps them."""
    return {name: {"S": digest} for name, digest in members.items()}


def _exact(kind: str) -> bool:
    """Whether a key's numbers must be exact doubles: an explicit selection's must (two identifiers that
    one double carries would share a record); the whole input is keyed as Step Functions reads it."""
    return kind != schema.KIND_WHOLE_INPUT


def _canonical_input(value: Any, *, exact: bool) -> str:
    try:
        return canonical_json(value, exact=exact)
    except _Inexact:
        raise KeyMissing(
            "the key cannot be computed exactly: it holds a number of magnitude 2**53 or more, which a double "
            "(as Step Functions reads JSON numbers) cannot tell from its neighbours; send it as a string"
        ) from None
    except (ValueError, OverflowError):  # 1e400 is read as inf, 10**400 is no double: no canonical form
        raise KeyMissing(
            "the key cannot be computed: the input holds a number beyond the range of a double (such as 1e400)"
        ) from None


def record_id(namespace: str, selection_text: str) -> str:
    """``{namespace}#D(C(selection))`` from the selection's canonical text (canonical key, version 4)."""
    return schema.id_prefix(namespace) + text_digest(selection_text)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
