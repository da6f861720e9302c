"""explore/search.py on the options that change the protocol: a guard in an inline Map, each failure, completed
and in-flight policy, results kept by the result function, and records that expire: every interleaving within
CI's bounds keeps every promise."""

from __future__ import annotations

import pytest

from tests.explore.search import explored, holds, suites

POLICIES = (
    "guard-in-inline-map",
    "guard-in-inline-map-owner-check",
    "guard-cached",
    "guard-rejecting",
    "guard-failing-fast",
    "guard-large-result",
    "guard-expiring",
)


@pytest.mark.parametrize(("name", "suite"), suites(*POLICIES))
def test_every_interleaving_of_each_policy_within_the_bounds_keeps_every_promise(name, suite):
    holds(name, suite)


def test_a_large_result_is_stored_and_replayed_through_the_result_function():
    unentered = explored("guard-large-result", "clock").unentered
    assert "Once.StoreResult" not in unentered and "Once.Restore" not in unentered


def test_an_expired_record_runs_again_and_its_ttl_deletion_is_explored():
    assert "expired_record_runs_again" in explored("guard-expiring", "clock").exemptions


def test_with_the_owner_check_a_sibling_iteration_past_its_lease_is_taken_over_as_without_it():
    assert "same_execution_holder_taken_over" in explored("guard-in-inline-map-owner-check", "clock").exemptions
