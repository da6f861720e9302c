"""`idempotent-constructs probe`: its report and exit status, with TestState stood in for by the library's
engine (the emulator runs the whole probe through real executions: tests/emulator/cli/test_probe.py)."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from click.testing import CliRunner

from idempotent_constructs._jsonata import engine
from idempotent_constructs.cli import cli


class FakeStepFunctions:
    """A Step Functions client whose TestState runs the one JSONata Pass state with the emulator's engine;
    ``lie`` makes it answer every record id wrong, as an engine computing other ids would."""

    def __init__(self, lie: bool = False) -> None:
        self.lie = lie
        self.requests: list[dict[str, Any]] = []

    def test_state(self, **request: Any) -> dict[str, Any]:
        self.requests.append(request)
        state = json.loads(request["definition"])
        expression = state["Output"][2:-2].strip()
        try:
            value = engine.evaluate(expression, {"states": {"input": json.loads(request["input"])}}, bounds=engine.AWS_BOUNDS)
        except engine.JSONataError as error:
            return {"status": "FAILED", "error": "States.QueryEvaluationError", "cause": str(error)}
        if self.lie and isinstance(value, dict) and "id" in value:
            value = {**value, "id": value["id"][:-1] + "0"}
        return {"status": "SUCCEEDED", "output": json.dumps(value)}


@pytest.fixture
def test_state(monkeypatch: pytest.MonkeyPatch):
    def install(client: FakeStepFunctions) -> FakeStepFunctions:
        class Session:
            def __init__(self, profile_name: Any = None, region_name: Any = None) -> None:
                pass

            def client(self, service: str) -> FakeStepFunctions:
                assert service == "stepfunctions"
                return client

        monkeypatch.setattr(boto3, "Session", Session)
        return client

    return install


def test_every_case_passes_where_the_engine_computes_pythons_ids(test_state):
    client = test_state(FakeStepFunctions())
    result = CliRunner().invoke(cli, ["probe", "--region", "eu-west-1"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[-1] == f"{len(lines) - 6} passed, 0 failed"
    assert "PASS  whole-input key · a 3,000-character text: the id Python computes" in result.output
    assert "PASS  whole-input key · an integer of 2^53 or more: left to the key function, which computes Python's id" in lines
    assert 'SEEN  $string(1234567890123456): "1234567890123456" (as a JVM engine does)' in lines
    # One Pass state a case, no role unless given: nothing is deployed, nothing written.
    assert {json.loads(request["definition"])["Type"] for request in client.requests} == {"Pass"}
    assert all("roleArn" not in request for request in client.requests)


def test_a_case_whose_id_differs_fails_and_the_command_exits_with_status_1(test_state):
    client = test_state(FakeStepFunctions(lie=True))
    result = CliRunner().invoke(cli, ["probe", "--role-arn", "arn:aws:iam::123456789012:role/probe"])
    assert result.exit_code == 1
    assert "FAIL  whole-input key · a small order: expected " in result.output
    assert {request["roleArn"] for request in client.requests} == {"arn:aws:iam::123456789012:role/probe"}
