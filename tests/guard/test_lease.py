"""idempotent_constructs/guard/lease.py: ExtendLease, adopted by the guard around it."""

from __future__ import annotations

import pytest
from aws_cdk import Duration
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk.assertions import Annotations, Match

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


def branch_states(parallel):
    """The states of the only branch of a Parallel."""
    return parallel["Branches"][0]["States"]


def test_a_workflow_adopts_extend_states_in_parallel_branches_and_inline_maps_of_its_definition():
    def build(s):
        in_branch = sfn.Parallel(s, "Fan").branch(sfn.Pass(s, "Left").next(ExtendLease(s, "InBranch")))
        per_item = sfn.Map(s, "Each", items_path="$.items").item_processor(ExtendLease(s, "PerItem"))
        # A Map inside a Parallel: its item processor was bound long before the Parallel's branch.
        deep = sfn.Parallel(s, "Deep").branch(sfn.Map(s, "Inner", items_path="$.items").item_processor(ExtendLease(s, "Deeper")))
        workflow = IdempotentStateMachine(
            s, "Export", table=IdempotencyTable(s, "Table"), definition=in_branch.next(per_item).next(deep)
        )
        assert sorted(workflow.guard.extend_states) == ["Deeper", "InBranch", "PerItem"]
        workflow.metric_lease_extended()  # counts all three

    body = branch_states(only_definition(template(build))["States"]["Idempotency.Body"])
    fan = branch_states(body["Fan"])
    assert fan["Left"]["Next"] == "Idempotency.InBranch"
    assert fan["Idempotency.InBranch"]["Resource"].endswith(":states:::dynamodb:updateItem")
    assert fan["Idempotency.InBranch"]["Catch"][0]["Next"] == "Idempotency.InBranch.LeaseLost"
    assert fan["Idempotency.InBranch.LeaseLost"]["Error"] == schema.LEASE_LOST
    each = body["Each"]["ItemProcessor"]
    assert each["StartAt"] == "Idempotency.PerItem"
    assert "Idempotency.PerItem.LeaseLost" in each["States"]
    inner = branch_states(body["Deep"])["Inner"]["ItemProcessor"]
    assert set(inner["States"]) == {"Idempotency.Deeper", "Idempotency.Deeper.LeaseLost"}


