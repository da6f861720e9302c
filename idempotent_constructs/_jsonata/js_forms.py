"""JavaScript's forms of values, as jsonata-js and AWS write them: numbers as ECMAScript's
Number::toString writes them (and as AWS's ``$string`` does, where measured), strings as ``JSON.stringify``
quotes them, object keys in JavaScript's order, and strings ordered by UTF-16 code units. ``engine`` and
``sfn_functions`` write values with them."""

from __future__ import annotations

import decimal
import json
import math
import operator
import re
from collections.abc import Callable
from typing import Any

import jsonata
from jsonata import utils as jsonata_utils

LONG = 2**63  # an integer of the input below this magnitude is kept exact, as AWS keeps a long
_WRITTEN_IN_FULL = 1e21  # a whole double below this magnitude is written with all its digits
_ARRAY_INDEX = re.compile(r"0|[1-9][0-9]{0,9}")
_SURROGATE = re.compile("[\ud800-\udfff]")


def js_number(value: float) -> str:
    """ECMAScript's Number::toString for a finite double (shortest round-trip digits).

    Written apart from ``lambda_src.canonical`` on purpose: the emulator stands in for AWS in
    the tests that compare the library's Python keys with executions, so it must not share their code."""
    if value == 0:
        return "0"
    if value < 0:
        return "-" + js_number(-value)
    _, digit_tuple, exponent = decimal.Decimal(repr(float(value))).normalize().as_tuple()
    digits = "".join(map(str, digit_tuple))
    count = len(digits)
    point = count + int(exponent)  # value = 0.digits * 10**point
    if count <= point <= 21:
        return digits + "0" * (point - count)
    if 0 < point <= 21:
        return f"{digits[:point]}.{digits[point:]}"
    if -6 < point <= 0:
        return "0." + "0" * -point + digits
    head = digits if count == 1 else f"{digits[0]}.{digits[1:]}"
    return f"{head}e{'+' if point > 0 else '-'}{abs(point - 1)}"


def js_precision_15(value: float) -> float:
    """``Number(value.toPrecision(15))``: ties round away from zero, on the double's exact value."""
    if value == 0 or not math.isfinite(value):
        return value
    context = decimal.Context(prec=15, rounding=decimal.ROUND_HALF_UP)
    return float(context.plus(decimal.Decimal(value)))


def _js_quote(text: str) -> str:
    quoted = json.dumps(text, ensure_ascii=False)
    return _SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", quoted)


def _js_keys(document: dict[str, Any]) -> list[str]:
    """JavaScript's own-property order: array-index keys ascending, then the rest as inserted."""
    indices = sorted((key for key in document if _ARRAY_INDEX.fullmatch(key) and int(key) < 2**32 - 1), key=int)
    named = set(indices)
    return indices + [key for key in document if key not in named]


def aws_number(value: float | int) -> str:
    """A finite number as AWS's ``$string`` writes it, where measured: an integer (a long) as its digits,
    a whole double below 10^21 in magnitude in full with its shortest digits; any other as jsonata-js
    writes it (15 significant digits, ECMAScript's form), as AWS's was not measured."""
    if isinstance(value, int) and -LONG <= value < LONG:
        return str(value)
    value = float(value)
    if value.is_integer() and abs(value) < _WRITTEN_IN_FULL:
        return js_number(value)  # ECMAScript writes a whole double below 10^21 in full, its shortest digits
    return js_number(js_precision_15(value))


def js_stringify(value: Any) -> str:
    """``JSON.stringify`` with jsonata-js's replacer, numbers as AWS writes them (``aws_number``)."""
    if value is None or value is jsonata_utils.Utils.NULL_VALUE:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return aws_number(value) if math.isfinite(value) else "null"
    if isinstance(value, str):
        return _js_quote(value)
    if isinstance(value, dict):
        members = [f"{_js_quote(key)}:{js_stringify(value[key])}" for key in _js_keys(value) if not is_function(value[key])]
        return "{" + ",".join(members) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join("null" if is_function(item) else js_stringify(item) for item in value) + "]"
    return '""'  # a function


def is_function(value: Any) -> bool:
    return callable(value) or isinstance(value, jsonata.Jsonata.JFunctionCallable)


def utf16(text: str) -> bytes:
    return text.encode("utf-16-be", "surrogatepass")


ORDER: dict[str, Callable[[bytes, bytes], bool]] = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
