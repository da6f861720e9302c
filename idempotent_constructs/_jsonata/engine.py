"""JSONata evaluated as Step Functions evaluates it.

Used wherever this library computes what a JSONata state will compute (a JSONata key's record id, the
guard's request texts in tests) and, through ``testing.gaps.jsonata``, by the local emulator's
interpreter. AWS says it implements JSONata 2.0.6 (jsonata-js's semantics); what others measured on AWS
shows a JVM engine (floci-io/floci issues #2662, #2669, #2737, pull requests #2676, #2683, #2783).
jsonata-python, a port of a Java port, evaluates here; where it differs from what AWS does, this module
makes it agree, with jsonata-js's semantics where AWS's were not measured:

- Step Functions' own functions: ``$hash(text, algorithm)`` (MD5, SHA-1, SHA-256, SHA-384, SHA-512 of
  the UTF-8 text, lowercase hex), ``$uuid()`` (a v4 UUID), ``$parse(json_text)``, ``$partition(array,
  size)``, ``$range(first, last, step)`` (``last`` included), ``$random([seed])`` (a seed gives
  ``java.util.Random``'s number); non-integer arguments are rounded down. ``$eval`` is not available.
- Numbers as measured on AWS: an integer of the input is kept exact while it fits a long (#2676), and
  arithmetic is done in doubles; ``$string`` (and ``&``) write an integer as its digits, a whole double
  below 10^21 in magnitude in full with its shortest digits (``$string(1e20)`` is
  "100000000000000000000", 2^63 "9223372036854776000", the largest double below 10^21
  "999999999999999900000": #2669, #2683), and any other number as jsonata-js does
  (``Number(x.toPrecision(15))`` in ECMAScript's form: ``1e+21``, ``0.1``); a division by zero is
  Infinity, written "Infinity" in a result (``[1/0]`` is ``["Infinity"]``: #2783). Strings as
  ``JSON.stringify`` writes them (non-ASCII kept, lone surrogates escaped); object keys in JavaScript's order.
- ``%`` is the exact remainder (jsonata-python truncates it to an integer).
- Strings compare by UTF-16 code units (JavaScript's ``<`` and ``$sort``, Java's ``compareTo``); Python
  compares code points.
- A regular expression is run by java.util.regex, whose matcher recurses once per repetition of a group
  with an alternation or a wide body (``_jsonata.java_regex``): with ``Bounds``, a pattern that breaks
  that rule fails the evaluation where it matches more than ``java_regex.REPETITIONS`` characters at once.
- An expression that evaluates to nothing, or that raises, fails the state with
  ``States.QueryEvaluationError``, which Task, Parallel and Map states can catch.
"""

from __future__ import annotations

import dataclasses
import decimal
import hashlib
import json
import math
import operator
import random
import re
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any, ClassVar

import jsonata
from jsonata import functions as jsonata_functions
from jsonata import utils as jsonata_utils
from jsonata.regex_engine import RegexFlags, default_regex_engine

from . import java_regex

UNDEFINED = object()  # what an expression that selects nothing evaluates to (JSON has no form for it)
_EXACT_INTEGERS = 2**53
_LONG = 2**63  # an integer of the input below this magnitude is kept exact, as AWS keeps a long
_WRITTEN_IN_FULL = 1e21  # a whole double below this magnitude is written with all its digits
_HASHES = {"MD5": "md5", "SHA-1": "sha1", "SHA-256": "sha256", "SHA-384": "sha384", "SHA-512": "sha512"}
_ARRAY_INDEX = re.compile(r"0|[1-9][0-9]{0,9}")
_SURROGATE = re.compile("[\ud800-\udfff]")


class JSONataError(Exception):
    """An expression raised while being evaluated (a type error, a bad argument, a failing function)."""


class BoundExceeded(JSONataError):
    """The evaluation left one of the bounds AWS puts on every JSONata evaluation (``Bounds``)."""


