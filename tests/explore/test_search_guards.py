"""explore/search.py on guards of your own (``IdempotencyGuard``): every interleaving within CI's bounds keeps
every promise, the guard's states are all entered, and the exemptions the contract names are seen."""

from __future__ import annotations

import pytest

from tests.explore.search import explored, holds, suites

GUARDS = (
    "guard",
    "guard-owner-check",
    "guard-kept-for-redrive",
    "guard-express",
    "guard-bare",
    "guard-once-per-execution",
)


@pytest.mark.parametrize(("name", "suite"), suites(*GUARDS))
def test_every_interleaving_of_a_guard_of_your_own_within_the_bounds_keeps_every_promise(name, suite):
    holds(name, suite)


def test_the_clock_and_a_fault_take_the_guard_through_every_state_but_those_no_run_of_one_payload_needs():
    entered_never = set(explored("guard", "clock").unentered) & set(explored("guard", "faults").unentered)
    # The explorer's input holds its key within the native bounds (no key function), one payload (no mismatch);
    # its result is small (no result function: guard-large-result's, nor its ResultMissing), and no record is
    # another's (Unreadable).
    # (AcquireComputed is entered: the key is free again when a failed body released it after the read.)
    assert entered_never == {
        "Once.ComputeKey",
        "Once.KeyMissing",
        "Once.PayloadMismatch",
        "Once.StoreResult",
        "Once.Restore",
        "Once.ResultMissing",
        "Once.Unreadable",
    }


def test_without_the_owner_check_a_holder_past_its_lease_is_taken_over_and_with_it_never():
    assert "lapsed_holder_taken_over" in explored("guard", "clock").exemptions
    assert "lapsed_holder_taken_over" not in explored("guard-owner-check", "clock").exemptions


def test_a_side_effect_that_fails_releases_the_key_and_the_next_run_runs_the_body_again():
    report = explored("guard-bare", "faults")
    assert "Once.Release" not in report.unentered and "failed_body_runs_again" in report.exemptions


def test_a_guard_of_your_own_that_keeps_its_key_for_a_redrive_leaves_a_failed_holder_its_key_until_its_redrive():
    report = explored("guard-kept-for-redrive", "recovery")
    assert not {"ended_holder_taken_over", "redrive_resumes_without_its_key"} & set(report.exemptions)
    assert "Once.AwaitingRedrive" not in report.unentered
