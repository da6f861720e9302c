"""Canonical JSON, key selection and hashing: the one Python implementation every key goes through.

Stdlib only (plus ``jmespath``, which the Lambda Python runtime ships as a dependency of boto3), so the
same code runs in the key function, in the constructs' synth-time validation and in tools.

It implements the canonical key specification, ``docs/explanation/canonical-key.md`` (version 3), which the
generated JSONata states implement too (``idempotent_constructs._jsonata.key_expressions``): numbers are the
doubles they read as, written in a form no engine's number formatting can change (the digits of a whole
number below 2**53, ``m p e`` otherwise), strings escaped as ``JSON.stringify`` escapes them, object members
ordered by UTF-16 code units, and long texts hashed in pieces.
"""

from __future__ import annotations

import base64
import functools
import gzip
import hashlib
import json
import math
import re
from typing import Any

try:  # imported as part of the library
    from . import schema
except ImportError:  # imported by the Lambda runtime from the asset root
    import schema  # type: ignore[no-redef,import-not-found]

HASH_PIECE = 2500  # code points hashed at once (docs/explanation/canonical-key.md, section 3)
EXACT_LIMIT = 2**53  # a key number of this magnitude or more is no longer exact as a double
# Python's own serialization is canonical already unless the text may hold a float or a large integer
# (``1.0``, ``1e+16``, 16 digits or more), or a character from U+D800 up (where code point and UTF-16
# orders part, and lone surrogates); a match inside a string only costs the slow path.
_NOT_PLAIN = re.compile("\\d[.eE]|\\d{16}|[\ud800-\U0010ffff]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_PATH_SEGMENT = re.compile(r"\.([A-Za-z_][A-Za-z0-9_-]*)|\['((?:[^'\\]|\\.)+)'\]|\[(\d+)\]")


class KeyMissing(Exception):
    """The key selection is missing, null or empty, or cannot be computed from this input (a JMESPath
    function given a value of the wrong type, a number no double carries exactly). Messages name the
    expression, never a value of the input."""


class PayloadMissing(Exception):
    """The payload selection (``payload=``) selects nothing in the input. Messages name the expression,
    never a value of the input."""


# Lambda reports an exception's class name as the Step Functions error name.
KeyMissing.__name__ = KeyMissing.__qualname__ = schema.KEY_MISSING
PayloadMissing.__name__ = PayloadMissing.__qualname__ = schema.PAYLOAD_MISSING


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
    if not _NOT_PLAIN.search(text):
        return text
    out: list[str] = []
    _write(value, out, exact)
    return "".join(out)


def text_digest(text: str) -> str:
    """``D(text)``: SHA-256 hex, of the text or, for a long text, of its pieces' digests."""
    if len(text) <= HASH_PIECE:
        return _sha256(text)
    pieces = "".join(_sha256(text[start : start + HASH_PIECE]) for start in range(0, len(text), HASH_PIECE))
    return _sha256("chunks:" + pieces)


def digest(value: Any) -> str:
    """The digest of the canonical text of ``value``."""
    return text_digest(_canonical_input(value, exact=False))


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


_ABSENT = object()


def _lookup(document: Any, segments: list[str | int]) -> Any:
    """The value at ``segments``, or ``_ABSENT``."""
    for segment in segments:
        if isinstance(segment, int):
            if not isinstance(document, list) or segment >= len(document):
                return _ABSENT
        elif not isinstance(document, dict) or segment not in document:
            return _ABSENT
        document = document[segment]
    return document


@functools.cache
def _jmespath_options() -> Any:
    """JMESPath with Powertools for AWS Lambda's functions, so that a Powertools user's expression
    (``powertools_json(body).order_id``) selects here what it selects there: ``powertools_json`` reads a
    JSON text, ``powertools_base64`` decodes base64 (a Kinesis record's ``data``), ``powertools_base64_gzip``
    also decompresses (CloudWatch Logs' ``awslogs.data``)."""
    import jmespath  # imported lazily: most keys do not need it
    from jmespath import functions

    class PowertoolsFunctions(functions.Functions):
        @functions.signature({"types": ["string"]})
        def _func_powertools_json(self, value: str) -> Any:
            return json.loads(value)

        @functions.signature({"types": ["string"]})
        def _func_powertools_base64(self, value: str) -> str:
            return base64.b64decode(value).decode()

        @functions.signature({"types": ["string"]})
        def _func_powertools_base64_gzip(self, value: str) -> str:
            return gzip.decompress(base64.b64decode(value)).decode()

    return jmespath.Options(custom_functions=PowertoolsFunctions())


def _search(expression: str, document: Any, missing: type[Exception], what: str) -> tuple[Any, Any]:
    """``(compiled, selection)`` of a JMESPath expression; what it cannot evaluate on this input (a
    function given a value of the wrong type, a text ``powertools_json`` cannot read) raises ``missing``."""
    import jmespath

    compiled = jmespath.compile(expression)
    try:
        return compiled, compiled.search(document, options=_jmespath_options())
    except jmespath.exceptions.JMESPathTypeError as error:
        raise missing(
            f"the JMESPath {what} expression {expression!r} cannot be evaluated on the input: its function "
            f"{error.function_name}() got a value of type {error.actual_type}, not {' or '.join(error.expected_types)}"
        ) from None
    except (ValueError, OSError, EOFError) as error:  # JSON, base64, UTF-8 or gzip a powertools_* function cannot read
        raise missing(
            f"the JMESPath {what} expression {expression!r} cannot be evaluated on the input: {type(error).__name__}"
        ) from None


