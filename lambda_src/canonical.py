"""Canonical JSON, key selection and hashing: the one implementation every key goes through.

Stdlib only (plus ``jmespath``, which the Lambda Python runtime ships as a dependency of boto3), so the
same code runs in the key function, in the constructs' synth-time validation and in tools.

Canonical form (DESIGN B3): object keys sorted by code point, no insignificant whitespace, UTF-8, and
numbers compared by value: an integral float (``1.0``, ``1e3``) is written as the integer it equals.
"""

from __future__ import annotations

import hashlib
import json
import re
from decimal import Decimal
from typing import Any

try:  # imported as part of the library
    from . import schema
except ImportError:  # imported by the Lambda runtime from the asset root
    import schema  # type: ignore[no-redef]

# ``json.dumps`` writes an integral float as "<digits>.0" or with an exponent ("1e+16"); a float that is
# not integral never ends in ".0". Without such a sequence the text holds no integral float and is
# canonical already (the common, fast case; a match inside a string only costs the slow path).
_INTEGRAL_FLOAT_HINT = re.compile(r"\d\.0(?:[,\]}]|$)|\d[eE]")
# Below 2**53 every integral double converts to int exactly; above, the decimal value of the text is used.
_EXACT_INT_LIMIT = 2.0**53
_PATH_SEGMENT = re.compile(r"\.([A-Za-z_][A-Za-z0-9_-]*)|\['((?:[^'\\]|\\.)+)'\]|\[(\d+)\]")


class KeyMissing(Exception):
    """The key selection is missing, null or empty, or cannot be computed from this input (a JMESPath
    function given a value of the wrong type, a number beyond the range of a double). Messages name
    the expression, never a value of the input."""


# Lambda reports an exception's class name as the Step Functions error name.
KeyMissing.__name__ = KeyMissing.__qualname__ = schema.KEY_MISSING


def _number(token: str) -> int | float:
    value = float(token)
    if not value.is_integer():
        return value
    return int(value) if abs(value) < _EXACT_INT_LIMIT else int(Decimal(token))


