"""guard/history.py: where a guarded inline Map meets the 25,000-event history of a Standard execution."""

from __future__ import annotations

from aws_cdk import App, Stack
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk.assertions import Annotations, Match

from idempotent_constructs import IdempotencyGuard, IdempotencyKey, IdempotencyTable, IdempotentStateMachine
from idempotent_constructs.guard import history


def guarded_rows(stack: Stack, *, distributed: bool = False, items: list[dict[str, str]] | None = None) -> sfn.IChainable:
    """A Map over ``$.rows`` (or ``items``, written out) whose item processor is a guard around a Pass."""
    table = IdempotencyTable(stack, "Table")
    guard = IdempotencyGuard(
        stack,
        "Row",
        table=table,
        key=IdempotencyKey.from_jsonata("$states.input.id"),
        body=sfn.Pass.jsonata(stack, "Work"),
        in_inline_map=not distributed,
    )
    provided = sfn.ProvideItems.json_array(items) if items is not None else sfn.ProvideItems.jsonata("{% $states.input.rows %}")
    kind = sfn.DistributedMap.jsonata if distributed else sfn.Map.jsonata
    return kind(stack, "Rows", items=provided).item_processor(guard)


def infos(stack: Stack) -> list[str]:
    return [entry.entry.data for entry in Annotations.from_stack(stack).find_info("*", Match.any_value())]


def test_a_guarded_inline_map_of_the_inputs_rows_is_told_its_events_an_item_and_the_items_that_reach_the_limit():
    stack = Stack(App(), "Test")
    sfn.StateMachine(stack, "Import", definition_body=sfn.DefinitionBody.from_chainable(guarded_rows(stack)))
    (note,) = infos(stack)
    # 2 for the iteration, Begin 2, Acquire 5, the body's Parallel 4 and its Pass 2, Complete 5 (the emulator
    # measures the same: tests/emulator/test_history_limit.py).
    assert note.startswith(
        "the inline Map 'Rows' runs the guard 'Row.' for each item: about 20 history events an item, so an execution "
        "of more than about 1,249 items reaches Step Functions' 25,000-event history limit and fails"
    )
    assert "make it a Distributed Map (sfn.DistributedMap)" in note


def test_a_distributed_map_an_express_workflow_and_written_out_items_that_fit_are_told_nothing():
    distributed = Stack(App(), "Distributed")
    sfn.StateMachine(
        distributed, "Import", definition_body=sfn.DefinitionBody.from_chainable(guarded_rows(distributed, distributed=True))
    )
    express = Stack(App(), "Express")
    sfn.StateMachine(
        express,
        "Import",
        definition_body=sfn.DefinitionBody.from_chainable(guarded_rows(express)),
        state_machine_type=sfn.StateMachineType.EXPRESS,
    )
    few = Stack(App(), "Few")
    rows = [{"id": f"r-{n}"} for n in range(3)]
    sfn.StateMachine(few, "Import", definition_body=sfn.DefinitionBody.from_chainable(guarded_rows(few, items=rows)))
    assert infos(distributed) == infos(express) == infos(few) == []


def test_an_idempotent_state_machine_whose_chain_holds_a_guarded_inline_map_is_told_counting_its_own_states_once():
    stack = Stack(App(), "Test")
    rows = guarded_rows(stack)
    IdempotentStateMachine(stack, "Import", table=IdempotencyTable(stack, "Outer"), definition=rows)
    (note,) = infos(stack)
    assert "about 20 history events an item" in note
    # The workflow's own Acquire and Complete (10 events), the Map's 4 and the execution's 2 are outside it: 24,984
    # events are left, 1,249 items of 20.
    assert "more than about 1,249 items" in note


def test_the_estimate_counts_a_task_body_as_aws_writes_it():
    definition = {
        "States": {
            "Rows": {
                "Type": "Map",
                "ItemProcessor": {
                    "States": {
                        "Row.Begin": {"Type": "Pass"},
                        "Row.Acquire": {"Type": "Task", "Assign": {"idempotency_0123456789ab": "{% {} %}"}},
                        "Row.Inspect": {"Type": "Task"},  # a replay's, not a first run's
                        "Charge": {"Type": "Task"},
                        "Row.Complete": {"Type": "Task"},
                    }
                },
            }
        }
    }
    (note,) = history.notes(definition, express=False)
    # A user measured 19 events an item on AWS for a guard around one Task, on 500 rows (issue 55).
    assert "about 19 history events an item" in note
