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

This module evaluates; the errors and AWS's bounds are in ``bounds`` (imported from here too),
JavaScript's forms of values in ``js_forms``, and Step Functions' functions in ``sfn_functions``.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jsonata
from jsonata import utils as jsonata_utils
from jsonata.regex_engine import RegexFlags, default_regex_engine

from . import java_regex, sfn_functions
from .bounds import AWS_BOUNDS, BoundExceeded, Bounds, JSONataError
from .js_forms import LONG, ORDER, is_function, utf16

__all__ = ["AWS_BOUNDS", "UNDEFINED", "BoundExceeded", "Bounds", "Clock", "JSONataError", "evaluate"]

UNDEFINED = object()  # what an expression that selects nothing evaluates to (JSON has no form for it)
_EXACT_INTEGERS = 2**53


_compiled = threading.local()
_parsed: dict[str, tuple[Any, Any]] = {}  # by text: the parse tree and its errors (_expression)
# .bounds: the bounds of the evaluation under way on this thread; .clock: its Clock, if it has one
_matching = threading.local()


@dataclass(frozen=True)
class Clock:
    """What ``$millis()`` and ``$uuid()`` give in one evaluation, where the caller decides: the time (epoch
    milliseconds, the same for every call, as jsonata-js reads the clock once an evaluation) and where
    each new UUID comes from (the protocol explorer runs many executions on one clock of its own)."""

    millis: int
    uuids: Callable[[], str]


def _millis() -> int:
    clock: Clock | None = getattr(_matching, "clock", None)
    return jsonata.Jsonata.CURRENT.jsonata.timestamp if clock is None else clock.millis


def _uuid() -> str:
    clock: Clock | None = getattr(_matching, "clock", None)
    return sfn_functions.FUNCTIONS["uuid"]() if clock is None else clock.uuids()


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
        return ("" if lhs is None else sfn_functions.string(lhs)) + ("" if rhs is None else sfn_functions.string(rhs))

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
            return ORDER[op](utf16(lhs), utf16(rhs))
        return super().evaluate_comparison_expression(lhs, rhs, op)


def _expression(text: str) -> jsonata.Jsonata:
    """The expression ``text``, made once a thread (an evaluation keeps its state on it: the time, the input),
    parsed once a process: the emulator runs each state on a thread of its own, and a generated key expression
    takes a while to parse. The parse (its tree) is only read by an evaluation."""
    cache: dict[str, jsonata.Jsonata] = _compiled.__dict__.setdefault("cache", {})
    expression = cache.get(text)
    if expression is None:
        parsed = _parsed.get(text)
        if parsed is None:
            made = _StepFunctionsJsonata(text, _regex_engine)
            parsed = _parsed.setdefault(text, (made.ast, made.errors))
        expression = _StepFunctionsJsonata("null", _regex_engine)
        expression.ast, expression.errors = parsed
        expression.set_output_convert_nulls(False)
        for name, function in {**sfn_functions.FUNCTIONS, "uuid": _uuid, "millis": _millis}.items():
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
    if isinstance(value, int) and not isinstance(value, bool) and not -LONG <= value < LONG:
        return float(value)
    return value


def _to_json(value: Any) -> Any:
    """A result as Step Functions writes it: JSON values, an integral double as an integer."""
    if value is jsonata_utils.Utils.NULL_VALUE:
        return None
    if isinstance(value, dict):
        return {key: _to_json(item) for key, item in value.items() if not is_function(item)}
    if isinstance(value, (list, tuple)):
        return [_to_json(item) for item in value]
    if isinstance(value, float) and value.is_integer() and abs(value) < LONG:
        return int(value)
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if is_function(value):
        return ""
    return value


def evaluate(text: str, bindings: dict[str, Any], *, bounds: Bounds | None = None, clock: Clock | None = None) -> Any:
    """The value of the JSONata expression ``text`` with ``bindings`` (name without ``$``: value), or
    ``UNDEFINED``; raises ``JSONataError`` where jsonata-js would throw, and ``BoundExceeded`` where the
    evaluation leaves ``bounds`` (none by default). ``clock`` sets ``$millis()`` and ``$uuid()`` (the
    machine's by default)."""
    values = {name: _to_javascript(value) for name, value in bindings.items()}
    _matching.bounds, _matching.clock = bounds, clock
    try:
        result = _expression(text).evaluate(None, values if bounds is None else bounds.frame(values))
    except JSONataError:
        raise
    except Exception as error:  # jsonata-python's JException and the errors of its functions
        raise JSONataError(f"{type(error).__name__}: {error}") from None
    finally:
        _matching.bounds = _matching.clock = None
    if result is None:
        return UNDEFINED
    if isinstance(result, jsonata_utils.Utils.JList) and result.outer_wrapper and len(result) == 1:
        result = result[0]
    return _to_json(result)