def canonical_json(value: Any) -> str:
    """Serialize ``value`` so that equal JSON values give equal text."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    if not _INTEGRAL_FLOAT_HINT.search(text):
        return text
    # Re-read with a float hook (the C parser calls it once per float token, never for strings).
    normalized = json.loads(text, parse_float=_number)
    # Parsed from sorted text, every object's keys are in order already: no second sort.
    return json.dumps(normalized, separators=(",", ":"), ensure_ascii=False)


def digest(value: Any) -> str:
    """The SHA-256 hex digest of the canonical form of ``value``."""
    return _sha256(canonical_json(value))


def parse_path(path: str) -> list[str | int]:
    """Split a JSONPath naming one field (``$.a.b``, ``$['a b']``, ``$.items[0]``) into segments.

    Raises ``ValueError`` for anything else (wildcards, filters, slices, recursive descent): a key
    field must be a single, scalar value.
    """
    if not isinstance(path, str) or not path.startswith("$"):
        raise ValueError(f"a key path must start with '$', got {path!r}")
    segments: list[str | int] = []
    position = 1
    while position < len(path):
        match = _PATH_SEGMENT.match(path, position)
        if not match:
            raise ValueError(
                f"unsupported JSONPath {path!r} at position {position}: use '$.field', "
                "\"$['field name']\" or '$.list[0]' segments only"
            )
        name, quoted, index = match.groups()
        if name is not None:
            segments.append(name)
        elif quoted is not None:
            segments.append(re.sub(r"\\(.)", r"\1", quoted))
        else:
            segments.append(int(index))
        position = match.end()
    if not segments:
        raise ValueError(f"a key path must name a field, got {path!r}")
    return segments


def _lookup(document: Any, segments: list[str | int]) -> Any:
    for segment in segments:
        if isinstance(segment, int):
            if not isinstance(document, list) or segment >= len(document):
                return None
        elif not isinstance(document, dict) or segment not in document:
            return None
        document = document[segment]
    return document


def _is_empty(value: Any) -> bool:
    return value is None or value == "" or value == [] or value == {}


def select(document: Any, kind: str, expression: Any = None) -> Any:
    """The part of ``document`` a key is computed from; raises ``KeyMissing`` if it is absent."""
    if kind == schema.KIND_WHOLE_INPUT:
        selection = document
        if _is_empty(selection):
            raise KeyMissing("the input is empty: the whole input is the idempotency key")
    elif kind == schema.KIND_JMESPATH:
        import jmespath  # imported lazily: most keys do not need it

        compiled = jmespath.compile(expression)
        try:
            selection = compiled.search(document)
        except jmespath.exceptions.JMESPathTypeError as error:
            raise KeyMissing(
                f"the JMESPath key expression {expression!r} cannot be evaluated on the input: its function "
                f"{error.function_name}() got a value of type {error.actual_type}, not {' or '.join(error.expected_types)}"
            ) from None
        if _is_empty(selection):
            raise KeyMissing(f"the JMESPath key expression {expression!r} selects nothing in the input")
        # A multiselect names each part of the key: every part must be there.
        if compiled.parsed["type"] in ("multi_select_list", "multi_select_dict"):
            parts = selection if isinstance(selection, list) else list(selection.values())
            if any(map(_is_empty, parts)):
                raise KeyMissing(f"a part of the JMESPath key {expression!r} is missing, null or empty in the input")
    elif kind == schema.KIND_PATHS:
        selection = []
        for path in expression:
            value = _lookup(document, parse_path(path))
            if _is_empty(value):
                raise KeyMissing(f"the key path {path} is missing, null or empty in the input")
            if isinstance(value, (dict, list)):
                raise KeyMissing(f"the key path {path} selects an object or a list, not a scalar")
            selection.append(value)
    else:
        raise ValueError(f"unknown key kind {kind!r}")
    return selection


def jmespath_problem(expression: str) -> str | None:
    """Why the JMESPath ``expression`` can never select a key (its syntax, an unknown function, a
    wrong number of arguments), or ``None``. It is evaluated once on an empty input: a value of the
    wrong type fails only some inputs (``KeyMissing`` for them)."""
    import jmespath

    try:
        jmespath.compile(expression).search({})
    except jmespath.exceptions.JMESPathTypeError:
        return None
    except jmespath.exceptions.JMESPathError as error:
        return str(error).splitlines()[0]
    return None


def idempotency_id(namespace: str, document: Any, kind: str, expression: Any = None) -> str:
    """The record id of ``document`` under a key spec: ``{namespace}#{sha256 of the selection}``."""
    return _record_id(namespace, kind, expression, _canonical_input(select(document, kind, expression)))


def key_and_validation(namespace: str, document: Any, kind: str, expression: Any = None) -> tuple[str, str]:
    """``(record id, validation)`` of ``document``: the id as ``idempotency_id`` gives it, and the
    digest of the whole document. The document is serialized once, also when it is the selection
    (the canonical form of a list is its items' canonical forms, comma-separated, in brackets)."""
    selection = select(document, kind, expression)
    document_text = _canonical_input(document)
    selection_text = document_text if selection is document else _canonical_input(selection)
    return _record_id(namespace, kind, expression, selection_text), _sha256(document_text)


def _canonical_input(value: Any) -> str:
    try:
        return canonical_json(value)
    except ValueError:  # Python reads 1e400 as inf, which has no JSON form, so no canonical one
        raise KeyMissing(
            "the key cannot be computed: the input holds a number beyond the range of a double (such as 1e400)"
        ) from None


def _record_id(namespace: str, kind: str, expression: Any, selection_text: str) -> str:
    return f"{namespace}#{_sha256(f'[{canonical_json(kind)},{canonical_json(expression)},{selection_text}]')}"


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
