"""testing.pytest_plugin: a function that an execution's end invokes, still running when its test's
call ends, writes into its own log, not into the next test's output (nor pytest's progress output).

An inner pytest session, run in a subprocess with and without the plugin: its first test runs an
execution whose end invokes a function, and ends once the function runs; the function writes a line
once the second test has begun (a file it waits for, up to 3 s), so without the plugin the line deterministically lands in the second test's
output, and with it in the function's log."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

CONFTEST = """
import pytest
from idempotent_constructs.testing import LocalEmulator
{plugin}

@pytest.fixture(scope="session")
def emulator():
    with LocalEmulator() as running:
        yield running
"""

FUNCTION = """
import pathlib, time

def handler(event, context):
    pathlib.Path({gate!r} + ".started").touch()
    deadline = time.monotonic() + 3
    while not pathlib.Path({gate!r}).exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    print("FUNCTION-LINE", event["detail"]["name"])
    return {{}}
"""

TESTS = """
import io, json, pathlib, time, zipfile

GATE = pathlib.Path({gate!r})

def test_an_execution_ends_and_sets_off_a_slow_function(emulator):
    code = io.BytesIO()
    with zipfile.ZipFile(code, "w") as archive:
        archive.writestr("index.py", {function!r})
    iam, functions, events = emulator.client("iam"), emulator.client("lambda"), emulator.client("events")
    role = iam.create_role(RoleName="writer", AssumeRolePolicyDocument="{{}}")["Role"]["Arn"]
    arn = functions.create_function(
        FunctionName="writer", Runtime="python3.12", Role=role, Handler="index.handler", Code={{"ZipFile": code.getvalue()}}
    )["FunctionArn"]
    events.put_rule(Name="ends", EventPattern=json.dumps({{"source": ["aws.states"]}}))
    events.put_targets(Rule="ends", Targets=[{{"Id": "writer", "Arn": arn}}])
    ended = emulator.run_definition({{"StartAt": "Done", "States": {{"Done": {{"Type": "Pass", "End": True}}}}}}, {{}})
    assert ended.status == "SUCCEEDED"
    started, deadline = pathlib.Path(str(GATE) + ".started"), time.monotonic() + 60
    while not started.exists() and time.monotonic() < deadline:  # the function runs before this test ends
        time.sleep(0.05)

def test_the_next_test_hears_nothing_of_it(emulator, capsys):
    GATE.touch()
    time.sleep(0.5)
    assert "FUNCTION-LINE" not in capsys.readouterr().out
    assert any("FUNCTION-LINE" in line for line in emulator.lambdas.logs["writer"])
"""


def inner_session(directory: Path, *, plugin: bool) -> subprocess.CompletedProcess[str]:
    gate = str(directory / "gate")
    plugins = 'pytest_plugins = ["idempotent_constructs.testing.pytest_plugin"]' if plugin else ""
    (directory / "conftest.py").write_text(CONFTEST.format(plugin=plugins))
    (directory / "test_inner.py").write_text(TESTS.format(gate=gate, function=FUNCTION.format(gate=gate)))
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--rootdir", str(directory), str(directory)],
        cwd=directory,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.parametrize("plugin", [True, False], ids=["with the plugin", "without it"])
def test_a_function_still_running_when_its_test_ends_writes_into_its_own_log_only_with_the_plugin(tmp_path, plugin):
    result = inner_session(tmp_path, plugin=plugin)
    if plugin:
        assert result.returncode == 0, result.stdout + result.stderr
        assert "FUNCTION-LINE" not in result.stdout + result.stderr
    else:  # what the plugin prevents: the line in the next test's output, and not in the function's log
        assert "1 failed, 1 passed" in result.stdout, result.stdout + result.stderr
        assert "test_the_next_test_hears_nothing_of_it - AssertionError" in result.stdout
        assert "FUNCTION-LINE definition-" in result.stdout  # the line, in the second test's captured output
