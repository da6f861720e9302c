"""idempotent_constructs/guard/placement.py: a guard in an inline Map's item processor, whose iterations may enter
a state in the same millisecond, draws a token of its own there, seen at synth; one whose writes take the token
of their state's entry there all the same is refused."""

from __future__ import annotations

import json
import re

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
from idempotent_constructs._synth.definition import DefinitionLocation
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


IN_A_MAP = {
    "in its item processor": lambda s, **told: sfn.Map(s, "Each", items_path="$.items").item_processor(item_guard(s, **told)),
    "in a Parallel branch in it": lambda s, **told: sfn.Map(s, "Each", items_path="$.items").item_processor(
        sfn.Parallel(s, "Both").branch(item_guard(s, **told)).branch(sfn.Pass(s, "Other"))
    ),
    "in a Map in a Distributed Map's child workflow": lambda s, **told: sfn.DistributedMap(
        s, "Rows", items_path="$.rows"
    ).item_processor(sfn.Map(s, "Each", items_path="$.items").item_processor(item_guard(s, **told))),
}
NOT_IN_ONE = {
    "after a state": lambda s, **told: sfn.Pass(s, "Before").next(item_guard(s, **told)),
    "in a Parallel branch": lambda s, **told: sfn.Parallel(s, "Both").branch(item_guard(s, **told)),
    "in a Distributed Map's child workflow": lambda s, **told: sfn.DistributedMap(s, "Each", items_path="$.items").item_processor(
        item_guard(s, **told)
    ),
    "in a Map run in distributed mode": lambda s, **told: sfn.Map(s, "Each", items_path="$.items").item_processor(
        item_guard(s, **told), mode=sfn.ProcessorMode.DISTRIBUTED, execution_type=sfn.ProcessorType.STANDARD
    ),
}


def definition_of(chain_of, **told) -> dict:
    return only_definition(
        template(lambda s: sfn.StateMachine(s, "Machine", definition_body=sfn.DefinitionBody.from_chainable(chain_of(s, **told))))
    )


def guard_scope(definition: dict) -> dict:
    """The scope of ``definition`` (its top level, a branch or an item processor) that holds the guard's states."""
    scopes = [definition]
    while scopes:
        scope = scopes.pop()
        if "ItemOnce.Acquire" in scope["States"]:
            return scope
        for state in scope["States"].values():
            scopes.extend(state.get("Branches", []))
            scopes.extend([state["ItemProcessor"]] if "ItemProcessor" in state else [])
    raise AssertionError("no guard in the definition")


def without_assigns(value):
    if isinstance(value, dict):
        return {name: without_assigns(item) for name, item in value.items() if name != "Assign"}
    return [without_assigns(item) for item in value] if isinstance(value, list) else value


@pytest.mark.parametrize("where", IN_A_MAP.values(), ids=IN_A_MAP.keys())
def test_a_guard_in_an_inline_map_draws_a_token_of_its_own_there_without_being_told(where):
    seen, told = definition_of(where), definition_of(where, in_inline_map=True)
    scope = guard_scope(seen)
    assert scope["StartAt"] == "ItemOnce.Begin" and list(scope["States"])[:2] == ["ItemOnce.Begin", "ItemOnce.Acquire"]
    assert scope["States"]["ItemOnce.Begin"] == guard_scope(told)["States"]["ItemOnce.Begin"]
    assert placement.problems(seen) == []
    # As told, but for two catchers that write the token drawn first into the variable that holds it already.
    assert without_assigns(seen) == without_assigns(told)
    owners = "{'owner': $idempotency_"
    assert json.dumps(seen).count(owners) == json.dumps(told).count(owners) + 2


@pytest.mark.parametrize("where", NOT_IN_ONE.values(), ids=NOT_IN_ONE.keys())
def test_a_guard_in_no_inline_map_writes_its_entrys_token_as_one_told_so(where):
    seen = definition_of(where)
    assert "ItemOnce.Begin" not in guard_scope(seen)["States"]
    assert seen == definition_of(where, in_inline_map=False)


@pytest.mark.parametrize("where", list(IN_A_MAP.values())[:2], ids=list(IN_A_MAP)[:2])
def test_a_guard_told_it_is_in_no_inline_map_that_is_in_one_is_refused_at_synth_with_the_fix(where):
    with pytest.raises(RuntimeError) as raised:
        synth_of(lambda s: where(s, in_inline_map=False))
    message = str(raised.value)
    assert (
        "'ItemOnce.Acquire', 'ItemOnce.AcquireComputed', 'ItemOnce.Takeover' run in the item processor of the inline Map 'Each'"
        in message
    )
    assert "pass in_inline_map=True to their IdempotencyGuard" in message


