"""idempotent_constructs/guard: the generated states of IdempotencyGuard."""

from __future__ import annotations

import pytest
from aws_cdk import Duration
from aws_cdk import aws_stepfunctions as sfn

from idempotent_constructs import (
    FailurePolicy,
    IdempotencyConfigurationError,
    IdempotencyGuard,
    IdempotencyKey,
    IdempotencyTable,
    InFlightPolicy,
)
from idempotent_constructs.guard import EVENTS_PER_POLL, MAX_POLLS, STATE_NAMES, poll_schedule
from tests.synth import only_definition, resources, stack, template


def guarded(**options):
    def build(s):
        guard = IdempotencyGuard(
            s, "ChargeOnce", table=IdempotencyTable(s, "Table"), body=sfn.Pass(s, "Charge"), **options
        )
        sfn.StateMachine(s, "Machine", definition_body=sfn.DefinitionBody.from_chainable(guard))

    return only_definition(template(build))


def test_by_default_the_guard_acquires_the_key_natively_runs_the_body_and_completes():
    definition = guarded()
    states = definition["States"]
    assert definition["StartAt"] == "ChargeOnce.Acquire"
    assert all(name.startswith("ChargeOnce.") for name in states if name != "Charge")
    acquire = states["ChargeOnce.Acquire"]
    assert (acquire["QueryLanguage"], acquire["Output"], acquire["Next"]) == ("JSONata", "{% $states.input %}", "ChargeOnce.Body")
    assert "'Test/ChargeOnce#' & $digest(" in acquire["Arguments"]  # the namespace prefixes the id
    assert "$now + 900000" in acquire["Arguments"]  # the lease
    assert "$floor($millis() / 1000) + 86400" in states["ChargeOnce.Complete"]["Arguments"]  # kept a day from completion
    body = states["ChargeOnce.Body"]
    assert body["Type"] == "Parallel" and body["Branches"][0]["StartAt"] == "Charge"
    assert not {"QueryLanguage", "InputPath", "ResultPath", "Output", "Arguments"} & set(body)  # fits either language
    assert states["ChargeOnce.Complete"]["Output"] == "{% $states.input[0] %}"
    assert states["ChargeOnce.Replay"]["Output"].startswith("{% $parse(")
    assert "ChargeOnce.Release" in states and "ChargeOnce.RecordFailure" not in states
    assert not any(state.get("Resource", "").startswith("arn:aws:states:::lambda") for state in states.values())


def condition_of(state):
    """The ConditionExpression of a generated DynamoDB request (built by one JSONata expression)."""
    return state["Arguments"].split("'ConditionExpression': '")[1].split("'")[0]


def test_every_write_after_acquire_is_fenced_on_the_owner():
    states = guarded(on_failure=FailurePolicy.CACHE)["States"]
    for name in ("Complete", "RecordFailure"):
        assert condition_of(states[f"ChargeOnce.{name}"]) == "attribute_not_exists(#id) OR #owner = :owner"
        assert states[f"ChargeOnce.{name}"]["Catch"][0]["ErrorEquals"] == ["DynamoDB.ConditionalCheckFailedException"]
    assert condition_of(states["ChargeOnce.Takeover"]) == "#owner = :previous AND #status = :previous_status"
    assert condition_of(guarded()["States"]["ChargeOnce.Release"]) == "#owner = :owner"


def test_transient_dynamodb_and_lambda_errors_are_retried_with_backoff():
    states = guarded()["States"]
    states.update(states["ChargeOnce.Await"]["Branches"][0]["States"])
    for name in ("Acquire", "Inspect", "Complete", "Release", "Takeover", "Poll"):
        retry = states[f"ChargeOnce.{name}"]["Retry"][0]
        assert "DynamoDB.ThrottlingException" in retry["ErrorEquals"]
        assert "DynamoDB.ConditionalCheckFailedException" not in retry["ErrorEquals"]
        assert retry["BackoffRate"] == 2
    for name in ("StoreResult", "Restore"):
        lambda_errors = {e for r in states[f"ChargeOnce.{name}"]["Retry"] for e in r["ErrorEquals"]}
        assert {"Lambda.ServiceException", "Lambda.TooManyRequestsException"} <= lambda_errors


def test_waiting_polls_with_backoff_bounded_by_max_wait():
    states = guarded(poll_interval=Duration.seconds(2), max_wait=Duration.minutes(10))["States"]
    (retry,) = states["ChargeOnce.Await"]["Retry"]
    attempts, max_delay = poll_schedule(2, 600)
    assert retry == {
        "ErrorEquals": ["Idempotency.StillInFlight"],
        "IntervalSeconds": 2,
        "BackoffRate": 2,
        "MaxAttempts": attempts,
        "MaxDelaySeconds": max_delay,
    }
    assert states["ChargeOnce.Await"]["Catch"][0]["Next"] == "ChargeOnce.InFlight"


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


