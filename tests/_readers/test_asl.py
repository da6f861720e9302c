"""idempotent_constructs/_readers/asl.py: a document read at synth time, its placeholders replaced, and what
Step Functions would refuse in it found before it is wrapped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_stepfunctions as sfn

from idempotent_constructs import AslFragment, DefinitionLocation, IdempotencyGuard, IdempotencyTable, IdempotentStateMachine
from idempotent_constructs._readers import asl
from idempotent_constructs._readers.assembly import substitute, unfilled
from idempotent_constructs.testing import state_machine_definitions
from tests.stacks import DOCUMENTS, SAGA_FUNCTIONS

SAGA_PLACEHOLDERS = {*SAGA_FUNCTIONS, "snsTopicArn"}


def document(definition: dict) -> asl.Document:
    read, found = asl.read(definition, None)
    assert found == [] and read is not None
    return read


def test_reads_a_file_and_replaces_each_placeholder_with_its_value():
    values = {name: f"arn:{name}" for name in SAGA_PLACEHOLDERS}
    read, found = asl.read(sfn.DefinitionBody.from_file(str(DOCUMENTS / "saga-pattern-sam.asl.json")), values)
    assert found == [] and read is not None
    assert read.definition["States"]["ReserveFlight"]["Parameters"]["FunctionName"] == "arn:reserveFlightFunction"
    assert read.language == "JSONPath" and asl.problems(read) == []


def test_fails_with_the_name_of_each_placeholder_without_a_value():
    read, found = asl.read(
        sfn.DefinitionBody.from_file(str(DOCUMENTS / "saga-pattern-sam.asl.json")), {"snsTopicArn": "arn:topic"}
    )
    assert read is None
    assert len(found) == len(SAGA_PLACEHOLDERS) - 1
    assert found[0] == (
        f"definition_substitutions: {DOCUMENTS / 'saga-pattern-sam.asl.json'} uses ${{reserveFlightFunction}}, which has "
        'no value; pass definition_substitutions={"reserveFlightFunction": ...}'
    )


def test_a_cdk_token_in_the_text_is_a_value_not_a_placeholder():
    text, substitutions = '{"a": "${Token[TOKEN.12]}", "b": "${Fn}"}', {"Fn": "${Token[TOKEN.13]}"}
    assert unfilled(text, substitutions) == []
    assert substitute(text, substitutions) == '{"a": "${Token[TOKEN.12]}", "b": "${Token[TOKEN.13]}"}'


def test_a_value_naming_another_placeholder_is_replaced_again_as_cloudformation_does():
    text = '{"StartAt": "W", "States": {"W": {"Type": "Pass", "Comment": "${Outer}", "End": true}}}'
    read, found = asl.read(sfn.DefinitionBody.from_string(text), {"Outer": "in ${Inner}", "Inner": "eu-west-1"})
    assert found == [] and read is not None and read.definition["States"]["W"]["Comment"] == "in eu-west-1"


def test_values_naming_each_other_in_a_circle_are_a_problem_not_a_crash():
    text = '{"StartAt": "W", "States": {"W": {"Type": "Pass", "Comment": "${A}", "End": true}}}'
    read, found = asl.read(sfn.DefinitionBody.from_string(text), {"A": "${B}", "B": "${A}"})
    assert read is None
    assert len(found) == 1 and found[0].startswith("definition_substitutions: the values for the text given name each other")


def test_a_placeholder_may_stand_where_a_number_goes_as_cloudformation_replaces_text():
    text = '{"StartAt": "W", "States": {"W": {"Type": "Wait", "Seconds": ${WaitSeconds}, "End": true}}}'
    read, found = asl.read(sfn.DefinitionBody.from_string(text), {"WaitSeconds": "10"})
    assert found == [] and read is not None and read.definition["States"]["W"]["Seconds"] == 10


def test_fails_when_the_text_is_not_json_and_says_where():
    read, found = asl.read(sfn.DefinitionBody.from_string('{"StartAt": "A",\n "States": {'), None)
    assert read is None
    assert found == [
        "definition_body: the text given is not JSON: Expecting property name enclosed in double quotes (line 2, column 13)"
    ]


def test_reads_a_yaml_file_as_step_functions_takes_one(tmp_path):
    path = tmp_path / "statemachine.asl.yaml"
    path.write_text("StartAt: Work\nStates:\n  Work:\n    Type: Pass\n    End: true\n")
    read, found = asl.read(sfn.DefinitionBody.from_file(str(path)), None)
    assert found == [] and read is not None and read.definition["States"]["Work"] == {"Type": "Pass", "End": True}


def test_fails_when_the_file_cannot_be_read():
    read, found = asl.read(sfn.DefinitionBody.from_file("no/such/statemachine.asl.json"), None)
    assert read is None and found == ["definition_body: cannot read no/such/statemachine.asl.json: No such file or directory"]


def test_fails_for_every_transition_that_names_no_state_in_its_own_scope():
    found = asl.problems(
        document(
            {
                "StartAt": "Begin",
                "States": {
                    "Check": {
                        "Type": "Choice",
                        "Choices": [{"Variable": "$.a", "IsPresent": True, "Next": "Nowhere"}],
                        "Default": "Gone",
                    },
                    "Work": {
                        "Type": "Task",
                        "Resource": "arn:x",
                        "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Lost"}],
                        "Next": "Check",
                    },
                    "Fork": {
                        "Type": "Parallel",
                        "Branches": [{"StartAt": "Inner", "States": {"Inner": {"Type": "Pass", "Next": "Work"}}}],
                        "End": True,
                    },
                },
            }
        )
    )
    assert [problem.split(" names no state")[0] for problem in found] == [
        "definition_body: /StartAt 'Begin'",
        "definition_body: /States/Check/Default 'Gone'",
        "definition_body: /States/Check/Choices[0]/Next 'Nowhere'",
        "definition_body: /States/Work/Catch[0]/Next 'Lost'",
        "definition_body: /States/Fork/Branches[0]/States/Inner/Next 'Work'",
    ]
    assert found[0].endswith("names no state of the document; its states: 'Check', 'Work', 'Fork'")


def test_fails_when_a_state_name_is_used_twice_or_is_reserved_and_says_how_to_avoid_it():
    found = asl.problems(
        document(
            {
                "StartAt": "G.Body",
                "States": {
                    "G.Body": {"Type": "Pass", "Next": "Fork"},
                    "Fork": {
                        "Type": "Parallel",
                        "Branches": [{"StartAt": "Fork", "States": {"Fork": {"Type": "Succeed"}}}],
                        "End": True,
                    },
                },
            }
        ),
        reserved={"G.Body"},
        clash="has the name of a state the guard generates; rename it",
    )
    assert found == [
        "definition_body: the state 'G.Body' (/States/G.Body) has the name of a state the guard generates; rename it",
        "definition_body: the state name 'Fork' is used twice (/States/Fork and /States/Fork/Branches[0]/States/Fork); "
        "Step Functions needs every state name of a state machine to differ: rename one in the document",
    ]


def test_fails_for_each_jsonata_expression_step_functions_refuses_with_where_it_is():
    found = asl.problems(
        document(
            {
                "QueryLanguage": "JSONata",
                "StartAt": "Work",
                "States": {
                    "Work": {"Type": "Pass", "Output": "{% order.id %}", "Next": "Done"},
                    "Done": {"Type": "Pass", "Output": "{% ( %}", "End": True},
                },
            }
        )
    )
    assert found[0] == (
        "definition_body: UNSUPPORTED_JSONATA_EXPRESSION at /States/Work/Output: Reference to 'order' at the top level is "
        "not supported. (Step Functions refuses it when the state machine is created)"
    )
    assert found[1].startswith("definition_body: INVALID_JSONATA_EXPRESSION at /States/Done/Output: ")


def test_as_a_branch_each_jsonata_state_declares_its_language_and_nothing_else_changes():
    text = (DOCUMENTS / "common-fallback-state-jsonata.asl.json").read_text()
    read, _ = asl.read(sfn.DefinitionBody.from_string(text), {f"{n}LambdaArn": f"arn:{n}" for n in ("First", "Second", "Third")})
    assert read is not None and read.language == "JSONata"
    branch = read.branch()
    original = json.loads(text)
    assert set(branch) == {"StartAt", "States"} and branch["StartAt"] == original["StartAt"]
    for name, state in branch["States"].items():
        assert state.pop("QueryLanguage") == "JSONata"
        expected = original["States"][name]
        if "Arguments" in expected:
            expected["Arguments"]["FunctionName"] = f"arn:{name.removesuffix('LambdaState')}"
        assert state == expected


def test_a_jsonpath_document_is_embedded_without_a_change():
    read, _ = asl.read(
        sfn.DefinitionBody.from_file(str(DOCUMENTS / "saga-pattern-sam.asl.json")), {n: "v" for n in SAGA_PLACEHOLDERS}
    )
    assert read is not None
    original = json.loads(substitute((DOCUMENTS / "saga-pattern-sam.asl.json").read_text(), {n: "v" for n in SAGA_PLACEHOLDERS}))
    assert read.branch() == {"StartAt": original["StartAt"], "States": original["States"]}


# Each document of tests/asl with a value for each placeholder (a plain text where a number goes).
ROUND_TRIP = {
    "saga-pattern-sam.asl.json": {name: f"arn:aws:lambda:us-east-1:123456789012:function:{name}" for name in SAGA_PLACEHOLDERS},
    "common-fallback-state-jsonata.asl.json": {f"{n}LambdaArn": f"arn:{n}" for n in ("First", "Second", "Third")},
    "refund.asl.json": {"RefundFunction": "arn:refund"},
    "fan-out.asl.json": {"Carrier": "express-air", "SettleSeconds": "1"},
    "nulls.asl.json": {},
}


def _states_of(definition: dict, first: str) -> dict:
    """The ``States`` of the branch (at any depth) that starts at ``first``."""
    if isinstance(definition, dict):
        if definition.get("StartAt") == first and "States" in definition and "Idempotency.Acquire" not in definition["States"]:
            return definition["States"]
        values = definition.values()
    elif isinstance(definition, list):
        values = definition
    else:
        return {}
    return next((found for value in values if (found := _states_of(value, first))), {})


def _declared(states: dict, file_states: dict, language: str) -> dict:
    """``states`` less the ``QueryLanguage`` a branch declares on a state whose file left it to the top level."""
    kept = {}
    for name, state in states.items():
        state = dict(state)
        if "QueryLanguage" not in file_states[name] and state.get("QueryLanguage") == language == asl.JSONATA:
            del state["QueryLanguage"]
        for nested in ("Branches", "Iterator", "ItemProcessor"):
            if nested == "Branches" and nested in state:
                state[nested] = [
                    {**branch, "States": _declared(branch["States"], file_branch["States"], language)}
                    for branch, file_branch in zip(state[nested], file_states[name][nested], strict=True)
                ]
            elif nested in state:
                state[nested] = {
                    **state[nested],
                    "States": _declared(state[nested]["States"], file_states[name][nested]["States"], language),
                }
        kept[name] = state
    return kept


@pytest.mark.parametrize("construct", ["workflow", "workflow INLINE", "workflow ASSET", "fragment", "guarded fragment"])
@pytest.mark.parametrize("file", ROUND_TRIP)
def test_every_document_reaches_the_definition_exactly_as_its_file_says_every_null_kept(file, construct, tmp_path):
    substitutions = ROUND_TRIP[file]
    text = substitute((DOCUMENTS / file).read_text(), substitutions)
    original = json.loads(text)
    app = App(outdir=str(tmp_path))
    stack = Stack(app, "Documents")
    body = sfn.DefinitionBody.from_file(str(DOCUMENTS / file))
    table = IdempotencyTable(stack, "Table")
    if construct.startswith("workflow"):
        location = {"workflow": None, "workflow INLINE": DefinitionLocation.INLINE, "workflow ASSET": DefinitionLocation.ASSET}
        IdempotentStateMachine(
            stack,
            "Workflow",
            table=table,
            definition_body=body,
            definition_substitutions=substitutions or None,
            definition_location=location[construct],
        )
    else:
        fragment = AslFragment(stack, "Fragment", definition_body=body, definition_substitutions=substitutions or None)
        chain = fragment if construct == "fragment" else IdempotencyGuard(stack, "Once", table=table, body=fragment)
        sfn.StateMachine(stack, "Machine", definition_body=sfn.DefinitionBody.from_chainable(chain))
    assembly = app.synth()
    if construct == "workflow ASSET":
        (definition,) = [
            json.loads(path.read_text()) for path in Path(assembly.directory).glob("asset.*/definition.asl.json")
        ] or [json.loads(path.read_text()) for path in Path(assembly.directory).glob("asset.*.json")]
    else:
        (definition,) = state_machine_definitions(assembly.get_stack_by_name("Documents").template).values()
    states = _states_of(definition, original["StartAt"])
    language = original.get("QueryLanguage", asl.JSONPATH)
    assert _declared(states, original["States"], language) == original["States"]
