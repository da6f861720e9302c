"""Key and payload selection: the part of a state's input a key or a payload spec selects (JSONPath
fields, a JMESPath expression with Powertools for AWS Lambda's functions, or the whole input), and the
errors that say it is missing (``KeyMissing``, ``PayloadMissing``). ``canonical`` hashes what it selects.

Stdlib only (plus ``jmespath``, which the Lambda Python runtime ships as a dependency of boto3), so the
same code runs in the key function, in the constructs' synth-time validation and in tools.
"""

from __future__ import annotations

import base64
import functools
import gzip
import json
import re
from typing import Any

try:  # imported as part of the library
    from . import schema
except ImportError:  # imported by the Lambda runtime from the asset root
    import schema  # type: ignore[no-redef,import-not-found]

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
