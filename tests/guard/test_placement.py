"""idempotent_constructs/guard/placement.py: a guard whose writes take the token of their state's entry is
refused in an inline Map's item processor, whose iterations may enter a state in the same millisecond."""

from __future__ import annotations

import json

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_stepfunctions as sfn

from idempotent_constructs import (
    AslFragment,
    GuardedState,
    IdempotencyGuard,
    IdempotencyKey,
    IdempotencyTable,
    IdempotentStateMachine,
)
from idempotent_constructs.guard import placement
from tests.synth import only_definition, template

SKU = IdempotencyKey.from_paths("$.sku")


def item_guard(s: Stack, **options) -> IdempotencyGuard:
    table = s.node.try_find_child("Table") or IdempotencyTable(s, "Table")
    return IdempotencyGuard(s, "ItemOnce", table=table, body=sfn.Pass(s, "ItemWork"), key=SKU, **options)


def synth_of(chain_of) -> None:
    app = App()
    s = Stack(app, "Test")
    sfn.StateMachine(s, "Machine", definition_body=sfn.DefinitionBody.from_chainable(chain_of(s)))
    app.synth()


@pytest.mark.parametrize(
    "where",
    [
        lambda s: sfn.Map(s, "Each", items_path="$.items").item_processor(item_guard(s)),
        lambda s: sfn.Map(s, "Each", items_path="$.items").item_processor(
            sfn.Parallel(s, "Both").branch(item_guard(s)).branch(sfn.Pass(s, "Other"))
        ),
    ],
    ids=["in its item processor", "in a Parallel branch in it"],
)
def test_a_guard_in_an_inline_map_is_refused_at_synth_with_the_fix(where):
    with pytest.raises(RuntimeError) as raised:
        synth_of(where)
    message = str(raised.value)
    assert (
        "'ItemOnce.Acquire', 'ItemOnce.AcquireComputed', 'ItemOnce.Takeover' run in the item processor of the inline Map 'Each'"
        in message
    )
    assert "pass in_inline_map=True to their IdempotencyGuard" in message


def test_a_guard_in_an_inline_map_that_draws_its_token_first_is_not_refused():
    definition = only_definition(
        template(
            lambda s: sfn.StateMachine(
                s,
                "Machine",
                definition_body=sfn.DefinitionBody.from_chainable(
                    sfn.Map(s, "Each", items_path="$.items").item_processor(item_guard(s, in_inline_map=True))
                ),
            )
        )
    )
    assert definition["States"]["Each"]["ItemProcessor"]["StartAt"] == "ItemOnce.Begin"
    assert placement.problems(definition) == []


def test_a_guard_outside_any_map_or_in_a_distributed_maps_child_executions_is_not_refused():
    synth_of(lambda s: sfn.Pass(s, "Before").next(item_guard(s)))
    synth_of(lambda s: sfn.DistributedMap(s, "Each", items_path="$.items").item_processor(item_guard(s)))


def test_an_idempotent_state_machines_definition_is_refused_as_it_is_created():
    s = Stack(App(), "Test")
    each = sfn.Map(s, "Each", items_path="$.items").item_processor(item_guard(s))
    with pytest.raises(Exception, match="pass in_inline_map=True to their IdempotencyGuard"):
        IdempotentStateMachine(s, "Orders", table=IdempotencyTable(s, "OrdersTable"), definition=each)


@pytest.mark.parametrize("in_inline_map", [None, True])
def test_a_document_in_an_inline_map_of_your_chain_guards_its_states_with_a_token_drawn_first_when_told(in_inline_map):
    charge = {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "Parameters": {"FunctionName": "charge"}, "End": True}
    document = {"StartAt": "Charge", "States": {"Charge": charge}}

    def each(s: Stack) -> sfn.IChainable:
        step = AslFragment(
            s,
            "Step",
            definition_body=sfn.DefinitionBody.from_string(json.dumps(document)),
            table=IdempotencyTable(s, "Table"),
            guard_states={"Charge": GuardedState(key=SKU, in_inline_map=in_inline_map)},
        )
        return sfn.Map(s, "Each", items_path="$.items").item_processor(step)

    if in_inline_map:
        synth_of(each)
    else:
        with pytest.raises(RuntimeError, match=r"to its GuardedState\), which then draws a token of its own"):
            synth_of(each)
