"""A pytest plugin for tests on the local emulator: what a test's executions set off (the functions
their status-change events invoke) runs within the test's own call.

    # conftest.py
    pytest_plugins = ["idempotent_constructs.testing.pytest_plugin"]

Why within the call: pytest captures a test's output phase by phase (setup, call, teardown), and
between them writes its progress with ``sys.stdout`` the terminal's. A function that an execution's
end invokes runs on a thread of its own; one still running when the call ends writes its log line
into pytest's progress output, or into the next test's captured output, instead of the function's
own log. Settling in a fixture's teardown is too late: the call has ended by then.
"""

from __future__ import annotations

from collections.abc import Generator

import pytest

from . import LocalEmulator


@pytest.hookimpl(wrapper=True, trylast=True)  # the innermost wrapper: inside pytest's capture of the call
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    """After each test's call, wait until the events of the executions that ended have been handled
    (``LocalEmulator.settle``) in every emulator that runs."""
    try:
        return (yield)
    finally:
        for emulator in LocalEmulator.running():
            emulator.settle()
