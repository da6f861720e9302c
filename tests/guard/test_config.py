"""idempotent_constructs/guard/config.py: options checked at synth time, and the poll schedule."""

from __future__ import annotations

import random

import pytest
from aws_cdk import aws_stepfunctions as sfn

from idempotent_constructs import (
    CompletedPolicy,
    FailurePolicy,
    IdempotencyConfigurationError,
    IdempotencyGuard,
    IdempotencyPayload,
    IdempotencyTable,
    ResultStorage,
)
from idempotent_constructs.guard import EVENTS_PER_POLL, MAX_POLLS, STATE_NAMES, poll_schedule, waiting_seconds
from tests.guard.build import guarded
from tests.synth import stack


@pytest.mark.parametrize(("interval", "max_wait"), [(1, 1), (1, 3), (1, 60), (1, 300), (5, 3600), (30, 30)])
def test_a_waiter_gives_up_by_max_wait_and_at_most_one_delay_before_it(interval, max_wait):
    schedule = poll_schedule(interval, max_wait)
    assert waiting_seconds(interval, schedule) == max(interval, schedule.deadline + schedule.max_delay) <= max_wait
    assert schedule.deadline >= max_wait - schedule.max_delay


def jittered_wait(interval: int, schedule, draw: random.Random) -> tuple[float, bool]:
    """Seconds one waiter waits as Step Functions runs its loop (each delay drawn up to its bound), and
    whether it gave up at the deadline rather than for want of attempts."""
    waited, bound = float(interval), interval
    for _ in range(schedule.attempts):
        if waited >= schedule.deadline:
            return waited, True
        waited += draw.uniform(0, bound)
        bound = min(bound * 2, schedule.max_delay)
    return waited, waited >= schedule.deadline


@pytest.mark.parametrize(("interval", "max_wait"), [(1, 3), (1, 60), (1, 300), (5, 3600), (1, 86400)])
def test_jittered_waiters_wait_at_most_max_wait_and_give_up_at_the_deadline_not_for_want_of_attempts(interval, max_wait):
    schedule, draw = poll_schedule(interval, max_wait), random.Random(7)
    waits = [jittered_wait(interval, schedule, draw) for _ in range(5_000)]
    assert all(at_deadline for _, at_deadline in waits)
    assert max(waited for waited, _ in waits) <= max_wait
    assert sum(waited for waited, _ in waits) / len(waits) >= max_wait - schedule.max_delay


@pytest.mark.parametrize("max_wait", [60, 3600, 86400, 365 * 86400])
def test_a_waiter_never_polls_more_than_max_polls_times_so_its_history_stays_small(max_wait):
    schedule = poll_schedule(1, max_wait)
    assert schedule.attempts <= MAX_POLLS
    assert schedule.attempts * EVENTS_PER_POLL < 25_000 / 10


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


@pytest.mark.parametrize("prefix", ['pay"', "pay\\"])
def test_fails_when_the_prefix_holds_what_the_outcome_metrics_filter_pattern_cannot(prefix):
    with pytest.raises(IdempotencyConfigurationError, match="holds a quote or a backslash"):
        guarded(state_name_prefix=prefix)