def test_an_idempotent_state_machines_definition_is_checked_as_it_is_created():
    s = Stack(App(), "Test")
    each = sfn.Map(s, "Each", items_path="$.items").item_processor(item_guard(s, in_inline_map=False))
    with pytest.raises(Exception, match="pass in_inline_map=True to their IdempotencyGuard"):
        IdempotentStateMachine(s, "Orders", table=IdempotencyTable(s, "OrdersTable"), definition=each)


def test_an_idempotent_state_machine_sees_the_guards_of_its_inline_maps():
    def orders(s: Stack) -> None:
        each = sfn.Map(s, "Each", items_path="$.items").item_processor(item_guard(s))
        IdempotentStateMachine(s, "Orders", table=IdempotencyTable(s, "OrdersTable"), definition=each)

    assert guard_scope(only_definition(template(orders)))["StartAt"] == "ItemOnce.Begin"


def document_step(s: Stack, **told) -> AslFragment:
    charge = {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "Parameters": {"FunctionName": "charge"}, "End": True}
    return AslFragment(
        s,
        "Step",
        definition_body=sfn.DefinitionBody.from_string(json.dumps({"StartAt": "Charge", "States": {"Charge": charge}})),
        table=IdempotencyTable(s, "Table"),
        guard_states={"Charge": GuardedState(key=SKU, **told)},
    )


def step_scope(definition: dict) -> dict:
    """The document's branch, wherever the fragment is."""
    scopes = [definition]
    while scopes:
        scope = scopes.pop()
        if any(name.startswith("Charge.") for name in scope["States"]):
            return scope
        for state in scope["States"].values():
            scopes.extend(state.get("Branches", []))
            scopes.extend([state["ItemProcessor"]] if "ItemProcessor" in state else [])
    raise AssertionError("no guarded document in the definition")


def test_a_document_in_an_inline_map_of_your_chain_guards_its_states_with_a_token_drawn_first_untold():
    def each(s: Stack, **told) -> sfn.IChainable:
        return sfn.Map(s, "Each", items_path="$.items").item_processor(document_step(s, **told))

    seen, told = definition_of(each), definition_of(each, in_inline_map=True)
    assert step_scope(seen)["StartAt"] == "Charge.Begin" and placement.problems(seen) == []
    assert without_assigns(seen) == without_assigns(told)


def test_a_document_in_no_inline_map_of_yours_writes_its_entrys_token_as_one_told_so():
    def alone(s: Stack, **told) -> sfn.IChainable:
        return sfn.Pass(s, "Before").next(document_step(s, **told))

    seen = definition_of(alone)
    assert "Charge.Begin" not in step_scope(seen)["States"] and seen == definition_of(alone, in_inline_map=False)
    with pytest.raises(RuntimeError, match=r"to its GuardedState\), which then draws a token of its own"):
        synth_of(lambda s: sfn.Map(s, "Each", items_path="$.items").item_processor(document_step(s, in_inline_map=False)))


@pytest.mark.parametrize("location", ["ASSET", "TEMPLATE"])
def test_a_definition_the_library_writes_as_text_names_a_guard_in_no_map_once(location, tmp_path):
    """An IdempotentStateMachine writes its definition as text (shared in the template, or in an asset): its guards'
    places are settled as it is rendered, so no state name is written as a token, twice or at all."""
    app = App(outdir=str(tmp_path))
    s = Stack(app, "Shop")
    table = IdempotencyTable(s, "Table")
    inner = IdempotencyGuard(s, "Charge", table=table, body=sfn.Pass(s, "ChargeCard"), key=SKU)
    IdempotentStateMachine(
        s, "Orders", table=table, definition=inner, key=SKU, definition_location=getattr(DefinitionLocation, location)
    )
    template = app.synth().get_stack_by_name("Shop").template
    (machine,) = [r for r in template["Resources"].values() if r["Type"] == "AWS::StepFunctions::StateMachine"]
    if location == "TEMPLATE":  # shared, as a definition with no guard of its own is, in the template's mappings
        assert "Fn::FindInMap" in machine["Properties"]["DefinitionString"]
        (shared,) = [entry["Text"] for mapping in template["Mappings"].values() for entry in mapping.values()]
        own = machine["Properties"]["DefinitionSubstitutions"].values()  # the workflow's own parts: its chain
        texts = [
            part if isinstance(part, str) else "".join(p for p in part.get("Fn::Join", ["", []])[1] if isinstance(p, str))
            for part in own
        ]
        written = "\n".join([shared, *texts])
    else:
        (written,) = [path.read_text() for path in tmp_path.glob("asset.*.json") if '"StartAt"' in path.read_text()]
    assert written.count('"Charge.Acquire":{') == 1 and '"Charge.Begin":{' not in written
    assert not re.search(r'"\$\{[A-Za-z0-9]+\}":\{', written)  # no state name left to a substitution
