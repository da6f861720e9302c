"""docs/explanation/contract.md: the behaviour contract, B1 to B24, each item with the library modules
that keep it and the tests that prove it, every one of which exists; and the code cites the contract,
never a document outside the repository."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONTRACT = ROOT / "docs" / "explanation" / "contract.md"
ITEMS = [f"B{n}" for n in range(1, 25)]
CODE = re.compile(r"`([^`]+)`")


def sections() -> list[tuple[str, str]]:
    """(item, text) of each ``## B<n> <Name>`` section, its text up to the next heading."""
    parts = re.split(r"^## ", CONTRACT.read_text(), flags=re.MULTILINE)[1:]
    return [(match.group(1), part) for part in parts if (match := re.match(r"(B\d+) \S", part))]


def kept_by(text: str) -> list[str]:
    return CODE.findall(text.partition("**Kept by:**")[2].partition("**Proved by:**")[0])


def proved_by(text: str) -> list[str]:
    return CODE.findall(text.partition("**Proved by:**")[2])


def test_each_item_from_b1_to_b24_has_exactly_one_section():
    assert [item for item, _ in sections()] == ITEMS


def test_each_item_names_a_module_that_keeps_it_and_a_test_that_proves_it():
    for item, text in sections():
        modules, tests = kept_by(text), proved_by(text)
        assert modules and all(re.fullmatch(r"idempotent_constructs/[\w/]+\.py", module) for module in modules), item
        assert tests and all(re.fullmatch(r"tests/[\w/]+\.py::test_\w+", test) for test in tests), item


def test_every_module_and_test_file_named_exists():
    named = {path.partition("::")[0] for _, text in sections() for path in kept_by(text) + proved_by(text)}
    assert sorted(path for path in named if not (ROOT / path).is_file()) == []


def test_every_test_named_is_a_function_of_its_file():
    missing = []
    for item, text in sections():
        for test in proved_by(text):
            path, _, name = test.partition("::")
            if (ROOT / path).is_file() and not re.search(rf"\bdef {name}\(", (ROOT / path).read_text()):
                missing.append(f"{item}: {test}")
    assert missing == []


def test_the_code_cites_no_document_outside_the_repository():
    folders = ("idempotent_constructs", "tests", "bench", "crosscheck", "example")
    files = [ROOT / "app.py", *(path for folder in folders for path in (ROOT / folder).rglob("*.py"))]
    outside = re.compile(r"\bDESIGN\b")
    this = Path(__file__).resolve()
    assert [str(path.relative_to(ROOT)) for path in files if path != this and outside.search(path.read_text())] == []
