"""idempotent_constructs/guard/lease.py: ExtendLease, adopted by the guard around it."""

from __future__ import annotations

import pytest
from aws_cdk import Duration
from aws_cdk import aws_stepfunctions as sfn

from idempotent_constructs import (
    ExtendLease,
    IdempotencyConfigurationError,
    IdempotencyGuard,
    IdempotencyTable,
    IdempotentStateMachine,
)
from idempotent_constructs.lambda_src import schema
from tests.guard.build import condition_of
from tests.synth import only_definition, stack, template


def test_an_extend_state_in_a_workflows_definition_is_a_fenced_update_that_passes_its_input_through():
    def build(s):
        extend = ExtendLease(s, "KeepAlive")
        IdempotentStateMachine(
            s,
            "Export",
            table=IdempotencyTable(s, "Table"),
            definition=extend.next(sfn.Pass(s, "Work")),
            lease=Duration.minutes(3),
        )

    states = only_definition(template(build))["States"]
    # Inside the guard's Body, named with the guard's prefix.
    extend = states["Idempotency.Body"]["Branches"][0]["States"]["Idempotency.KeepAlive"]
    assert extend["Resource"].endswith(":states:::dynamodb:updateItem")
    assert (extend["Output"], extend["Next"]) == ("{% $states.input %}", "Work")
    assert condition_of(extend) == f"{schema.FENCE} AND #{schema.STATUS} = :held"
    assert "$millis() + 180000" in extend["Arguments"]  # the lease, from now
    (catcher,) = extend["Catch"]
    assert (catcher["ErrorEquals"], catcher["Next"]) == (
        ["DynamoDB.ConditionalCheckFailedException"],
        "Idempotency.KeepAlive.LeaseLost",
    )
    lost = states["Idempotency.Body"]["Branches"][0]["States"]["Idempotency.KeepAlive.LeaseLost"]
    assert (lost["Type"], lost["Error"]) == ("Fail", schema.LEASE_LOST)


def test_a_guard_adopts_extend_states_in_loops_and_error_handlers_of_its_body():
    def build(s):
        tick = sfn.Wait(s, "Tick", time=sfn.WaitTime.duration(Duration.seconds(1)))
        more = sfn.Choice(s, "More").when(sfn.Condition.is_present("$.more"), tick).otherwise(sfn.Succeed(s, "Done"))
        work = sfn.Parallel(s, "Work").branch(sfn.Pass(s, "Step"))
        work.add_catch(ExtendLease(s, "AfterError").next(sfn.Fail(s, "Failed")))
        tick.next(ExtendLease(s, "EachTick")).next(more)
        guard = IdempotencyGuard(s, "Long", table=IdempotencyTable(s, "Table"), body=work.next(tick))
        sfn.StateMachine(s, "Machine", definition_body=sfn.DefinitionBody.from_chainable(guard))
        assert sorted(guard.extend_states) == ["AfterError", "EachTick"]

    branch = only_definition(template(build))["States"]["Long.Body"]["Branches"][0]["States"]
    assert {"Long.EachTick", "Long.AfterError", "Long.EachTick.LeaseLost", "Long.AfterError.LeaseLost"} <= set(branch)


def test_an_extend_state_no_guard_adopted_fails_synth_with_where_to_place_it():
    def build(s):
        inner = sfn.Parallel(s, "Inner").branch(ExtendLease(s, "Nested"))  # not at the body's top level
        guard = IdempotencyGuard(s, "Long", table=IdempotencyTable(s, "Table"), body=inner)
        sfn.StateMachine(s, "Machine", definition_body=sfn.DefinitionBody.from_chainable(guard))

    with pytest.raises(
        RuntimeError, match=r"\[Test/Nested\] ExtendLease: no guard adopted this state; place it at the top level"
    ):
        template(build)  # a validation error of the app's synth


def test_guard_extend_lease_may_be_wired_in_later_and_inside_a_map_of_the_body():
    def build(s):
        each = sfn.Map(s, "Each", items_path="$.items")
        guard = IdempotencyGuard(s, "Long", table=IdempotencyTable(s, "Table"), body=each)
        each.item_processor(guard.extend_lease())
        sfn.StateMachine(s, "Machine", definition_body=sfn.DefinitionBody.from_chainable(guard))

    each = only_definition(template(build))["States"]["Long.Body"]["Branches"][0]["States"]["Each"]
    assert each["ItemProcessor"]["StartAt"] == "Long.ExtendLease"


def test_an_extend_state_cannot_join_a_workflow_whose_definition_is_rendered():
    target = stack()
    workflow = IdempotentStateMachine(
        target, "Export", table=IdempotencyTable(target, "Table"), definition=sfn.Pass(target, "Work")
    )
    with pytest.raises(IdempotencyConfigurationError, match="already rendered"):
        workflow.guard.extend_lease()


def test_an_extend_state_whose_name_would_be_longer_than_80_characters_is_refused():
    target = stack()
    guard = IdempotencyGuard(target, "ChargeOnce", table=IdempotencyTable(target, "Table"), body=sfn.Pass(target, "Charge"))
    guard.extend_lease("E" * 59)  # "ChargeOnce.EEE….LeaseLost": 80 characters
    with pytest.raises(IdempotencyConfigurationError, match="longer than Step Functions' 80"):
        guard.extend_lease("E" * 60)