def test_fails_when_two_guards_would_share_state_names():
    target = stack()
    table = IdempotencyTable(target, "Table")
    first = IdempotencyGuard(target, "Same", table=table, body=sfn.Pass(target, "P1"))
    second = IdempotencyGuard(target, "Other", table=table, body=sfn.Pass(target, "P2"), state_name_prefix="Same.")
    with pytest.raises(Exception, match=r"Same\.Acquire"):
        sfn.StateMachine(target, "Machine", definition_body=sfn.DefinitionBody.from_chainable(first.next(second)))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"on_completed": "REJECT"}, r"on_completed: 'REJECT' \(a str\) is not a CompletedPolicy; pass CompletedPolicy.REJECT"),
        ({"on_failure": True}, r"on_failure: True \(a bool\) is not a FailurePolicy; pass one of FailurePolicy.RELEASE, "),
        ({"on_completed": CompletedPolicy.REJECT, "result_storage": ResultStorage.large()}, "never makes; drop result_storage"),
        ({"payload": IdempotencyPayload.from_paths("$[*].body")}, r"payload: unsupported JSONPath '\$\[\*\]\.body'"),
        ({"payload": IdempotencyPayload.from_jmespath("[0].body[")}, r"payload: '\[0\]\.body\[' is not a valid JMESPath"),
        (
            {"payload": IdempotencyPayload.from_jsonata("body")},
            r"payload: Step Functions would refuse the JSONata expression 'body'",
        ),
        ({"payload": IdempotencyPayload.from_paths()}, r"payload: IdempotencyPayload.from_paths\(\) needs at least one JSONPath"),
    ],
)
def test_fails_when_a_policy_is_not_one_or_cannot_serve(options, message):
    with pytest.raises(IdempotencyConfigurationError, match=message):
        guarded(**options)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"replay_marker": "idempotency"}, "not a top-level field path such as '\\$.idempotency'"),
        ({"replay_marker": "$.a.b"}, "not a top-level field path"),
        ({"replay_marker": "$.idempotency", "on_completed": CompletedPolicy.REJECT}, "nothing is replayed"),
    ],
)
def test_fails_when_the_replay_marker_is_no_field_or_nothing_is_replayed(options, message):
    with pytest.raises(IdempotencyConfigurationError, match=message):
        guarded(**options)


def known_non_object_bodies(s):
    yield sfn.Pass(s, "Listing", result=sfn.Result.from_array([1, 2]))
    yield sfn.Pass.jsonata(s, "Counting", outputs=3)
    yield sfn.Map(s, "EachItem", items_path="$.items").item_processor(sfn.Pass(s, "Item"))
    yield sfn.Parallel(s, "Both").branch(sfn.Pass(s, "Left")).branch(sfn.Pass(s, "Right"))


@pytest.mark.parametrize("index", range(4))
def test_a_replay_marker_is_refused_for_a_body_known_to_output_no_object(index):
    target = stack()
    body = list(known_non_object_bodies(target))[index]
    with pytest.raises(IdempotencyConfigurationError, match="whose output is not an object"):
        IdempotencyGuard(target, "G", table=IdempotencyTable(target, "Table"), body=body, replay_marker="$.idempotency")


def test_a_replay_marker_is_accepted_where_the_output_may_be_an_object():
    target = stack()
    body = sfn.Pass(target, "Tagging", result=sfn.Result.from_object({"a": 1})).next(
        sfn.Map(target, "Lines", items_path="$.lines", result_path="$.done").item_processor(sfn.Pass(target, "Line"))
    )
    IdempotencyGuard(target, "G", table=IdempotencyTable(target, "Table"), body=body, replay_marker="$.idempotency")


def test_fails_when_a_guard_of_your_own_keeps_its_key_for_a_redrive_without_the_owner_check():
    # Without it, a failed holder past its lease is taken over like a crashed one: nothing would be kept.
    with pytest.raises(IdempotencyConfigurationError, match="pass owner_state_machine_name="):
        guarded(on_failure=FailurePolicy.KEEP_FOR_REDRIVE)


def test_a_guard_of_your_own_that_keeps_its_key_for_a_redrive_runs_its_body_bare_and_leaves_its_failure_to_the_execution():
    states = guarded(on_failure=FailurePolicy.KEEP_FOR_REDRIVE, owner_state_machine_name="Orders")["States"]
    assert states["ChargeOnce.Acquire"]["Next"] == "Charge" and states["Charge"]["Next"] == "ChargeOnce.Complete"
    assert "Catch" not in states["Charge"]
    assert states["ChargeOnce.OwnerRunning"]["Choices"][0]["Next"] == "ChargeOnce.AwaitingRedrive"
