"""Which bounds each configuration is explored within: the suites CI runs (``./dev test --all``), and the
deeper ones of ``./dev explore``.

A suite is a bound on one axis of the world, the others kept small, because the state space is the product
of them all: ``clock`` (the clock ticks three times, one execution's clock a second ahead), ``faults`` (a call
fails before its effect, or its reply is lost, while the clock ticks), ``recovery`` (a crash, a redrive, a
status-change event delivered twice, an Express execution's restart) and ``three`` (three executions of one key). A guard in an inline Map
runs as one execution's two iterations.
"""

from __future__ import annotations

import dataclasses
from functools import cache

from .configurations import Configuration, synthesize
from .mutations import named
from .search import Report, explore
from .transitions import Bounds

CI: dict[str, Bounds] = {
    "clock": Bounds(faults=0, crashes=0, redrives=0, duplicates=0, ticks=3),
    "faults": Bounds(faults=1, crashes=0, redrives=0, duplicates=0, ticks=1),
    "recovery": Bounds(faults=0, crashes=1, redrives=1, duplicates=1, ticks=1, restarts=1),
}
# Three executions in CI, for the two configurations whose races differ most: a whole workflow with the owner
# check, and a guard of your own without it.
THREE: dict[str, Bounds] = {
    "workflow-standard": Bounds(executions=3, faults=0, crashes=0, redrives=0, duplicates=0, ticks=2),
    "guard": Bounds(executions=3, faults=0, crashes=0, redrives=0, duplicates=0, ticks=1),
}
DEEP: dict[str, Bounds] = {
    "clock": Bounds(faults=0, crashes=0, redrives=0, duplicates=0, ticks=4),
    "faults": Bounds(faults=2, crashes=0, redrives=0, duplicates=0, ticks=2),
    "recovery": Bounds(faults=1, crashes=1, redrives=1, duplicates=1, ticks=1, restarts=1),
    "three": Bounds(executions=3, faults=0, crashes=0, redrives=0, duplicates=0, ticks=2),
}


def fitted(configuration: Configuration, bounds: Bounds) -> Bounds:
    """``bounds`` for ``configuration``: one execution where its runs are an execution's iterations."""
    if configuration.runs_per_execution > 1:
        return dataclasses.replace(bounds, executions=1)
    return bounds


# The policies' own paths (a cached failure, a rejection, failing fast, the result function, expiry) meet a
# crash and a redrive as the plain guard does: CI leaves their recovery to ./dev explore.
POLICIES = ("guard-cached", "guard-rejecting", "guard-failing-fast", "guard-large-result", "guard-expiring")


def ci(name: str) -> dict[str, Bounds]:
    """The suites CI explores the configuration ``name`` within."""
    suites = {suite: bounds for suite, bounds in CI.items() if not (suite == "recovery" and name in POLICIES)}
    return {**suites, **({"three": THREE[name]} if name in THREE else {})}


@cache
def configuration(name: str) -> Configuration:
    """The configuration ``name``, synthesized once a process."""
    return synthesize(name)


def run(name: str, suite: str, bounds: Bounds, mutation: str | None = None, limit: int | None = None) -> tuple[str, Report]:
    """``(suite, report)`` of one run: ``name`` (with the planted ``mutation``, if any) explored within ``bounds``
    (fitted to it). A function of a module, not of ``__main__``, so that ``./dev explore``'s processes find it."""
    found = configuration(name)
    if mutation is not None:
        found = named(mutation).apply(found)
    return suite, explore(found, fitted(found, bounds), limit=limit)
