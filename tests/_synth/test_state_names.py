"""idempotent_constructs/_synth/state_names.py: a state machine whose state names Step Functions would refuse
(one used twice anywhere in it, one over 80 characters) fails synth, naming both places and the fix."""

from __future__ import annotations

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_stepfunctions as sfn

from idempotent_constructs import (
    AslFragment,
    IdempotencyConfigurationError,
    IdempotencyGuard,
    IdempotencyTable,
    IdempotentStateMachine,
)
from idempotent_constructs._synth import state_names

NOTIFY = {"StartAt": "Notify", "States": {"Notify": {"Type": "Pass", "End": True}}}


def test_a_name_used_twice_in_nested_scopes_is_found_with_both_places():
    definition = {
        "StartAt": "Fan",
        "States": {
            "Fan": {"Type": "Parallel", "Branches": [NOTIFY, NOTIFY], "Next": "Each"},
            "Each": {
                "Type": "Map",
                "ItemProcessor": {"StartAt": "Fan", "States": {"Fan": {"Type": "Pass", "End": True}}},
                "End": True,
            },
        },
    }
    found = state_names.problems(definition)
    assert found[0].startswith(
        "the state name 'Notify' is used at /States/Fan/Branches[0]/States/Notify and at /States/Fan/Branches[1]"
    )
    assert "the state name 'Fan' is used at /States/Fan and at /States/Each/ItemProcessor/States/Fan" in found[1]
    assert len(found) == 2


def test_a_name_over_80_characters_is_found():
    (found,) = state_names.problems({"StartAt": "x" * 81, "States": {"x" * 81: {"Type": "Pass", "End": True}}})
    assert "is 81 characters, more than Step Functions' 80" in found


def test_two_fragments_with_a_state_of_the_same_name_in_a_plain_state_machine_fail_synth():
    app = App()
    stack = Stack(app, "Trips")
    first = AslFragment(stack, "First", definition_body=NOTIFY)
    second = AslFragment(stack, "Second", definition_body=NOTIFY)
    sfn.StateMachine(stack, "Machine", definition_body=sfn.DefinitionBody.from_chainable(first.next(second)))
    with pytest.raises(Exception, match=r"Trips/Machine: the state name 'Notify' is used at /States/First/Branches\[0\]"):
        app.synth()


def test_a_documents_state_named_as_one_of_the_users_fails_the_workflow_at_creation():
    stack = Stack(App(), "Trips")
    document = AslFragment(stack, "Refund", definition_body=NOTIFY)
    with pytest.raises(IdempotencyConfigurationError, match="definition: the state name 'Notify' is used at"):
        IdempotentStateMachine(
            stack,
            "Trips",
            table=IdempotencyTable(stack, "Table"),
            definition=sfn.Pass(stack, "Notify").next(document),
        )


def test_a_guarded_document_in_a_map_meeting_a_state_of_the_same_name_outside_fails_synth():
    app = App()
    stack = Stack(app, "Trips")
    guard = IdempotencyGuard(
        stack,
        "Once",
        table=IdempotencyTable(stack, "Table"),
        body=AslFragment(stack, "Doc", definition_body=NOTIFY),
        in_inline_map=True,
    )
    each = sfn.Map(stack, "Each").item_processor(guard)
    sfn.StateMachine(stack, "Machine", definition_body=sfn.DefinitionBody.from_chainable(each.next(sfn.Pass(stack, "Notify"))))
    with pytest.raises(Exception, match="the state name 'Notify' is used at"):
        app.synth()


def test_distinct_names_synthesize():
    app = App()
    stack = Stack(app, "Trips")
    first = AslFragment(stack, "First", definition_body=NOTIFY)
    second = AslFragment(stack, "Second", definition_body={"StartAt": "Tell", "States": {"Tell": {"Type": "Pass", "End": True}}})
    sfn.StateMachine(stack, "Machine", definition_body=sfn.DefinitionBody.from_chainable(first.next(second)))
    app.synth()
