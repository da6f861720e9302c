"""What the bounded-run tests share: each configuration explored within each of CI's suites (explore/plans.py)."""

from __future__ import annotations

from functools import cache

from explore import plans
from explore.configurations import Configuration, synthesize
from explore.search import Report, explore


@cache
def configuration(name: str) -> Configuration:
    return synthesize(name)


@cache
def explored(name: str, suite: str) -> Report:
    """``name`` explored within CI's ``suite``, once a test process; its counterexample, if any, is the
    assertion's message."""
    found = configuration(name)
    return explore(found, plans.fitted(found, plans.ci(name)[suite]), limit=2_000_000)


def holds(name: str, suite: str) -> None:
    """Every interleaving of ``name`` within CI's ``suite`` keeps every promise, over a search that went deep."""
    report = explored(name, suite)
    assert report.holds, str(report.counterexample)
    assert report.states > 100 and report.depth > 10


def suites(*names: str) -> list[tuple[str, str]]:
    return [(name, suite) for name in names for suite in plans.ci(name)]
