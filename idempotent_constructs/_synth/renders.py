"""A clock of renders: each state of the library's whose graph tells a guard where its runs are (a guard's
writes, a document's Parallel) notes when it was rendered (``tick``), so that what is seen of a guard's place at
synth (``guard.placement``) is looked at again only where something was rendered since it was last looked at.

And the texts a definition settles as it is rendered as text (``settled``): a guard's placement tokens, each by
its token's text (``guard.placement``). The CDK resolves them where it writes the definition as an object; a
definition the library writes as text itself (shared or in an asset: ``definition.render``) must hold no token
for a state's name, or its two states named alike (an entry and its twin) would both be written.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

_TOKEN = re.compile(r"\$\{Token\[[^\]]*\]\}")  # a string token's text, as the CDK encodes one
# The placement tokens' texts, each with what settles it (its text once the definition is rendered).
SETTLED: dict[str, Callable[[], str]] = {}

_clock = [0]


def tick() -> int:
    """The time of a render that happens now."""
    _clock[0] += 1
    return _clock[0]


def now() -> int:
    """The time of the last render."""
    return _clock[0]


def settled(value: Any) -> Any:
    """``value`` (a rendered definition) with every placement token settled: in keys and in texts. Where two keys
    come to one name, the later state's value is kept at the earlier one's place (as the CDK resolves an object)."""
    if isinstance(value, str):
        return (
            _TOKEN.sub(lambda found: SETTLED[found[0]]() if found[0] in SETTLED else found[0], value)
            if "${Token[" in value
            else value
        )
    if isinstance(value, list):
        return [settled(item) for item in value]
    if isinstance(value, dict):
        found: dict[str, Any] = {}
        for key, item in value.items():
            found[settled(key)] = settled(item)
        return found
    return value