@dataclasses.dataclass(frozen=True)
class Bounds:
    """The bounds AWS puts on one JSONata evaluation, measured against AWS by others with TestState
    (floci-io/floci issue #2737 and pull request #2783; AWS's page "Transforming data with JSONata in
    Step Functions" names the three without numbers):

    - depth: evaluation deeper than 100 levels fails (``1+1+...+1`` of 100 terms passes, of 101 fails;
      99 nested parentheses or brackets pass, 100 fail; all five of floci's AWS boundaries hold here),
      counted as jsonata's Timebox counts it: one level for each evaluation entered and not yet left,
      the entries of a parallel call (an array constructor's or a grouping's items after the first) not
      counted. Where the Timebox would leave a level it never entered (its exit skipped because a later
      item set the parallel flag), the level is left here: with the Timebox, ``$map([1..200],
      function($x) { [$x, $x] })`` counts 202 levels (jsonata-js's counts 401) although it never nests
      more than 4, and an emulator that failed it would fail ordinary workflows that AWS runs;
    - memory: ``[1..873782]`` passes and ``[1..873783]`` fails, a string of 2**22 characters passes
      and of 2**23 fails: modelled, as floci models it, as any one value of more than 6,990,256 bytes,
      a number 8 bytes and a character 1 (an array counted as 8 bytes an item);
    - time: AWS fails an evaluation that runs longer than 1 second. Time depends on the machine (and
      jsonata-python is slower than the jsonata-js AWS runs), so ``seconds`` only stops a runaway
      evaluation; the benchmark measures our expressions' time in jsonata-js;
    - a regular expression's repetitions: java.util.regex recurses once per repetition of a group with
      an alternation or a wide body, and overflows the JVM's stack past some hundreds to thousands of
      them (measured on jsonata-java 0.9.9: docs/project/how-we-know.md). A pattern that breaks
      ``java_regex``'s rule fails where one match covers more than ``regex_characters`` characters (one
      or more a repetition). AWS's cause for it was not measured: ``REGEX_OVERFLOW`` is ours.

    The causes are AWS's, as measured, but ``REGEX_OVERFLOW``."""

    depth: int = 100
    memory_bytes: int = 6_990_256
    seconds: float = 10.0
    regex_characters: int = java_regex.REPETITIONS

    STACK_OVERFLOW: ClassVar[str] = (
        "Stack overflow error: Check for non-terminating recursive function. Consider rewriting as tail-recursive"
    )
    MEMORY: ClassVar[str] = "Expression evaluation memory limit exceeded: Check for excessive memory usage"
    TIMEOUT: ClassVar[str] = "Expression evaluation timeout: Check for infinite loop"
    REGEX_OVERFLOW: ClassVar[str] = (
        "java.lang.StackOverflowError: the regular expression {pattern} repeats a group over {count} characters,"
        " past what java.util.regex recurses through on AWS's JVM engine (the emulator's estimate)"
    )

    def frame(self, bindings: dict[str, Any]) -> jsonata.Jsonata.Frame:
        """A frame of ``bindings`` whose evaluation raises ``BoundExceeded`` where AWS's would fail."""
        frame = jsonata.Jsonata.Frame(None)
        counted: list[int] = []  # one entry per evaluation entered and not yet left: 1 where it counts
        depth, started = 0, time.monotonic()

        def entered(_node: Any, _input: Any, environment: Any) -> None:
            nonlocal depth
            counted.append(0 if environment.is_parallel_call else 1)
            depth += counted[-1]
            if depth > self.depth:
                raise BoundExceeded(self.STACK_OVERFLOW)
            if time.monotonic() - started > self.seconds:
                raise BoundExceeded(self.TIMEOUT)

        def left(_node: Any, _input: Any, _environment: Any, result: Any) -> None:
            nonlocal depth
            depth -= counted.pop()
            if isinstance(result, jsonata_utils.Utils.RangeList):
                return  # lazy: the array it fills is measured
            if isinstance(result, str):
                held = len(result)
            elif isinstance(result, list):
                held = 8 * len(result)
            else:
                return
            if held > self.memory_bytes:
                raise BoundExceeded(self.MEMORY)

        frame.set_evaluate_entry_callback(entered)
        frame.set_evaluate_exit_callback(left)
        for name, value in bindings.items():
            frame.bind(name, value)
        return frame


AWS_BOUNDS = Bounds()


