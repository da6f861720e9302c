"""JSONata that measures what Step Functions counts: a text's UTF-8 bytes, a value's JSON, a value's size
in a Lambda task's built parameters (256 KiB at most), so that a generated task never exceeds it.

Each function returns JSONata text to embed in a state's ``{% %}`` field. Their regular expressions keep
``java_regex``'s rule (AWS's engine runs on the JVM).
"""

from __future__ import annotations

from .key_expressions import literal

# The UTF-8 length of a text: encodeURIComponent writes every byte beyond ASCII's safe set as "%XX".
# A lone surrogate, which $encodeUrlComponent refuses (D3140) and a JVM engine's $string leaves unescaped,
# is counted as the 6 bytes of its escape, as JSON.stringify writes it.
BYTES = (
    "$bytes := function($s) {( $e := $encodeUrlComponent($replace($s, "
    "/[\\ud800-\\udbff](?![\\udc00-\\udfff])|(?<![\\ud800-\\udbff])[\\udc00-\\udfff]/, 'uuuuuu')); "
    "$length($e) - 2 * ($length($e) - $length($replace($e, '%', ''))) )};"
)
# JSON of any value: ``$string`` writes a bare string as itself, and an array constructor would flatten an
# array, so the value is written inside an object and taken out again, after the first colon and before
# the last brace ($substring from 0 only: a JVM port counts a later start's length from the text's start).
JSON = "$json := function($v) {( $o := $substringAfter($string({'v': $v}), ':'); $substring($o, 0, $length($o) - 1) )};"
# Bytes kept free for the rest of a Lambda payload that carries a whole state input or result: its
# other fields, and numbers that JSONata's $string writes shorter than Step Functions does.
PAYLOAD_MARGIN = 8 * 1024


def within_payload(value: str, error: str) -> str:
    """JSONata for ``value``, raising ``error`` when it is too large to send to a Lambda function with
    a few other fields (Step Functions would fail the task, uncatchably, once it is built)."""
    return f"({BYTES}{JSON} $v := {value}; $bytes($json($v)) > {262_144 - PAYLOAD_MARGIN} ? $error({literal(error)}) : $v)"


# What a built Lambda task holds besides its payload's fields: the function's ARN with its version, the
# field names, the punctuation.
TASK_OVERHEAD = 512
# $string writes a number in at most 15 significant digits (1.0000000000000002 as 1), Step Functions all
# of its up to 17: at most 17 bytes a number more than $json counts. Strings are written alike.
_NUMBER_SLACK = 17


# A JSON text's strings, each made "" in two passes that java.util.regex runs without recursing
# (_jsonata/java_regex.py): every escape dropped, then every quoted run.
_ESCAPE = "/\\x5c[\\s\\S]/"
_STRING = '/"[^"]*"/'
# A number $string may write shorter than Step Functions: a fraction, an exponent, 16 digits or more.
_INEXACT = "/[0-9][.eE]|[0-9]{16}/"


def payload_bytes(value: str) -> str:
    """JSONata: at least the bytes Step Functions counts for ``value`` in a task's built parameters: its
    compact JSON in UTF-8, with 17 bytes more for each number ``$string`` does not write exactly (one that
    does not read back as itself). Only where the JSON holds a number that may be such (every engine
    writes an integer below 10^15 exactly) is each number tested, on its own (``$v.**`` reaches every
    one), not the whole text read back: a JVM port's ``$string`` leaves a quote in a member name unescaped."""
    return (
        f"({BYTES}{JSON} $v := {value}; $j := $json($v);"
        f" $bytes($j) + ($contains($replace($replace($j, {_ESCAPE}, ''), {_STRING}, '\"\"'), {_INEXACT})"
        f" ? {_NUMBER_SLACK} * $count([$v, $v.**][$type($) = 'number' and $number($string($)) != $]) : 0))"
    )
