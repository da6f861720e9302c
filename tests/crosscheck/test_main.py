"""crosscheck/__main__.py without a server: every scenario runs and is printed with its outcome, and
the last lines name each scenario that failed, however it failed."""

from __future__ import annotations

from crosscheck.__main__ import Tally, run_scenarios
from crosscheck.divergences import D2
from crosscheck.scenarios import Checks, ScenarioFailed


def passes(stacks, checks: Checks) -> None:
    checks.expect(True, "the output")


def diverges(stacks, checks: Checks) -> None:
    checks.expect(False, "the error name", unless=D2)


def breaks_a_promise(stacks, checks: Checks) -> None:
    raise ScenarioFailed("record r1 still INPROGRESS after 30 s")


def breaks(stacks, checks: Checks) -> None:
    raise KeyError("Item")


def test_the_summary_names_each_scenario_that_failed_after_running_them_all(capsys):
    tally = Tally()
    scenarios = [("replay", passes), ("missing key", diverges), ("crashed holder", breaks_a_promise), ("expiry", breaks)]
    run_scenarios(None, scenarios, tally)  # these scenarios read no stacks
    printed = capsys.readouterr().out
    assert "crashed holder\n  FAILED   record r1 still INPROGRESS after 30 s" in printed
    assert "expiry\n  FAILED   KeyError: 'Item' (test_main.py:" in printed
    assert (tally.passed, tally.diverged) == (1, 1)
    assert tally.summary() == "1 passed, 2 failed\n  failed: crashed holder\n  failed: expiry"


def test_a_run_without_failures_says_so_in_one_line():
    assert Tally(passed=14, diverged=3).summary() == "14 passed, 0 failed"
