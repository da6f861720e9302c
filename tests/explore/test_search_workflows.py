"""explore/search.py on whole workflows (``IdempotentStateMachine``): every interleaving within CI's bounds
keeps every promise (explore/invariants.py), and the exemptions the contract names are seen."""

from __future__ import annotations

import pytest

from tests.explore.search import explored, holds, suites

WORKFLOWS = (
    "workflow-standard",
    "workflow-express",
    "workflow-extended",
    "workflow-released-when-failed",
    "workflow-kept-for-redrive",
)


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


def test_a_failed_holder_that_keeps_its_key_for_a_redrive_is_never_taken_over_and_resumes_with_its_key():
    # A crashed or failed holder, past its lease: the owner check finds it redrivable, and the duplicate fails
    # Idempotency.AwaitingRedrive rather than take its key; a redrive then resumes the body with the key its own.
    report = explored("workflow-kept-for-redrive", "recovery")
    assert not {"ended_holder_taken_over", "redrive_resumes_without_its_key"} & set(report.exemptions)
    assert "Idempotency.AwaitingRedrive" not in report.unentered