def is_empty(value: Any) -> bool:
    return value is None or value == "" or value == [] or value == {}


def select(document: Any, kind: str, expression: Any = None) -> Any:
    """The part of ``document`` a key is computed from; raises ``KeyMissing`` if it is absent."""
    if kind == schema.KIND_WHOLE_INPUT:
        selection = document
        if is_empty(selection):
            raise KeyMissing("the input is empty: the whole input is the idempotency key")
    elif kind == schema.KIND_JMESPATH:
        compiled, selection = _search(expression, document, KeyMissing, "key")
        if is_empty(selection):
            raise KeyMissing(f"the JMESPath key expression {expression!r} selects nothing in the input")
        # A multiselect names each part of the key: every part must be there.
        if compiled.parsed["type"] in ("multi_select_list", "multi_select_dict"):
            parts = selection if isinstance(selection, list) else list(selection.values())
            if any(map(is_empty, parts)):
                raise KeyMissing(f"a part of the JMESPath key {expression!r} is missing, null or empty in the input")
    elif kind == schema.KIND_PATHS:
        selection = []
        for path in expression:
            value = _lookup(document, parse_path(path))
            if value is _ABSENT or is_empty(value):
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
        jmespath.compile(expression).search({}, options=_jmespath_options())
    except jmespath.exceptions.JMESPathTypeError:
        return None
    except jmespath.exceptions.JMESPathError as error:
        return str(error).splitlines()[0]
    return None


def idempotency_id(namespace: str, document: Any, kind: str, expression: Any = None) -> str:
    """The record id of ``document`` under a key spec: ``{namespace}#{digest of the selection}``."""
    selection = select(document, kind, expression)
    return record_id(namespace, kind, expression, _canonical_input(selection, exact=_exact(kind)))


def selection_id(namespace: str, kind: str, expression: Any, selection: Any) -> str:
    """The record id of a key ``selection`` already made (a JSONata key's, evaluated elsewhere)."""
    return record_id(namespace, kind, expression, _canonical_input(selection, exact=_exact(kind)))


def select_payload(document: Any, kind: str, expression: Any = None) -> Any:
    """The part of ``document`` its ``validation`` is computed from (``payload=``); raises
    ``PayloadMissing`` where it selects nothing. Unlike a key's, a payload selection may be null, an
    object or a list: only a path that is not there, or an expression that selects nothing, is missing."""
    if kind == schema.KIND_WHOLE_INPUT:
        return document
    if kind == schema.KIND_NONE:
        return None
    if kind == schema.KIND_PATHS:
        selection = []
        for path in expression:
            value = _lookup(document, parse_path(path))
            if value is _ABSENT:
                raise PayloadMissing(f"the payload path {path} is missing in the input")
            selection.append(value)
        return selection
    if kind == schema.KIND_JMESPATH:
        # JMESPath tells no missing field from a null one: both select nothing.
        _, selection = _search(expression, document, PayloadMissing, "payload")
        if selection is None:
            raise PayloadMissing(f"the JMESPath payload expression {expression!r} selects nothing in the input")
        return selection
    raise ValueError(f"no Python selection for payload kind {kind!r}")


def payload_validation(kind: str, expression: Any, selection: Any) -> str:
    """The ``validation`` of a payload ``selection``: ``D(C(input))`` for the whole input, else
    ``D([C(kind),C(expression),C(S)])``, so that two payload specs never compare equal by chance."""
    text = _canonical_input(selection, exact=False)
    if kind == schema.KIND_WHOLE_INPUT:
        return text_digest(text)
    return text_digest(key_prefix(kind, expression) + text + "]")


def payload_digest(document: Any) -> str:
    """The ``validation`` digest of a whole payload; raises ``KeyMissing`` where it has no canonical form."""
    return payload_validation(schema.KIND_WHOLE_INPUT, None, document)


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
        # One canonical text serves both.
        text = _canonical_input(document, exact=_exact(kind))
        return record_id(namespace, kind, expression, text), text_digest(text)
    selection_text = _canonical_input(selection, exact=_exact(kind))
    return record_id(namespace, kind, expression, selection_text), payload_validation(payload_kind, payload_expression, payload)


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
    except ValueError:  # 1e400 is read as inf: no double, so no canonical form
        raise KeyMissing(
            "the key cannot be computed: the input holds a number beyond the range of a double (such as 1e400)"
        ) from None


def key_prefix(kind: str, expression: Any) -> str:
    """The constant start of the hashed text of a key spec's record ids: ``[C(kind),C(expression),``."""
    return f"[{canonical_json(kind)},{canonical_json(expression)},"


def record_id(namespace: str, kind: str, expression: Any, selection_text: str) -> str:
    """``{namespace}#D([C(kind),C(expression),C(selection)])`` from the selection's canonical text."""
    return schema.id_prefix(namespace) + text_digest(key_prefix(kind, expression) + selection_text + "]")


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
