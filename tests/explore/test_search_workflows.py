"""explore/search.py on whole workflows (``IdempotentStateMachine``): every interleaving within CI's bounds
keeps every promise (explore/invariants.py), and the exemptions the contract names are seen."""

from __future__ import annotations

import pytest

from tests.explore.search import explored, holds, suites

WORKFLOWS = ("workflow-standard", "workflow-express", "workflow-extended", "workflow-released-when-failed")


@pytest.mark.parametrize(("name", "suite"), suites(*WORKFLOWS))
def test_every_interleaving_of_a_whole_workflow_within_the_bounds_keeps_every_promise(name, suite):
    holds(name, suite)


def test_an_express_holder_running_past_its_lease_is_taken_over_and_a_standard_one_never_is():
    assert "lapsed_holder_taken_over" in explored("workflow-express", "clock").exemptions
    assert "lapsed_holder_taken_over" not in explored("workflow-standard", "clock").exemptions


def test_a_crashed_standard_holder_is_taken_over_and_its_redrive_resumes_without_its_key():
    seen = explored("workflow-standard", "recovery").exemptions
    assert {"ended_holder_taken_over", "redrive_resumes_without_its_key"} <= set(seen)
    assert any(" crashes (aborted)" in line for line in seen["ended_holder_taken_over"])