# --- JavaScript's forms -------------------------------------------------------------------------------
def js_number(value: float) -> str:
    """ECMAScript's Number::toString for a finite double (shortest round-trip digits).

    Written apart from ``lambda_src.canonical.js_number`` on purpose: the emulator stands in for AWS in
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
    if isinstance(value, int) and -_LONG <= value < _LONG:
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
        members = [f"{_js_quote(key)}:{js_stringify(value[key])}" for key in _js_keys(value) if not _is_function(value[key])]
        return "{" + ",".join(members) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join("null" if _is_function(item) else js_stringify(item) for item in value) + "]"
    return '""'  # a function


def _is_function(value: Any) -> bool:
    return callable(value) or isinstance(value, jsonata.Jsonata.JFunctionCallable)


def _utf16(text: str) -> bytes:
    return text.encode("utf-16-be", "surrogatepass")


_ORDER: dict[str, Callable[[bytes, bytes], bool]] = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


# --- Step Functions' functions --------------------------------------------------------------------------
def _string(value: Any = None, prettify: Any = None) -> Any:
    if isinstance(value, jsonata_utils.Utils.JList) and value.outer_wrapper:
        value = value[0]
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isfinite(value):
        raise JSONataError("D3001: attempting to invoke string function on Infinity or NaN")
    if prettify:
        return json.dumps(json.loads(js_stringify(value)), indent=2, ensure_ascii=False)
    return js_stringify(value)


def _hash(text: Any = None, algorithm: Any = None) -> Any:
    if text is None:
        return None
    if not isinstance(text, str) or algorithm not in _HASHES:
        raise JSONataError(f"$hash takes a string and one of {sorted(_HASHES)}, got {type(text).__name__}, {algorithm!r}")
    return hashlib.new(_HASHES[algorithm], text.encode("utf-8", "surrogatepass")).hexdigest()


def _uuid() -> str:
    return str(uuid.uuid4())


def _parse(text: Any = None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except (TypeError, ValueError) as error:
        raise JSONataError(f"$parse: the argument is not a JSON text: {error}") from None


def _partition(items: Any = None, size: Any = None) -> Any:
    if items is None:
        return None
    if not isinstance(items, list):
        items = [items]
    chunk = math.floor(size) if isinstance(size, (int, float)) and not isinstance(size, bool) else 0
    if chunk < 1:
        raise JSONataError("$partition: the chunk size must be a positive integer")
    return [list(items[start : start + chunk]) for start in range(0, len(items), chunk)]


def _range(first: Any = None, last: Any = None, step: Any = 1) -> Any:
    numbers = [first, last, step]
    if not all(isinstance(n, (int, float)) and not isinstance(n, bool) for n in numbers):
        raise JSONataError("$range takes three numbers")
    first, last, step = (math.floor(n) for n in numbers)
    if step == 0:
        raise JSONataError("$range: the step must not be 0")
    numbers = list(range(first, last + (1 if step > 0 else -1), step))
    # AWS answers a range of one number with the number, as a sequence of one is its item (LocalStack's
    # AWS-recorded test_array_range: $range(1, 9, 9) is 1).
    return numbers[0] if len(numbers) == 1 else numbers


def _random(seed: Any = None) -> float:
    """A seed gives what ``java.util.Random(seed).nextDouble()`` gives, as AWS's does: ``$random(42)``
    is 0.7275636800328681 (measured against AWS, floci-io/floci issue #2662)."""
    if seed is None:
        return random.random()
    mask = (1 << 48) - 1
    state: int = (math.floor(seed) ^ 0x5DEECE66D) & mask

    def bits(count: int) -> int:
        nonlocal state
        state = (state * 0x5DEECE66D + 0xB) & mask
        return state >> (48 - count)

    return ((bits(26) << 27) + bits(27)) * 2.0**-53


def _sort(items: Any = None, comparator: Any = None) -> Any:
    if items is not None and not isinstance(items, list):
        items = [items]  # the signature <af?:a> reads one value as an array of one
    if comparator is None and isinstance(items, list) and all(isinstance(item, str) for item in items):
        return sorted(items, key=_utf16)
    return jsonata_functions.Functions.sort(items, comparator)


def _eval(*_: Any) -> Any:
    raise JSONataError("$eval is not available in Step Functions: use $parse")


_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "hash": _hash,
    "uuid": _uuid,
    "parse": _parse,
    "partition": _partition,
    "range": _range,
    "random": _random,
    "string": _string,
    "sort": _sort,
    "eval": _eval,
}


# --- evaluation -------------------------------------------------------------------------------------------
_compiled = threading.local()
_matching = threading.local()  # .bounds: the bounds of the evaluation under way on this thread


class _JavaPattern:
    """A pattern that breaks ``java_regex``'s rule: it matches as Python's ``re`` does, but fails the
    evaluation, as AWS's JVM engine would overflow, where the evaluation has bounds and one match covers
    more than their ``regex_characters``."""

    def __init__(self, compiled: re.Pattern[str]) -> None:
        self.compiled, self.pattern = compiled, compiled.pattern

    def _checked(self, match: re.Match[str] | None) -> re.Match[str] | None:
        bounds: Bounds | None = getattr(_matching, "bounds", None)
        if match is not None and bounds is not None and match.end() - match.start() > bounds.regex_characters:
            raise BoundExceeded(Bounds.REGEX_OVERFLOW.format(pattern=f"/{self.pattern}/", count=bounds.regex_characters))
        return match

    def search(self, string: str, *arguments: Any) -> re.Match[str] | None:
        return self._checked(self.compiled.search(string, *arguments))

    def finditer(self, string: str, *arguments: Any) -> Any:
        return (self._checked(match) for match in self.compiled.finditer(string, *arguments))

    def sub(self, replacement: Any, string: str, count: int = 0) -> str:
        for match in self.compiled.finditer(string):
            self._checked(match)
        return self.compiled.sub(replacement, string, count)

    def split(self, string: str, maxsplit: int = 0) -> list[str]:
        for match in self.compiled.finditer(string):
            self._checked(match)
        return self.compiled.split(string, maxsplit)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.compiled, name)


