"""The cross-check's bookkeeping (crosscheck/divergences.py, launcher.py, scenarios.Checks), without a
server: a known divergence is reported, never hidden, and never outlives the behaviour it names."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from crosscheck import divergences, launcher_path
from crosscheck.scenarios import Checks, ScenarioFailed

LAUNCHER = ast.parse(launcher_path().read_text())


def test_a_broken_promise_fails_the_scenario():
    with pytest.raises(ScenarioFailed, match="the output"):
        Checks().expect(False, "the output")


def test_a_check_a_known_divergence_stops_reports_the_divergence_and_the_scenario_goes_on():
    checks = Checks()
    checks.expect(False, "the error name", unless=divergences.D2)
    checks.expect(True, "the output")
    assert checks.diverged == [divergences.D2]


def test_a_divergence_that_no_longer_diverges_fails_the_scenario_so_the_list_never_goes_stale():
    with pytest.raises(ScenarioFailed, match="D2 no longer diverges"):
        Checks().expect(True, "the error name", unless=divergences.D2)


def test_each_correction_of_the_launcher_is_one_function_named_after_its_divergence():
    corrections = {
        function.name: ast.get_docstring(function).split(":")[0]
        for function in LAUNCHER.body
        if isinstance(function, ast.FunctionDef) and ast.get_docstring(function).startswith("D")
    }
    assert sorted(corrections.values()) == [d.id for d in divergences.ALL if d.corrected_by_launcher]
    called = {node.func.id for node in ast.walk(LAUNCHER) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}
    assert set(corrections) <= called


def test_the_launcher_imports_only_the_standard_library_and_ministack_as_it_runs_in_ministacks_environment():
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(LAUNCHER)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in (node.names if isinstance(node, ast.Import) else [ast.alias(node.module or "")])
    }
    assert imported - set(sys.stdlib_module_names) == {"ministack"}


def test_the_ministack_version_is_pinned_in_one_place():
    requirements = (Path(launcher_path()).parent / "requirements.txt").read_text()
    assert f"ministack=={divergences.MINISTACK_VERSION}\n" in requirements