def test_with_the_fail_policy_there_is_no_poll_loop():
    states = guarded(on_in_flight=InFlightPolicy.FAIL)["States"]
    assert "ChargeOnce.Await" not in states
    held = [choice for choice in states["ChargeOnce.Route"]["Choices"] if choice["Next"] == "ChargeOnce.InFlight"]
    assert len(held) == 1


def test_with_the_cache_policy_failures_are_recorded_and_replayed():
    states = guarded(on_failure=FailurePolicy.CACHE)["States"]
    assert "ChargeOnce.Release" not in states
    assert states["ChargeOnce.Body"]["Catch"][0]["Next"] == "ChargeOnce.RecordFailure"
    replay = states["ChargeOnce.ReplayFailure"]
    assert replay["Type"] == "Fail" and replay["Error"].endswith(".record.error.S %}")


def test_with_cache_errors_only_the_listed_errors_are_remembered_and_others_release_the_key():
    states = guarded(on_failure=FailurePolicy.CACHE, cache_errors=["CardDeclined", "Idempotency.BodyFailed"])["States"]
    choice = states["ChargeOnce.CacheOrRelease"]
    assert choice["Default"] == "ChargeOnce.Release"
    assert choice["Choices"][0]["Condition"].endswith(".Error in ['CardDeclined', 'Idempotency.BodyFailed'] %}")
    assert choice["Choices"][0]["Next"] == "ChargeOnce.RecordFailure"


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


def test_key_namespace_retention_and_lease_reach_the_acquire():
    states = guarded(
        key=IdempotencyKey.from_paths("$.order.id"),
        namespace="orders-v2",
        expires_after=Duration.days(7),
        lease=Duration.minutes(2),
    )["States"]
    acquire = states["ChargeOnce.Acquire"]
    assert "$lookup($o, 'order')" in acquire["Arguments"] and "'orders-v2#' & $digest(" in acquire["Arguments"]
    assert "$now + 120000" in acquire["Arguments"] and "+ 604800" in states["ChargeOnce.Complete"]["Arguments"]


def test_only_a_jmespath_key_calls_the_key_function_before_the_acquire():
    states = guarded(key=IdempotencyKey.from_jmespath("order.id"))["States"]
    payload = states["ChargeOnce.ComputeKey"]["Arguments"]
    assert (payload["kind"], payload["expression"]) == ("jmespath", "order.id")
    assert payload["input"].startswith("{% (") and "$v := $states.input;" in payload["input"]  # refused if too large to send
    assert states["ChargeOnce.ComputeKey"]["Next"] == "ChargeOnce.Acquire"
    assert states["ChargeOnce.ComputeKey"]["Catch"][0] == {
        "ErrorEquals": ["Idempotency.KeyMissing", "States.QueryEvaluationError"], "Next": "ChargeOnce.KeyMissing"
    }


def test_a_key_the_acquire_cannot_compute_fails_with_key_missing():
    states = guarded()["States"]
    (missing,) = [c for c in states["ChargeOnce.Acquire"]["Catch"] if c["ErrorEquals"] == ["States.QueryEvaluationError"]]
    assert missing["Next"] == "ChargeOnce.KeyMissing" and states["ChargeOnce.KeyMissing"]["Error"] == "Idempotency.KeyMissing"


def test_step_functions_own_errors_are_renamed_because_no_fail_state_may_raise_them():
    release = guarded()["States"]["ChargeOnce.Release"]
    assert "$substring($e.Error, 0, 7) = 'States.' ? {'Error': 'Idempotency.BodyFailed', 'Cause': $string($e)}" in release["Output"]


def test_without_an_owner_state_machine_a_lapsed_lease_is_taken_over_without_asking():
    states = guarded()["States"]
    assert "ChargeOnce.OwnerCheck" not in states
    assert states["ChargeOnce.Route"]["Default"] == "ChargeOnce.Takeover"


