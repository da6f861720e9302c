"""idempotent_constructs/guard_states.py: states of a document guarded by name (issue 31), the file unchanged."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk import aws_stepfunctions as sfn

from idempotent_constructs import (
    AslFragment,
    GuardedState,
    IdempotencyConfigurationError,
    IdempotencyKey,
    IdempotencyTable,
    IdempotentStateMachine,
)
from idempotent_constructs.guard_states import PROTOCOL_ERRORS
from tests.stacks import DOCUMENTS
from tests.synth import only_definition, resources, stack, template

TRIP = IdempotencyKey.from_paths("$.trip_id")
SAGA = DOCUMENTS / "saga-pattern-sam.asl.json"
SAGA_SUBSTITUTIONS = {
    name: f"arn:{name}"
    for name in (
        "reserveFlightFunction",
        "reserveCarRentalFunction",
        "processPaymentFunction",
        "confirmFlightFunction",
        "confirmCarRentalFunction",
        "refundPaymentFunction",
        "cancelCarRentalFunction",
        "cancelFlightFunction",
        "snsTopicArn",
    )
}


def task(name: str, **fields: Any) -> dict[str, Any]:
    return {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "Parameters": {"FunctionName": name}, **fields}


def fragment_definition(document: Any, guard_states: Any, **options: Any) -> dict[str, Any]:
    """The document's branch, as a plain state machine around an AslFragment renders it."""

    def build(s):
        step = AslFragment(
            s, "Step", definition_body=document, table=IdempotencyTable(s, "Table"), guard_states=guard_states, **options
        )
        sfn.StateMachine(s, "Machine", definition_body=sfn.DefinitionBody.from_chainable(step))

    (branch,) = only_definition(template(build))["States"]["Step"]["Branches"]
    return branch


def saga() -> dict[str, Any]:
    text = SAGA.read_text()
    for name, value in SAGA_SUBSTITUTIONS.items():
        text = text.replace("${" + name + "}", value)
    return json.loads(text)


def test_a_guarded_state_with_a_catch_runs_its_guard_in_a_parallel_that_carries_its_catch_and_its_next():
    file = saga()
    branch = fragment_definition(
        sfn.DefinitionBody.from_file(str(SAGA)), {"ProcessPayment": TRIP}, definition_substitutions=SAGA_SUBSTITUTIONS
    )
    guarded = branch["States"]["ProcessPayment.Guarded"]
    assert guarded["Type"] == "Parallel" and guarded["OutputPath"] == "$[0]" and guarded["Next"] == "ConfirmFlight"
    assert guarded["Catch"] == [
        {"ErrorEquals": PROTOCOL_ERRORS, "Next": "ProcessPayment.Raise"},
        *file["States"]["ProcessPayment"]["Catch"],
    ]
    assert branch["States"]["ReserveCarRental"]["Next"] == "ProcessPayment.Guarded"  # rewired
    (inner,) = guarded["Branches"]
    assert inner["StartAt"] == "ProcessPayment.Acquire"
    # Inside the guard's Body, the state as the file has it (Retry too), ending its branch.
    (body,) = inner["States"]["ProcessPayment.Body"]["Branches"]
    expected = {name: value for name, value in file["States"]["ProcessPayment"].items() if name not in ("Next", "Catch")}
    assert body == {"StartAt": "ProcessPayment", "States": {"ProcessPayment": {**expected, "End": True}}}
    # The guard's last states end the Parallel's branch.
    assert all("Next" not in inner["States"][f"ProcessPayment.{name}"] for name in ("Complete", "Replay", "StoreResult"))
    # Every other state of the file, unchanged.
    others = {name: state for name, state in file["States"].items() if name != "ProcessPayment"}
    others["ReserveCarRental"] = {**others["ReserveCarRental"], "Next": "ProcessPayment.Guarded"}
    assert {name: state for name, state in branch["States"].items() if not name.startswith("ProcessPayment.")} == others
    assert branch["States"]["ProcessPayment.Raise"]["Type"] == "Fail"


