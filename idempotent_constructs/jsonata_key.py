"""The canonical key specification (``docs/canonical-key.md``) written in JSONata.

The generated states compute record ids and payload hashes natively with these expressions; Python
computes the same values with ``lambda_src/canonical.py`` (in this package). Each function returns JSONata text to
embed in a state's ``{% %}`` field. A key that cannot be computed raises with JSONata's ``$error``,
which a Task or Parallel state sees as ``States.QueryEvaluationError`` and the guard renames
``Idempotency.KeyMissing``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .lambda_src import canonical, schema

# $quote: JSON.stringify of one string (or true, false, null), without the brackets of the array that carries it.
# $decimal: 15 digits by $string, then the exact remainder when they are not the whole double.
# $canonical: section 2, written after the prefix $p; with $exact, a number of magnitude 2**53 or more
#   raises. Objects are tested first and every nested value is written by a tail call (the member's text
#   goes in as the prefix), so each level of the value adds as few evaluation levels as JSONata allows:
#   AWS fails an evaluation deeper than 100 levels (B18).
# $digest: section 3, a long text hashed in pieces.
# $native: raises, before any work, where the value is beyond the bounds within which the native key
#   stays well inside AWS's (NATIVE_*): the guard then computes the key with the key function.
NATIVE_CHARACTERS = 16_384  # $string of the value, in UTF-16 units
NATIVE_VALUES = 2_000  # commas outside strings: about the values in it
NATIVE_LEVELS = 9  # containers nested in one another, the outermost included
BEYOND_NATIVE = "the input is beyond the bounds of the native key: the key function computes it"
# jsonata's regular-expression scanner counts unescaped brackets and braces, also in a class, and a backslash
# before a closing bracket hides it: hence the escaped braces and \x5c for a backslash.
_LEVEL = "$s := $replace($s, /[\\[\\{][^\\[\\]\\{\\}]*[\\]\\}]/, '0');"
_FUNCTIONS = (
    "$quote := function($s) {( $t := $string([$s]); $substring($t, 1, $length($t) - 2) )};"
    "$decimal := function($x) {( $h := $number($string($x)); "
    "$h = $x ? $string($x) : $string($x) & '~' & $string($x - $h) )};"
    "$canonical := function($v, $exact, $p) {"
    "$type($v) = 'object' ? $p & '{' & $join($map($sort($keys($v)), function($k) "
    "{ $canonical($lookup($v, $k), $exact, $quote($k) & ':') }), ',') & '}'"
    " : $type($v) = 'array' ? $p & '[' & $join($map($v, function($i) { $canonical($i, $exact, '') }), ',') & ']'"
    " : $type($v) = 'number' ? $p & ($exact and $abs($v) >= " + str(canonical.EXACT_LIMIT) + " ? "
    "$error('a key number of magnitude 2^53 or more cannot be keyed exactly: send it as a string') : $decimal($v))"
    " : $p & $quote($v)};"
    "$digest := function($t) { $length($t) <= " + str(canonical.HASH_PIECE) + " ? $hash($t, 'SHA-256')"
    " : $hash('chunks:' & $join($map([0..$ceil($length($t) / " + str(canonical.HASH_PIECE) + ") - 1], "
    "function($i) { $hash($substring($t, $i * "
    + str(canonical.HASH_PIECE)
    + ", "
    + str(canonical.HASH_PIECE)
    + "), 'SHA-256') }), ''), 'SHA-256') };"
    "$empty := function($v) { $type($v) = 'null' or $v = '' "
    "or ($type($v) = 'array' and $count($v) = 0) or ($type($v) = 'object' and $count($keys($v)) = 0) };"
    "$native := function($v) {( $s := $string([$v]);"
    f" $fits := $length($s) > {NATIVE_CHARACTERS + 2} ? false : ("
    ' $s := $replace($s, /"(?:[^"\\x5c]|\\x5c.)*"/, \'0\');'
    f" $length($s) - $length($replace($s, ',', '')) >= {NATIVE_VALUES} ? false : ("
    + _LEVEL
    * (NATIVE_LEVELS + 1)
    + " $not($contains($s, /[\\[\\{]/))));"
    " $fits ? true : $error('" + BEYOND_NATIVE + "') )};"
)


def literal(text: str) -> str:
    """``text`` as a JSONata string literal (single quotes; JSON escapes, ``'`` as ``\\u0027``)."""
    escaped = []
    for character in text:
        if character == "\\":
            escaped.append("\\\\")
        elif character == "'" or ord(character) < 0x20:
            escaped.append(f"\\u{ord(character):04x}")
        else:
            escaped.append(character)
    return "'" + "".join(escaped) + "'"


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


def canonical_text(value: str, *, exact: bool = False) -> str:
    """JSONata for the canonical text of the value of ``value`` (JSONata)."""
    return f"({_FUNCTIONS} $canonical({value}, {'true' if exact else 'false'}, ''))"


def text_digest(text: str) -> str:
    """JSONata for ``D(text)`` of the text that ``text`` (JSONata) evaluates to."""
    return f"({_FUNCTIONS} $digest({text}))"


def record_id_and_validation(namespace: str, kind: str, expression: object, source: str) -> str:
    """JSONata for ``{"id": record id, "validation": payload digest}`` of the input ``source``,
    computed in one evaluation (so that one ``$canonical`` text serves both for a whole-input key).
    It raises ``BEYOND_NATIVE`` first where the input is beyond the native bounds (``$native``)."""
    prefix = literal(canonical.key_prefix(kind, expression))
    if kind == schema.KIND_WHOLE_INPUT:
        # The whole input is keyed as Step Functions reads it: a large number is the double it arrives as.
        body = f"$payload := $canonical({selection(kind, expression, source)}, false, '');$key := $payload;"
    else:
        body = f"$key := $canonical({selection(kind, expression, source)}, true, '');$payload := $canonical({source}, false, '');"
    return (
        f"({_FUNCTIONS}$native({source});{body}"
        f"{{'id': {literal(schema.id_prefix(namespace))} & $digest({prefix} & $key & ']'), 'validation': $digest($payload)}})"
    )


def select(payload: Any, kind: str, expression: Any) -> Any:
    """The key selection of ``payload`` for any key kind; a JSONata key's expression is evaluated as
    jsonata-js evaluates it (``idempotent_constructs.jsonata_engine``). Raises ``KeyMissing``."""
    if kind != schema.KIND_JSONATA:
        return canonical.select(payload, kind, expression)
    from . import jsonata_engine as engine

    try:
        selection = engine.evaluate(expression, {"states": {"input": payload}})
    except engine.JSONataError as error:
        raise canonical.KeyMissing(f"the key expression {expression} raised: {error}") from None
    if selection is engine.UNDEFINED or canonical.is_empty(selection):
        raise canonical.KeyMissing(f"the key expression {expression} selects nothing, null or an empty value")
    return selection
