"""explore/mutations.py: each mistake planted in a generated definition (a fence dropped, the route loosened)
is caught: the explorer reports the promise it breaks, with a short trace that says what happened."""

from __future__ import annotations

import pytest

from explore.mutations import MUTATIONS, named
from explore.search import explore
from tests.explore.search import configuration


@pytest.mark.parametrize("mutation", MUTATIONS, ids=lambda mutation: mutation.name)
def test_each_planted_mistake_breaks_a_promise_with_a_short_trace(mutation):
    report = explore(mutation.apply(configuration(mutation.configuration)), mutation.bounds, limit=500_000)
    found = report.counterexample
    assert found is not None and found.promise is not None, f"{mutation.name} was not caught: {report.summary()}"
    assert found.promise.name == mutation.breaks, str(found)
    assert 2 <= len(found.trace) <= 15 and found.trace[0].startswith("start: ")


def test_the_takeover_as_it_was_before_issue_51_lets_a_holder_extend_between_the_read_and_the_takeover():
    mutation = named("takeover-without-lease")
    found = explore(mutation.apply(configuration(mutation.configuration)), mutation.bounds).counterexample
    assert found is not None
    read = next(n for n, line in enumerate(found.trace) if "e2 Once.Inspect: getItem read INPROGRESS by e1" in line)
    extended = next(n for n, line in enumerate(found.trace) if line.startswith("e1 Once.Extend: updateItem took effect"))
    taken = next(n for n, line in enumerate(found.trace) if line.startswith("e2 Once.Takeover: updateItem took effect"))
    assert read < extended < taken == len(found.trace) - 1


def test_a_mutation_whose_text_is_gone_refuses_rather_than_pass_as_caught():
    mutation = named("complete-unfenced")
    gone = mutation.apply(configuration(mutation.configuration))
    with pytest.raises(ValueError, match="is not in"):
        mutation.apply(gone)
