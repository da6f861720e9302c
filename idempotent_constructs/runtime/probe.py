"""The probe: the key, payload and size expressions the generated states compute, run by Step Functions
itself on a corpus of inputs, each result compared with what Python computes; and the telling probes,
which show how the engine that answers writes numbers and strings and runs regular expressions.

AWS runs JSONata on the JVM, not on the jsonata-js the library was first written against
(docs/explanation/canonical-key.md, section 7), and no emulator is AWS: the probe settles, on an account,
that a record id computed natively is the one ``IdempotencyKey.record_id``, the key function and the
command line's ``key`` and ``reset`` compute. ``idempotent-constructs probe`` runs it with TestState
(``test_state``); the emulator runs it in the suite (``tests/emulator/cli/test_probe.py``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from .._jsonata import key_expressions, sizes
from ..lambda_src import canonical, schema

NAMESPACE = "probe"
FAILED = "a failed state"  # what a telling probe gives where the engine fails the evaluation


@dataclass(frozen=True)
class Outcome:
    """What one evaluation gave: its value, or the error and cause the state failed with."""

    value: Any = None
    error: str | None = None
    cause: str | None = None


# (JSONata expression, the state's input) -> what a JSONata Pass state whose Output is the expression gave.
Evaluate = Callable[[str, Any], Outcome]


@dataclass(frozen=True)
class Line:
    """One line of the report: ``PASS``, ``FAIL`` or ``SEEN`` (a telling probe, which passes or fails nothing)."""

    verdict: str
    case: str
    detail: str

    def __str__(self) -> str:
        return f"{self.verdict}  {self.case}: {self.detail}"


def state(expression: str) -> dict[str, Any]:
    """The one state each case runs: a JSONata Pass state whose output is ``expression``."""
    return {"QueryLanguage": "JSONata", "Type": "Pass", "Output": "{% " + expression + " %}", "End": True}


def inputs() -> dict[str, Any]:
    """The corpus: long texts, emoji, escapes, control characters, numbers of every kind, many values."""
    records = [{"id": f"r-{n}", "amount": n * 1.25, "ok": n % 2 == 0, "tags": ["a", "é"]} for n in range(300)]
    return {
        "a small order": {"order": {"id": "o-1", "amount": 12.99, "lines": [{"sku": "a", "qty": 2}]}},
        "a 3,000-character text": {"text": "x" * 3000},
        "a 100,000-character text": {"text": "lorem ipsum é " * 7143},
        "emoji, 3,000 of them": {"text": "😀" * 3000},
        "a pair across a piece": {"text": "b" * 2499 + "😀" * 10},
        "1,500 escaped quotes": {"text": '\\"' * 1500},
        "a 1,300-character member name": {"k" * 1300: 1},
        "controls and separators": {"text": "".join(map(chr, range(32))) + "\u007f\u0085\u2013\u2028\u2029"},
        "quotes and backslashes in names": {'a"b': 1, "c\\d": 2, "é": 3},
        "a lone surrogate": {"text": "x\ud800y"},
        "300 small records": records,
        "1,999 numbers": list(range(1999)),
        "integers up to 2^53": {"n": [2**53 - 1, -(2**53 - 1), 1234567890123456, 10**15, 99999999, 100000000]},
        "an integer of 2^53 or more": {"n": 9007199254740993},
        "2^63 - 1 and -2^63": {"n": [2**63 - 1, -(2**63)]},
        "1e20 and 1e21": {"n": [1e20, 1e21]},
        "fractions": {"n": [0.1 + 0.2, 1 / 3, 12.99, -0.75, 1.5e-7, 123456789012345.5]},
        "5e-324 and -0": {"n": [5e-324, -0.0, 2.0**-1074 * 3, 1e-300]},
        "nested 9 levels": {"a": {"b": {"c": {"d": {"e": {"f": {"g": {"h": [1]}}}}}}}},
    }


def telling() -> dict[str, tuple[str, Any, dict[str, Any]]]:
    """The telling probes: ``{name: (expression, input, {what each engine gives})}``."""
    return {
        "$replace('😀😀', /./, 'a')": ("$replace('😀😀', /./, 'a')", {}, {"jsonata-js": "aaaa", "a JVM engine": "aa"}),
        "$string(1234567890123456)": (
            "$string(1234567890123456)",
            {},
            {"jsonata-js": "1234567890123460", "a JVM engine": "1234567890123456"},
        ),
        "$string(['\\u2028'])": ("$string(['\\u2028'])", {}, {"jsonata-js": '["\u2028"]', "jsonata-java 0.9.9": '["\\u2028"]'}),
        "$string({'a\"b': 1})": ("$string({'a\"b': 1})", {}, {"jsonata-js": '{"a\\"b":1}', "jsonata-java 0.9.9": '{"a"b":1}'}),
        "(?:a|b)* over 10,000 characters": (
            "$length($replace($states.input.s, /(?:a|b)*/, ''))",
            {"s": "ab" * 5000},
            {"jsonata-js": 0, "a JVM engine (java.lang.StackOverflowError)": FAILED},
        ),
    }


def run(evaluate: Evaluate) -> Iterator[Line]:
    """Every case, evaluated by ``evaluate``, as report lines."""
    for name, document in inputs().items():
        yield from _keys(evaluate, name, document)
        yield _size(evaluate, name, document)
    for name, (expression, document, engines) in telling().items():
        outcome = evaluate(expression, document)
        seen = json.dumps(outcome.value) if outcome.error is None else f"failed: {outcome.error}"
        value = outcome.value if outcome.error is None else FAILED
        known = [engine for engine, written in engines.items() if written == value]
        told = f" (as {known[0]} does)" if known else f" (jsonata-js: {json.dumps(engines['jsonata-js'])})"
        yield Line("SEEN", name, seen + told)


_KEYS = {
    "whole-input key": (schema.KIND_WHOLE_INPUT, None, schema.KIND_WHOLE_INPUT, None, False),
    "key $.id, payload $.body": (schema.KIND_PATHS, ["$.id"], schema.KIND_PATHS, ["$.body"], True),
    "key $.id, JSONata payload": (schema.KIND_PATHS, ["$.id"], schema.KIND_JSONATA, "$states.input.body", True),
}


def _keys(evaluate: Evaluate, name: str, document: Any) -> Iterator[Line]:
    for case, (kind, expression, payload_kind, payload_expression, wrapped) in _KEYS.items():
        given = {"id": "probe-1", "body": document} if wrapped else document
        text = key_expressions.record_id_and_validation(
            NAMESPACE, kind, expression, "$states.input", payload_kind, payload_expression
        )
        try:
            payload = key_expressions.select_payload(given, payload_kind, payload_expression)
            expected: Any = {
                "id": canonical.idempotency_id(NAMESPACE, given, kind, expression),
                "validation": canonical.payload_validation(payload),
                "members": canonical.typed_members(canonical.payload_members(payload_kind, payload_expression, payload)),
            }
        except (canonical.KeyMissing, canonical.PayloadMissing) as error:
            expected = error
        yield _judged(f"{case} · {name}", evaluate(text, given), expected)


def _judged(case: str, outcome: Outcome, expected: Any) -> Line:
    if outcome.error is not None:
        if key_expressions.BEYOND_NATIVE in (outcome.cause or ""):
            return Line("PASS", case, "left to the key function, which computes Python's id")
        if isinstance(expected, Exception):
            return Line("PASS", case, f"refused ({outcome.error}), as Python refuses it")
        return Line("FAIL", case, f"the state failed with {outcome.error}: {(outcome.cause or '')[-300:]}")
    if outcome.value == expected:
        return Line("PASS", case, f"the id Python computes ({expected['id'][-12:]})")
    return Line("FAIL", case, f"expected {json.dumps(expected, default=str)}, got {json.dumps(outcome.value)}")


def _size(evaluate: Evaluate, name: str, document: Any) -> Line:
    case = f"payload size · {name}"
    outcome = evaluate(sizes.payload_bytes("$states.input"), document)
    exact = len(json.dumps(_shortest(document), separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogatepass"))
    if outcome.error is not None:
        return Line("FAIL", case, f"the state failed with {outcome.error}: {(outcome.cause or '')[-300:]}")
    if isinstance(outcome.value, int) and outcome.value >= exact:
        return Line("PASS", case, f"{outcome.value:,} bytes, at least the {exact:,} of its JSON")
    return Line("FAIL", case, f"{outcome.value!r} bytes, fewer than the {exact:,} of its JSON")


def _shortest(value: Any) -> Any:
    """``value`` with each whole double below 2^53 an integer: JSON at its shortest (``5`` for ``5.0``)."""
    if isinstance(value, dict):
        return {name: _shortest(item) for name, item in value.items()}
    if isinstance(value, list):
        return [_shortest(item) for item in value]
    if isinstance(value, float) and value.is_integer() and abs(value) < canonical.EXACT_LIMIT:
        return int(value)
    return value


def test_state(client: Any, role_arn: str | None = None) -> Evaluate:
    """An ``Evaluate`` that runs each case with Step Functions' TestState API (no state machine deployed)."""

    def evaluate(expression: str, document: Any) -> Outcome:
        request = {"definition": json.dumps(state(expression)), "input": json.dumps(document)}
        if role_arn:
            request["roleArn"] = role_arn
        response = client.test_state(**request)
        if response.get("status") == "SUCCEEDED":
            return Outcome(value=json.loads(response["output"]))
        return Outcome(error=response.get("error") or response.get("status"), cause=response.get("cause"))

    return evaluate