def test_a_guarded_state_without_a_catch_is_replaced_by_its_guard_whose_last_states_go_where_it_went():
    document = {
        "StartAt": "Charge",
        "States": {"Charge": task("charge", ResultPath=None, Next="Ship"), "Ship": task("ship", End=True)},
    }
    branch = fragment_definition(document, {"Charge": TRIP, "Ship": GuardedState(key=TRIP, state_name_prefix="S.")})
    assert branch["StartAt"] == "Charge.Acquire"
    assert {branch["States"][f"Charge.{name}"]["Next"] for name in ("Complete", "StoreResult", "Replay")} == {"S.Acquire"}
    assert all(branch["States"][f"S.{name}"]["End"] is True for name in ("Complete", "StoreResult", "Replay"))
    # The file's null kept: "ResultPath": null discards the result.
    (body,) = branch["States"]["Charge.Body"]["Branches"]
    assert body["States"]["Charge"] == {**task("charge", ResultPath=None), "End": True}
    assert "Charge" not in branch["States"] and "Ship" not in branch["States"]


def test_states_in_a_parallel_branch_and_a_map_item_processor_are_guarded_in_their_own_scope():
    document = {
        "StartAt": "Both",
        "States": {
            "Both": {
                "Type": "Parallel",
                "Branches": [{"StartAt": "Label", "States": {"Label": task("label", End=True)}}],
                "Next": "Each",
            },
            "Each": {
                "Type": "Map",
                "ItemProcessor": {
                    "ProcessorConfig": {"Mode": "INLINE"},
                    "StartAt": "Pack",
                    "States": {"Pack": task("pack", Next="Done"), "Done": {"Type": "Succeed"}},
                },
                "End": True,
            },
        },
    }
    branch = fragment_definition(document, {"Label": TRIP, "Pack": IdempotencyKey.from_paths("$.item")})
    (label,) = branch["States"]["Both"]["Branches"]
    assert label["StartAt"] == "Label.Acquire" and label["States"]["Label.Complete"]["End"] is True
    # In the Map's item processor, whose iterations may enter it at once, the guard draws its token first.
    processor = branch["States"]["Each"]["ItemProcessor"]
    assert processor["StartAt"] == "Pack.Begin" and processor["States"]["Pack.Complete"]["Next"] == "Done"
    assert processor["States"]["Done"] == {"Type": "Succeed"}
    assert branch["States"]["Both"]["Next"] == "Each"  # the scopes' own states as the file has them


def test_a_guarded_parallel_holds_its_guarded_states_in_its_body():
    document = {
        "StartAt": "Both",
        "States": {
            "Both": {
                "Type": "Parallel",
                "Branches": [{"StartAt": "Label", "States": {"Label": task("label", End=True)}}],
                "End": True,
            }
        },
    }
    branch = fragment_definition(document, {"Both": TRIP, "Label": TRIP})
    (body,) = branch["States"]["Both.Body"]["Branches"]
    (label,) = body["States"]["Both"]["Branches"]
    assert label["StartAt"] == "Label.Acquire"


def test_a_jsonata_document_s_guarded_state_with_a_catch_is_unwrapped_in_jsonata():
    document = {
        "QueryLanguage": "JSONata",
        "StartAt": "Charge",
        "States": {
            "Charge": {
                "Type": "Task",
                "Resource": "arn:aws:states:::lambda:invoke",
                "Arguments": {"FunctionName": "charge", "Payload": "{% $states.input %}"},
                "Output": "{% $states.result.Payload %}",
                "Catch": [{"ErrorEquals": ["States.ALL"], "Output": "{% $states.errorOutput %}", "Next": "Failed"}],
                "End": True,
            },
            "Failed": {"Type": "Fail", "Error": "ChargeFailed"},
        },
    }
    branch = fragment_definition(document, {"Charge": TRIP})
    guarded = branch["States"]["Charge.Guarded"]
    assert (guarded["QueryLanguage"], guarded["Output"], guarded["End"]) == ("JSONata", "{% $states.result[0] %}", True)
    assert guarded["Catch"][1] == {"ErrorEquals": ["States.ALL"], "Output": "{% $states.errorOutput %}", "Next": "Failed"}
    (body,) = guarded["Branches"][0]["States"]["Charge.Body"]["Branches"]
    assert body["States"]["Charge"]["QueryLanguage"] == "JSONata" and body["States"]["Charge"]["End"] is True
    assert branch["StartAt"] == "Charge.Guarded"


