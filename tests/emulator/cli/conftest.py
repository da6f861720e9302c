"""Fixtures shared by the command-line tool's emulator tests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, cast

import pytest

from idempotent_constructs.testing import LocalEmulator
from tests.emulator.cli.helpers import Item


class Scratch(Protocol):
    """Puts records into the test's own table and returns its name."""

    name: str
    ids: Callable[[], list[str]]

    def __call__(self, *items: Item) -> str: ...


@pytest.fixture
def scratch(emulator: LocalEmulator, scratch_table: str) -> Scratch:
    """An empty table of the idempotency schema that only this test uses, and a function to fill it."""
    client, name = emulator.client("dynamodb"), scratch_table

    def put(*items: Item) -> str:
        for attributes in items:
            client.put_item(TableName=name, Item=attributes)
        return name

    scratch = cast(Scratch, put)
    scratch.name = name
    scratch.ids = lambda: sorted(entry["id"]["S"] for entry in client.scan(TableName=name)["Items"])
    return scratch
