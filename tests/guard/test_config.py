"""idempotent_constructs/guard/config.py: options checked at synth time, and the poll schedule."""

from __future__ import annotations

import pytest
from aws_cdk import aws_stepfunctions as sfn

from idempotent_constructs import FailurePolicy, IdempotencyConfigurationError, IdempotencyGuard, IdempotencyTable
from idempotent_constructs.guard import EVENTS_PER_POLL, MAX_POLLS, STATE_NAMES, poll_schedule
from tests.guard.build import guarded
from tests.synth import stack


@pytest.mark.parametrize(("interval", "max_wait"), [(1, 1), (1, 60), (1, 300), (5, 3600), (30, 30)])
def test_the_poll_schedule_adds_up_to_at_least_max_wait_and_no_more_than_one_delay_beyond(interval, max_wait):
    attempts, max_delay = poll_schedule(interval, max_wait)
    delays = [min(interval * 2**i, max_delay) for i in range(attempts)]
    assert interval + sum(delays) >= max_wait
    assert interval + sum(delays[:-1]) < max_wait or attempts == 0


@pytest.mark.parametrize("max_wait", [60, 3600, 86400, 365 * 86400])
def test_a_waiter_never_polls_more_than_max_polls_times_so_its_history_stays_small(max_wait):
    attempts, _ = poll_schedule(1, max_wait)
    assert attempts <= MAX_POLLS
    assert attempts * EVENTS_PER_POLL < 25_000 / 10


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"cache_errors": ["CardDeclined"]}, "on_failure is RELEASE"),
        ({"on_failure": FailurePolicy.CACHE, "cache_errors": []}, "must list error names"),
        ({"on_failure": FailurePolicy.CACHE, "cache_errors": ["States.Timeout"]}, "Idempotency.BodyFailed"),
    ],
)
def test_fails_when_cache_errors_do_not_fit_the_failure_policy(options, message):
    with pytest.raises(IdempotencyConfigurationError, match=message):
        guarded(**options)


def test_a_state_name_prefix_replaces_the_construct_id():
    assert "pay/Acquire" in guarded(state_name_prefix="pay/")["States"]


def test_fails_when_the_prefix_makes_the_longest_state_name_longer_than_80_characters():
    longest = max(STATE_NAMES, key=len)
    assert f"{'x' * (80 - len(longest))}{longest}" in guarded(state_name_prefix="x" * (80 - len(longest)))["States"]
    with pytest.raises(IdempotencyConfigurationError, match=f"{longest}' \\(81 characters\\) longer than Step Functions' 80"):
        guarded(state_name_prefix="x" * (81 - len(longest)))


def test_fails_when_two_guards_would_share_state_names():
    target = stack()
    table = IdempotencyTable(target, "Table")
    first = IdempotencyGuard(target, "Same", table=table, body=sfn.Pass(target, "P1"))
    second = IdempotencyGuard(target, "Other", table=table, body=sfn.Pass(target, "P2"), state_name_prefix="Same.")
    with pytest.raises(Exception, match=r"Same\.Acquire"):
        sfn.StateMachine(target, "Machine", definition_body=sfn.DefinitionBody.from_chainable(first.next(second)))