def refused(document: Any, guard_states: Any) -> list[str]:
    with pytest.raises(IdempotencyConfigurationError) as raised:
        fragment_definition(document, guard_states)
    assert raised.value.construct_path == "Test/Step"
    return raised.value.problems


def test_an_unknown_state_a_choice_and_an_assign_are_refused_naming_the_state_and_the_fix():
    document = {
        "StartAt": "Which",
        "States": {
            "Which": {"Type": "Choice", "Choices": [{"Variable": "$.a", "IsPresent": True, "Next": "Keep"}], "Default": "Keep"},
            "Keep": task("keep", Assign={"kept": "yes"}, End=True),
        },
    }
    problems = refused(document, {"Wich": TRIP, "Which": TRIP, "Keep": TRIP})
    assert problems[0] == "guard_states: 'Wich' names no state of the definition given; its states: 'Which', 'Keep'"
    assert problems[1].startswith("guard_states: 'Which' (/States/Which) is a Choice state, which calls no service")
    assert problems[1].endswith("guard the Task, Parallel or Map state that does the work")
    assert problems[2].startswith("guard_states: 'Keep' (/States/Keep) has Assign") and "move the Assign to a Pass" in problems[2]
    assert len(problems) == 3


def test_a_catch_of_a_states_error_other_than_all_is_refused_with_the_fix():
    document = {
        "StartAt": "Charge",
        "States": {
            "Charge": task("charge", Catch=[{"ErrorEquals": ["States.TaskFailed"], "Next": "Failed"}], End=True),
            "Failed": {"Type": "Fail"},
        },
    }
    (problem,) = refused(document, {"Charge": TRIP})
    assert "catches States.TaskFailed" in problem and "catch States.ALL, or Idempotency.BodyFailed" in problem


def test_a_state_of_the_document_named_as_a_state_the_guard_generates_is_refused():
    document = {"StartAt": "A", "States": {"A": task("a", Next="A.Body"), "A.Body": {"Type": "Succeed"}}}
    (problem,) = refused(document, {"A": TRIP})
    assert "'A.Body'" in problem and "GuardedState(state_name_prefix=...)" in problem


def test_a_plain_state_machine_around_the_fragment_gets_the_guards_permissions():
    def build(s):
        step = AslFragment(
            s,
            "Step",
            definition_body={"StartAt": "A", "States": {"A": task("a", End=True)}},
            table=IdempotencyTable(s, "Table"),
            guard_states={"A": TRIP},
        )
        sfn.StateMachine(s, "Machine", definition_body=sfn.DefinitionBody.from_chainable(step))

    policies = resources(template(build), "AWS::IAM::Policy")
    (machine,) = [policy for name, policy in policies.items() if name.startswith("MachineRole")]
    statements = machine["Properties"]["PolicyDocument"]["Statement"]
    writes = [statement for statement in statements if statement["Action"] == "dynamodb:UpdateItem"]
    assert writes and writes[0]["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"] == ["Test/Step/A#*"]


def test_in_an_idempotent_state_machine_the_inner_guards_records_are_released_with_the_workflows():
    target = stack()
    workflow = IdempotentStateMachine(
        target,
        "Shop",
        table=IdempotencyTable(target, "Table"),
        definition_body={"StartAt": "Pay now", "States": {"Pay now": task("pay", End=True)}},
        key=TRIP,
        guard_states={"Pay now": TRIP},
    )
    assert [namespace for _, namespace in workflow.guard.records_in_its_graph()] == ["Test/Shop", "Test/Shop/Pay_now"]
    assert workflow.guards["Pay now"].namespace == "Test/Shop/Pay_now"
    assert workflow.guards["Pay now"].config.owner_state_machine_name is not None  # the owner check, as the whole's


def test_guard_states_on_a_chain_is_refused_with_the_fix():
    target = stack()
    with pytest.raises(IdempotencyConfigurationError) as raised:
        IdempotentStateMachine(
            target, "Shop", table=IdempotencyTable(target, "Table"), definition=sfn.Pass(target, "A"), guard_states={"A": TRIP}
        )
    assert raised.value.problems[0].startswith("guard_states: only the states of a document")
