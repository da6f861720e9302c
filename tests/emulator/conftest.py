"""One emulator and one deployment of the behaviour stack for the whole emulator suite."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from idempotent_constructs.testing import Deployment, LocalEmulator

# What a test's executions set off (the release function, on their status-change events) runs within
# the test's call, where pytest captures its output (a hook of this directory's tests only).
from idempotent_constructs.testing.pytest_plugin import pytest_runtest_call  # noqa: F401


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/emulator/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.emulator)


@pytest.fixture(scope="session")
def emulator(node_bin: Path) -> Iterator[LocalEmulator]:
    with LocalEmulator() as running:
        yield running


@pytest.fixture(scope="session")
def behaviour(emulator: LocalEmulator, test_stack: Callable[[str], Any]) -> Deployment:
    return emulator.deploy_stack(test_stack("Behaviour"))


@pytest.fixture(scope="session")
def recipes(emulator: LocalEmulator, tmp_path_factory: pytest.TempPathFactory) -> Deployment:
    """tests/recipes.py's SourcesStack: a workflow per event source's recipe, and the batches (once a session)."""
    from aws_cdk import App

    from tests.recipes import SourcesStack

    app = App(outdir=str(tmp_path_factory.mktemp("sources-assembly")))
    return emulator.deploy_stack(SourcesStack(app, "Sources"))


@pytest.fixture(scope="session")
def composition(emulator: LocalEmulator, test_stack: Callable[[str], Any]) -> Deployment:
    return emulator.deploy_stack(test_stack("Composition"))


@pytest.fixture(scope="session")
def documents(emulator: LocalEmulator, test_stack: Callable[[str], Any]) -> Deployment:
    return emulator.deploy_stack(test_stack("Documents"))


@pytest.fixture(scope="session")
def control(emulator: LocalEmulator, test_stack: Callable[[str], Any]) -> Deployment:
    return emulator.deploy_stack(test_stack("Control"))


@pytest.fixture(scope="session")
def races(emulator: LocalEmulator, test_stack: Callable[[str], Any]) -> Deployment:
    return emulator.deploy_stack(test_stack("Races"))


@pytest.fixture(scope="session")
def lost_replies(emulator: LocalEmulator, test_stack: Callable[[str], Any]) -> Deployment:
    return emulator.deploy_stack(test_stack("LostReplies"))


@pytest.fixture
def scratch_table(emulator: LocalEmulator) -> Iterator[str]:
    """An empty table of the idempotency schema that only this test uses (its name)."""
    client, name = emulator.client("dynamodb"), f"scratch-{uuid.uuid4().hex[:12]}"
    client.create_table(
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
    )
    yield name
    client.delete_table(TableName=name)


@pytest.fixture
def unique() -> str:
    """A value no other test uses, to keep each test's keys apart."""
    return uuid.uuid4().hex[:12]
