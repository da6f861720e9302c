"""The canonical key specification (``docs/explanation/canonical-key.md``) written in JSONata.

The generated states compute record ids and payload hashes natively with these expressions; Python
computes the same values with ``lambda_src/canonical.py`` (in this package). Each function returns JSONata text to
embed in a state's ``{% %}`` field. A key that cannot be computed raises with JSONata's ``$error``,
which a Task or Parallel state sees as ``States.QueryEvaluationError`` and the guard renames
``Idempotency.KeyMissing``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from importlib import resources
from typing import Any

from ..lambda_src import canonical, schema

# The bounds within which the native key stays well inside AWS's, checked by $native
# (canonical.jsonata) before any work: beyond them the key function computes the key.
NATIVE_TEXT = 262_144  # $string of the value, in UTF-16 units
NATIVE_CHARACTERS = 16_384  # $string of the value with every string written as one character
NATIVE_VALUES = 2_000  # commas outside strings: about the values in it
NATIVE_FRACTIONS = 500  # of which fractions (a digit before a point or an exponent)
NATIVE_LEVELS = 9  # containers nested in one another, the outermost included
BEYOND_NATIVE = "the input is beyond the bounds of the native key: the key function computes it"
# One level of $native's nesting count: the innermost containers made a 0 (canonical.jsonata says why
# the braces are escaped).
_LEVEL = "$s := $replace($s, /[\\[\\{][^\\[\\]\\{\\}]*[\\]\\}]/, '0');"


# $digest cuts a long text in runs of RUN code points, RUNS runs a piece: java.util.regex recurses once per
# code point of a run (canonical.jsonata).
RUN = 50
RUNS = canonical.HASH_PIECE // RUN
assert RUN * RUNS == canonical.HASH_PIECE


def _number(value: float) -> str:
    """A double as a JSONata number literal that reads back as it (Python's shortest digits)."""
    return repr(value).replace("e+", "e")


def _functions() -> str:
    """The functions of canonical.jsonata, as every key expression starts with them: its comments
    dropped, its lines joined, its ``__NAMES__`` filled in."""
    controls = ", ".join(f"{literal(chr(code))}: {literal(canonical.canonical_json(chr(code))[1:-1])}" for code in range(0x20))
    values = {
        "CONTROLS": f"{{{controls}}}",
        "EXACT_LIMIT": str(canonical.EXACT_LIMIT),
        "TINY": _number(2.0**-75),
        "TWO_127": _number(2.0**127),
        "TWO_537": _number(2.0**537),
        "HALVINGS": "".join(
            f"$c := $v % {_number(2.0**2**power)} = 0; $v := $c ? $v / {_number(2.0**2**power)} : $v; $k := $c ? $k - {2**power} : $k;"
            for power in range(9, -1, -1)
        ),
        "HASH_PIECE": str(canonical.HASH_PIECE),
        "RUN": str(RUN),
        "RUNS": str(RUNS),
        "NATIVE_TEXT_BRACKETED": str(NATIVE_TEXT + 2),
        "NATIVE_CHARACTERS_BRACKETED": str(NATIVE_CHARACTERS + 2),
        "NATIVE_VALUES": str(NATIVE_VALUES),
        "NATIVE_FRACTIONS": str(NATIVE_FRACTIONS),
        "LEVELS": _LEVEL * (NATIVE_LEVELS + 1),
        "BEYOND_NATIVE": BEYOND_NATIVE,
        "MEMBER_DIGEST": str(schema.PAYLOAD_MEMBER_DIGEST),
        "MEMBERS_LIMIT": str(schema.PAYLOAD_MEMBERS_LIMIT),
        "MEMBER_NAMES": str(schema.PAYLOAD_MEMBER_NAMES),
    }
    lines, in_comment = [], False
    for line in resources.files(__package__).joinpath("canonical.jsonata").read_text().splitlines():
        stripped = line.strip()
        if in_comment or stripped.startswith("/*"):
            in_comment = not stripped.endswith("*/")
        elif stripped:
            lines.append(stripped)
    return re.sub(r"__([A-Z0-9_]+)__", lambda name: values[name.group(1)], " ".join(lines))


def literal(text: str) -> str:
    """``text`` as a JSONata string literal (single quotes; JSON escapes, ``'`` as ``\\u0027``)."""
    return "'" + _ESCAPED.sub(_escape, text) + "'"


_ESCAPED = re.compile(r"[\\'\x00-\x1f]")  # a backslash, a quote, a control character


def _escape(match: re.Match[str]) -> str:
    character = match.group(0)
    return "\\\\" if character == "\\" else f"\\u{ord(character):04x}"


_FUNCTIONS = _functions()


def _path(source: str, path: str) -> str:
    """A JSONPath field (``$.a['b c'][0]``) read from ``source`` without JSONata's mapping over arrays:
    each step reads an object's member or an array's item, and anything else selects nothing."""
    expression = source
    for segment in canonical.parse_path(path):
        if isinstance(segment, int):
            expression = f"($a := {expression}; $type($a) = 'array' ? $a[{segment}])"
        else:
            expression = f"($o := {expression}; $type($o) = 'object' ? $lookup($o, {literal(segment)}))"
    return expression


def selection(kind: str, expression: object, source: str) -> str:
    """JSONata that selects a key from ``source`` (the input), raising where the key is missing."""
    if kind == schema.KIND_WHOLE_INPUT:
        return f"($s := {source}; $empty($s) ? $error('the input is empty: the whole input is the idempotency key') : $s)"
    if kind == schema.KIND_PATHS:
        assert isinstance(expression, Sequence)
        parts = []
        for path in expression:
            message = literal(f"the key path {path} is missing, null or empty, or selects an object or a list")
            parts.append(
                f"($v := {_path(source, path)}; "
                f"($exists($v) = false or $empty($v) or $type($v) in ['array', 'object']) ? $error({message}) : $v)"
            )
        return "[" + ", ".join(parts) + "]"
    if kind == schema.KIND_JSONATA:
        message = literal(f"the key expression {expression} selects nothing, null or an empty value")
        return f"($v := ({expression}); ($exists($v) = false or $empty($v)) ? $error({message}) : $v)"
    raise ValueError(f"no JSONata selection for key kind {kind!r}")


def canonical_text(value: str) -> str:
    """JSONata for the canonical text of the value of ``value`` (JSONata)."""
    return f"({_FUNCTIONS} $text({value}))"


def text_digest(text: str) -> str:
    """JSONata for ``D(text)`` of the text that ``text`` (JSONata) evaluates to."""
    return f"({_FUNCTIONS} $digest({text}))"


def payload_parts(kind: str, expression: object, source: str) -> tuple[str, str, str]:
    """JSONata for the payload selection of ``source``: ``(what assigns each of its values to a variable,
    raising where a path is not there or the expression selects nothing; their $measured texts joined for
    $native; the canonical text of the selection)``. A ``from_paths`` selection is the list of the paths'
    values, written from their texts: an array constructor would flatten a value that is itself an array."""
    if kind == schema.KIND_JSONATA:
        message = literal(f"the payload expression {expression} selects nothing")
        return f"$p0 := ($v := ({expression}); $exists($v) ? $v : $error({message}));", "$measured($p0)", "$text($p0)"
    if kind != schema.KIND_PATHS:
        raise ValueError(f"no JSONata payload selection for payload kind {kind!r}")
    assert isinstance(expression, Sequence)
    assigned = ""
    for index, path in enumerate(expression):
        message = literal(f"the payload path {path} is missing in the input")
        assigned += f"$p{index} := ($v := {_path(source, path)}; $exists($v) ? $v : $error({message}));"
    names = [f"$p{index}" for index in range(len(expression))]
    measured = " & ',' & ".join(f"$measured({name})" for name in names)
    text = "'[' & $join([" + ", ".join(f"$text({name})" for name in names) + "], ',') & ']'"
    return assigned, measured, text


def payload_members(kind: str, expression: object, source: str) -> str:
    """JSONata for ``canonical.payload_members`` of the payload selection, after ``payload_parts``'s assignments
    and ``$n``'s (what ``$native`` measured: ``_small``); a ``from_paths`` selection's members are its paths,
    named by their text, each digest typed as a DynamoDB map's value (``{"S": ...}``)."""
    if kind == schema.KIND_WHOLE_INPUT:
        return _small(f"$members({source})")
    if kind == schema.KIND_JSONATA:
        return _small("$members($p0)")
    if kind != schema.KIND_PATHS:
        return "{}"
    assert isinstance(expression, Sequence)
    if not canonical.members_kept(list(expression)):
        return "{}"
    cut = schema.PAYLOAD_MEMBER_DIGEST
    members = (f"{literal(path)}: {{'S': $substring($digest($text($p{i})), 0, {cut})}}" for i, path in enumerate(expression))
    return _small("{" + ", ".join(members) + "}")


def _small(members: str) -> str:
    """``members`` where what ``$n`` measured (the selections' JSON) is at most ``schema.PAYLOAD_MEMBERS_TEXT``
    characters long: the digests canonicalize the payload's members again, which the native bounds leave room
    for only on a small payload."""
    return members if members == "{}" else f"($length($n) <= {schema.PAYLOAD_MEMBERS_TEXT} ? {members} : {{}})"


def record_id_and_validation(
    namespace: str,
    kind: str,
    expression: object,
    source: str,
    payload_kind: str = schema.KIND_WHOLE_INPUT,
    payload_expression: object = None,
) -> str:
    """JSONata for ``{"id": record id, "validation": payload digest, "members": payload_members}`` of the input ``source``,
    computed in one evaluation (so that one ``$canonical`` text serves both for a whole-input key and
    payload). It raises ``BEYOND_NATIVE`` first where what it canonicalizes, the key's selection and the
    payload's together, is beyond the native bounds (``$native``): cost follows what is hashed, never the
    envelope around it. A ``from_paths`` payload is the list of its values, written from their texts (an
    array constructor would flatten a value that is itself an array)."""
    if kind == schema.KIND_WHOLE_INPUT and payload_kind == schema.KIND_WHOLE_INPUT:
        # The id and the validation are one digest: of the input's one canonical text.
        # The members first: $v names the digest once it is made (``source`` may read another $v).
        body = f"$n := $measured({source});$native($n);$m := {payload_members(payload_kind, payload_expression, source)};"
        body += f"$v := $digest($text({selection(kind, expression, source)}));"
        return f"({_FUNCTIONS}{body}{{'id': {literal(schema.id_prefix(namespace))} & $v, 'validation': $v, 'members': $m}})"
    body = f"$ks := {selection(kind, expression, source)};"
    measured = "$measured($ks)"
    if payload_kind == schema.KIND_WHOLE_INPUT:
        measured += f" & ',' & $measured({source})"
        payload = f"$text({source})"
    elif payload_kind in (schema.KIND_PATHS, schema.KIND_JSONATA):
        assigned, values, payload = payload_parts(payload_kind, payload_expression, source)
        body += assigned
        measured += f" & ',' & {values}"
    body += f"$n := {measured};$native($n);"
    validation = literal(canonical.payload_validation(None)) if payload_kind == schema.KIND_NONE else f"$digest({payload})"
    # Each value bound first, one after the other: jsonata-js evaluates an object constructor's values at once (its
    # plain count of the depth adds them), where an engine evaluating them in turn (the JVM's, the emulator's) nests
    # as deep as the deepest; bound first, no count nests two canonicalizations of the input.
    body += f"$i := $digest($text($ks));$w := {validation};$m := {payload_members(payload_kind, payload_expression, source)};"
    return f"({_FUNCTIONS}{body}{{'id': {literal(schema.id_prefix(namespace))} & $i, 'validation': $w, 'members': $m}})"


def _evaluate(expression: str, document: Any, missing: type[Exception], what: str) -> Any:
    """``expression`` evaluated on the input ``document`` as jsonata-js evaluates it (``jsonata_engine``);
    an expression that raises raises ``missing``."""
    from . import engine

    try:
        return engine.evaluate(expression, {"states": {"input": document}})
    except engine.JSONataError as error:
        raise missing(f"the {what} expression {expression} raised: {error}") from None


def select_payload(document: Any, kind: str, expression: Any) -> Any:
    """The payload selection of ``document`` for any payload kind; raises ``PayloadMissing``."""
    if kind != schema.KIND_JSONATA:
        return canonical.select_payload(document, kind, expression)
    from .engine import UNDEFINED

    selection = _evaluate(expression, document, canonical.PayloadMissing, "payload")
    if selection is UNDEFINED:
        raise canonical.PayloadMissing(f"the payload expression {expression} selects nothing")
    return selection


def select(payload: Any, kind: str, expression: Any) -> Any:
    """The key selection of ``payload`` for any key kind. Raises ``KeyMissing``."""
    if kind != schema.KIND_JSONATA:
        return canonical.select(payload, kind, expression)
    from .engine import UNDEFINED

    selection = _evaluate(expression, payload, canonical.KeyMissing, "key")
    if selection is UNDEFINED or canonical.is_empty(selection):
        raise canonical.KeyMissing(f"the key expression {expression} selects nothing, null or an empty value")
    return selection