def test_an_extend_state_in_a_parallel_branch_counts_for_the_lease_advice():
    target = stack()
    work = sfn.CustomState(
        target, "Work", state_json={"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "TimeoutSeconds": 600}
    )
    body = sfn.Parallel(target, "Fan").branch(ExtendLease(target, "KeepAlive").next(work))
    guard = IdempotencyGuard(target, "Long", table=IdempotencyTable(target, "Table"), body=body, lease=Duration.minutes(1))
    sfn.StateMachine(target, "Machine", definition_body=sfn.DefinitionBody.from_chainable(guard))
    assert guard.extend_states == ["KeepAlive"]
    # No "lease shorter than the body" warning: the body extends its lease (guard/advice.py).
    assert Annotations.from_stack(target).find_warning("*", Match.any_value()) == []


def test_the_innermost_guard_adopts_an_extend_state():
    def build(s):
        table = IdempotencyTable(s, "Table")
        inner = IdempotencyGuard(s, "Inner", table=table, body=sfn.Pass(s, "Work").next(ExtendLease(s, "KeepAlive")))
        outer = IdempotencyGuard(s, "Outer", table=table, body=sfn.Parallel(s, "Fan").branch(inner))
        sfn.StateMachine(s, "Machine", definition_body=sfn.DefinitionBody.from_chainable(outer))
        assert (inner.extend_states, outer.extend_states) == (["KeepAlive"], [])

    fan = branch_states(only_definition(template(build))["States"]["Fan"])  # a Parallel alone runs bare
    assert "Inner.KeepAlive" in branch_states(fan["Inner.Body"])


def test_an_extend_state_after_a_guard_in_the_body_of_another_is_the_outer_guards():
    def build(s):
        table = IdempotencyTable(s, "Table")
        inner = IdempotencyGuard(s, "Inner", table=table, body=sfn.Pass(s, "Work"))
        keep_alive = ExtendLease(s, "KeepAlive")  # after the inner guard, in the outer guard's body
        fan = sfn.Parallel(s, "Fan").branch(inner.next(keep_alive))  # its branch is bound with the outer guard
        outer = IdempotencyGuard(s, "Outer", table=table, body=fan)
        sfn.StateMachine(s, "Machine", definition_body=sfn.DefinitionBody.from_chainable(outer))
        assert (inner.extend_states, outer.extend_states) == ([], ["KeepAlive"]) and keep_alive.in_body

    assert "Outer.KeepAlive" in branch_states(only_definition(template(build))["States"]["Fan"])


def test_an_extend_state_outside_any_guard_fails_synth():
    def build(s):
        guard = IdempotencyGuard(s, "Long", table=IdempotencyTable(s, "Table"), body=sfn.Pass(s, "Work"))
        chain = ExtendLease(s, "Stray").next(guard)
        sfn.StateMachine(s, "Machine", definition_body=sfn.DefinitionBody.from_chainable(chain))

    with pytest.raises(RuntimeError, match=r"\[Test/Stray\] ExtendLease: no guard adopted this state; place it in the body"):
        template(build)  # a validation error of the app's synth


@pytest.mark.parametrize("made_by", ["ExtendLease", "extend_lease()"])
def test_an_extend_state_in_a_distributed_map_fails_synth_with_the_reason_and_the_fix(made_by):
    def build(s):
        each = sfn.DistributedMap(s, "Each", items_path="$.items")
        guard = IdempotencyGuard(s, "Long", table=IdempotencyTable(s, "Table"), body=each)
        each.item_processor(ExtendLease(s, "PerItem") if made_by == "ExtendLease" else guard.extend_lease("PerItem"))
        sfn.StateMachine(s, "Machine", definition_body=sfn.DefinitionBody.from_chainable(guard))

    with pytest.raises(RuntimeError) as raised:
        template(build)
    message = str(raised.value)
    assert "item processor of the Distributed Map 'Each', whose child workflows cannot read the variables" in message
    assert "in an inline Map (sfn.Map)" in message  # the fix


def test_a_guard_inside_a_distributed_map_extends_its_own_lease_there():
    def build(s):
        table = IdempotencyTable(s, "Table")
        per_item = IdempotencyGuard(s, "PerItem", table=table, body=sfn.Pass(s, "Work").next(ExtendLease(s, "KeepAlive")))
        each = sfn.DistributedMap(s, "Each", items_path="$.items").item_processor(per_item)
        whole = IdempotencyGuard(s, "Whole", table=table, body=each)
        sfn.StateMachine(s, "Machine", definition_body=sfn.DefinitionBody.from_chainable(whole))

    each = only_definition(template(build))["States"]["Each"]  # a Map alone runs bare
    assert "PerItem.KeepAlive" in branch_states(each["ItemProcessor"]["States"]["PerItem.Body"])


def test_an_extend_state_wired_in_after_a_plain_state_machine_was_created_fails_synth():
    def build(s):
        work = sfn.Pass(s, "Work")
        guard = IdempotencyGuard(s, "Long", table=IdempotencyTable(s, "Table"), body=work)
        too_late = guard.extend_lease("TooLate")  # made in time: made after it, extend_lease() itself refuses
        sfn.StateMachine(s, "Machine", definition_body=sfn.DefinitionBody.from_chainable(guard))
        work.next(too_late)  # the definition is rendered already

    with pytest.raises(RuntimeError, match=r"\[Test/Long/TooLate\] ExtendLease: no state machine's definition holds"):
        template(build)


def test_an_extend_state_of_a_guard_placed_outside_its_body_fails_synth():
    def build(s):
        guard = IdempotencyGuard(s, "Long", table=IdempotencyTable(s, "Table"), body=sfn.Pass(s, "Work"))
        chain = guard.extend_lease("Before").next(guard)
        sfn.StateMachine(s, "Machine", definition_body=sfn.DefinitionBody.from_chainable(chain))

    with pytest.raises(RuntimeError, match="it is outside the body of its guard Test/Long"):
        template(build)


def test_guard_extend_lease_may_be_wired_in_later_and_inside_a_map_of_the_body():
    def build(s):
        each = sfn.Map(s, "Each", items_path="$.items")
        guard = IdempotencyGuard(s, "Long", table=IdempotencyTable(s, "Table"), body=each)
        each.item_processor(guard.extend_lease())
        sfn.StateMachine(s, "Machine", definition_body=sfn.DefinitionBody.from_chainable(guard))

    each = only_definition(template(build))["States"]["Each"]  # a Map alone runs bare
    assert each["ItemProcessor"]["StartAt"] == "Long.ExtendLease"


def test_an_extend_state_cannot_be_made_once_the_guard_joined_a_graph_which_settled_its_body():
    target = stack()
    work = sfn.Wait(target, "Work", time=sfn.WaitTime.duration(Duration.seconds(1)))
    guard = IdempotencyGuard(target, "Long", table=IdempotencyTable(target, "Table"), body=work)
    sfn.Map(target, "Each", items_path="$.items").item_processor(guard)  # binds it, as CDK binds an item processor
    with pytest.raises(IdempotencyConfigurationError, match=r"joined a graph already .* before placing the guard"):
        guard.extend_lease()


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
