"""idempotent_constructs.jsonata_engine evaluates as jsonata-js 2.0.6 (the JSONata Step Functions runs)
does, also outside the emulator, where the CLI and IdempotencyKey compute JSONata keys."""

from __future__ import annotations

import pytest

from idempotent_constructs import jsonata_engine
from tests.conftest import ROOT
from tests.jsonata_js import evaluate as jsonata_js

EXPRESSIONS = [
    # `&` writes values as $string does: non-ASCII kept, numbers to 15 digits in JavaScript's form.
    ("'key-' & $v", {"city": "Zoë", "n": 0.30000000000000004, "big": 1e21}),
    ("$v & '|' & $v", 1e-7),
    # Strings compare by UTF-16 code units: U+1F600 is stored as D83D DE00, below U+FF01.
    ("['😀' < '！', '😀' > '！', 'a' <= 'b']", None),
    ("$sort(['！', '😀', 'a'])", None),
]


@pytest.mark.parametrize(("expression", "value"), EXPRESSIONS)
def test_the_engine_gives_what_jsonata_js_gives_without_the_emulator(node_bin, expression, value):
    assert jsonata_engine.evaluate(expression, {"v": value}) == jsonata_js(expression, {"v": value}, cwd=str(ROOT))