def _regex_engine(pattern: str, flags: RegexFlags) -> Any:
    compiled = default_regex_engine(pattern, flags)
    return _JavaPattern(compiled) if java_regex.nested_problems(pattern) else compiled


class _StepFunctionsJsonata(jsonata.Jsonata):  # type: ignore[misc]  # jsonata-python is untyped
    """jsonata-python's evaluator with jsonata-js's string semantics: ``&`` writes values as ``$string``
    does, and strings compare by UTF-16 code units."""

    def evaluate_string_concat(self, lhs: Any, rhs: Any) -> str:
        return ("" if lhs is None else _string(lhs)) + ("" if rhs is None else _string(rhs))

    def evaluate_numeric_expression(self, lhs: Any, rhs: Any, op: Any) -> Any:
        # jsonata-python truncates a remainder to an integer (int(math.fmod(...))): JavaScript's % and a
        # JVM's are the exact IEEE remainder, 0.5 % 1 is 0.5.
        numbers = all(isinstance(value, (int, float)) and not isinstance(value, bool) for value in (lhs, rhs))
        if op == "%" and numbers and rhs:
            return jsonata_utils.Utils.convert_number(math.fmod(float(lhs), float(rhs)))
        if op == "/" and numbers and not rhs:  # AWS divides as doubles do: [1/0] is ["Infinity"]
            return math.copysign(math.inf, lhs) if lhs else math.nan
        result = super().evaluate_numeric_expression(lhs, rhs, op)
        # Arithmetic is done in doubles: a whole result beyond 2**53 is one (jsonata-python makes it an int).
        return float(result) if isinstance(result, int) and abs(result) >= _EXACT_INTEGERS else result

    def evaluate_comparison_expression(self, lhs: Any, rhs: Any, op: Any) -> Any:
        if isinstance(lhs, str) and isinstance(rhs, str):
            return _ORDER[op](_utf16(lhs), _utf16(rhs))
        return super().evaluate_comparison_expression(lhs, rhs, op)


def _expression(text: str) -> jsonata.Jsonata:
    cache: dict[str, jsonata.Jsonata] = _compiled.__dict__.setdefault("cache", {})
    expression = cache.get(text)
    if expression is None:
        expression = _StepFunctionsJsonata(text, _regex_engine)
        expression.set_output_convert_nulls(False)
        for name, function in _FUNCTIONS.items():
            expression.register_lambda(name, function)
        cache[text] = expression
    return expression


def _to_javascript(value: Any) -> Any:
    """Input as AWS's engine holds it: an integer kept exact while it fits a long, any other number a
    double, and null as JSON's null (to jsonata-python ``None`` is undefined: ``[null, 1]`` would lose its null)."""
    if value is None:
        return jsonata_utils.Utils.NULL_VALUE
    if isinstance(value, dict):
        return {key: _to_javascript(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_to_javascript(item) for item in value]
    if isinstance(value, int) and not isinstance(value, bool) and not -_LONG <= value < _LONG:
        return float(value)
    return value


def _to_json(value: Any) -> Any:
    """A result as Step Functions writes it: JSON values, an integral double as an integer."""
    if value is jsonata_utils.Utils.NULL_VALUE:
        return None
    if isinstance(value, dict):
        return {key: _to_json(item) for key, item in value.items() if not _is_function(item)}
    if isinstance(value, (list, tuple)):
        return [_to_json(item) for item in value]
    if isinstance(value, float) and value.is_integer() and abs(value) < _LONG:
        return int(value)
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if _is_function(value):
        return ""
    return value


def evaluate(text: str, bindings: dict[str, Any], *, bounds: Bounds | None = None) -> Any:
    """The value of the JSONata expression ``text`` with ``bindings`` (name without ``$``: value), or
    ``UNDEFINED``; raises ``JSONataError`` where jsonata-js would throw, and ``BoundExceeded`` where the
    evaluation leaves ``bounds`` (none by default)."""
    values = {name: _to_javascript(value) for name, value in bindings.items()}
    _matching.bounds = bounds
    try:
        result = _expression(text).evaluate(None, values if bounds is None else bounds.frame(values))
    except JSONataError:
        raise
    except Exception as error:  # jsonata-python's JException and the errors of its functions
        raise JSONataError(f"{type(error).__name__}: {error}") from None
    finally:
        _matching.bounds = None
    if result is None:
        return UNDEFINED
    if isinstance(result, jsonata_utils.Utils.JList) and result.outer_wrapper and len(result) == 1:
        result = result[0]
    return _to_json(result)
