"""Step Functions' own JSONata functions (``$hash``, ``$uuid``, ``$parse``, ``$partition``, ``$range``,
``$random``), and those whose semantics it changes (``$string`` writes numbers as AWS does, ``$sort`` orders
strings by UTF-16 code units, ``$eval`` is not available): ``FUNCTIONS``, which ``engine`` registers."""

from __future__ import annotations

import hashlib
import json
import math
import random
import uuid
from collections.abc import Callable
from typing import Any

from jsonata import functions as jsonata_functions
from jsonata import utils as jsonata_utils

from .bounds import JSONataError
from .js_forms import js_stringify, utf16

_HASHES = {"MD5": "md5", "SHA-1": "sha1", "SHA-256": "sha256", "SHA-384": "sha384", "SHA-512": "sha512"}


def string(value: Any = None, prettify: Any = None) -> Any:
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
        return sorted(items, key=utf16)
    return jsonata_functions.Functions.sort(items, comparator)


def _eval(*_: Any) -> Any:
    raise JSONataError("$eval is not available in Step Functions: use $parse")


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "hash": _hash,
    "uuid": _uuid,
    "parse": _parse,
    "partition": _partition,
    "range": _range,
    "random": _random,
    "string": string,
    "sort": _sort,
    "eval": _eval,
}