def test_with_an_owner_state_machine_a_lapsed_lease_is_checked_with_describe_execution_on_its_executions_only():
    def build(s):
        guard = IdempotencyGuard(
            s, "ChargeOnce", table=IdempotencyTable(s, "Table"), body=sfn.Pass(s, "Charge"),
            owner_state_machine_name="orders",
        )
        sfn.StateMachine(s, "Machine", definition_body=sfn.DefinitionBody.from_chainable(guard), state_machine_name="orders")

    tpl = template(build)
    states = only_definition(tpl)["States"]
    check = states["ChargeOnce.OwnerCheck"]
    assert check["Resource"].endswith(":states:::aws-sdk:sfn:describeExecution")
    assert check["Arguments"]["ExecutionArn"].startswith("{% $substringBefore($idempotency_")
    assert check["Arguments"]["IncludedData"] == "METADATA_ONLY"  # never the holder's input, however large
    assert "ChargeOnce.PollOwner" in states["ChargeOnce.Await"]["Branches"][0]["States"]
    statements = [
        st for p in resources(tpl, "AWS::IAM::Policy").values() for st in p["Properties"]["PolicyDocument"]["Statement"]
        if st["Action"] == "states:DescribeExecution"
    ]
    assert len(statements) == 1
    assert ":execution:orders:*" in str(statements[0]["Resource"])


def test_a_state_name_prefix_replaces_the_construct_id():
    assert "pay/Acquire" in guarded(state_name_prefix="pay/")["States"]


def test_fails_when_the_prefix_makes_the_longest_state_name_longer_than_80_characters():
    longest = max(STATE_NAMES, key=len)
    assert f"{'x' * (80 - len(longest))}{longest}" in guarded(state_name_prefix="x" * (80 - len(longest)))["States"]
    with pytest.raises(IdempotencyConfigurationError, match=f"{longest}' \\(81 characters\\) longer than Step Functions' 80"):
        guarded(state_name_prefix="x" * (81 - len(longest)))


def test_every_state_a_guard_generates_is_named_in_state_names():
    def states_of(definition):
        for name, state in definition["States"].items():
            yield name
            for branch in state.get("Branches", []):
                yield from states_of(branch)

    names = set()
    for options in (
        {"on_failure": FailurePolicy.CACHE, "cache_errors": ["Boom"], "owner_state_machine_name": "orders"},
        {"on_in_flight": InFlightPolicy.FAIL},
    ):
        names |= {name for name in states_of(guarded(**options)) if name != "Charge"}
    assert {name.removeprefix("ChargeOnce.") for name in names} <= set(STATE_NAMES)
    assert all(name.startswith("ChargeOnce.") for name in names)


def test_dynamodb_errors_without_a_name_of_their_own_are_not_retried_as_transient():
    retried = {
        error
        for state in guarded()["States"].values()
        if state.get("Resource", "").startswith("arn:") and ":dynamodb:" in str(state.get("Resource"))
        for retry in state.get("Retry", [])
        for error in retry["ErrorEquals"]
    }
    assert "DynamoDB.InternalServerError" in retried and "DynamoDB.InternalServerErrorException" in retried
    assert "DynamoDB.AmazonDynamoDBException" not in retried


def test_every_guard_of_a_stack_shares_one_result_function_and_one_key_function():
    def build(s):
        table = IdempotencyTable(s, "Table")
        key = IdempotencyKey.from_jmespath("id")
        chain = sfn.Chain.start(IdempotencyGuard(s, "A", table=table, body=sfn.Pass(s, "PA"), key=key))
        chain = chain.next(IdempotencyGuard(s, "B", table=table, body=sfn.Pass(s, "PB"), key=key))
        sfn.StateMachine(s, "Machine", definition_body=sfn.DefinitionBody.from_chainable(chain))

    assert len(resources(template(build), "AWS::Lambda::Function")) == 2


def test_guards_side_by_side_keep_their_facts_in_variables_of_their_own():
    def build(s):
        table = IdempotencyTable(s, "Table")
        chain = sfn.Chain.start(IdempotencyGuard(s, "A", table=table, body=sfn.Pass(s, "PA")))
        chain = chain.next(IdempotencyGuard(s, "B", table=table, body=sfn.Pass(s, "PB")))
        sfn.StateMachine(s, "Machine", definition_body=sfn.DefinitionBody.from_chainable(chain))

    states = only_definition(template(build))["States"]
    (first,), (second,) = states["A.Acquire"]["Assign"], states["B.Acquire"]["Assign"]
    assert first != second and first.startswith("idempotency_") and second.startswith("idempotency_")


def test_fails_when_two_guards_would_share_state_names():
    target = stack()
    table = IdempotencyTable(target, "Table")
    first = IdempotencyGuard(target, "Same", table=table, body=sfn.Pass(target, "P1"))
    second = IdempotencyGuard(target, "Other", table=table, body=sfn.Pass(target, "P2"), state_name_prefix="Same.")
    with pytest.raises(Exception, match="Same.Acquire"):
        sfn.StateMachine(target, "Machine", definition_body=sfn.DefinitionBody.from_chainable(first.next(second)))
