"""idempotent_constructs/asl_fragment.py: AslFragment, an existing workflow as one step of a chain."""

from __future__ import annotations

import pytest
from aws_cdk import aws_stepfunctions as sfn

from idempotent_constructs import AslFragment, IdempotencyConfigurationError, IdempotencyGuard, IdempotencyTable
from tests.stacks import DOCUMENTS
from tests.synth import only_definition, stack, template

REFUND = sfn.DefinitionBody.from_file(str(DOCUMENTS / "refund.asl.json"))
WORK = {"StartAt": "Work", "States": {"Work": {"Type": "Pass", "End": True}}, "Comment": "one step"}


def refund(scope, construct_id="RefundStep", **options):
    return AslFragment(
        scope, construct_id, definition_body=REFUND, definition_substitutions={"RefundFunction": "arn:f"}, **options
    )


def machine(build):
    return only_definition(
        template(lambda s: sfn.StateMachine(s, "Machine", definition_body=sfn.DefinitionBody.from_chainable(build(s))))
    )


def test_in_a_chain_the_document_runs_in_a_parallel_that_outputs_the_documents_own_output():
    definition = machine(lambda s: sfn.Pass(s, "Before").next(AslFragment(s, "Step", definition_body=WORK)))
    assert definition["States"]["Step"] == {
        "Type": "Parallel",
        "Branches": [{"StartAt": "Work", "States": {"Work": {"Type": "Pass", "End": True}}}],
        "OutputPath": "$[0]",
        "Comment": "one step",
        "End": True,
    }


def test_a_jsonata_document_is_unwrapped_in_jsonata_and_its_states_declare_their_language():
    state = machine(lambda s: refund(s, state_name="Refund the trip"))["States"]["Refund the trip"]
    assert (state["QueryLanguage"], state["Output"]) == ("JSONata", "{% $states.result[0] %}")
    branch = state["Branches"][0]
    assert {name: s["QueryLanguage"] for name, s in branch["States"].items()} == dict.fromkeys(branch["States"], "JSONata")
    assert branch["States"]["Refund"]["Arguments"]["FunctionName"] == "arn:f"


def test_as_a_guards_lone_body_the_guards_body_holds_the_document_itself():
    def build(s):
        return IdempotencyGuard(s, "RefundOnce", table=IdempotencyTable(s, "Table"), body=refund(s))

    definition = machine(build)
    assert "RefundStep" not in definition["States"]  # no Parallel of the fragment's own
    body = definition["States"]["RefundOnce.Body"]
    assert body["Type"] == "Parallel" and "QueryLanguage" not in body and body["Next"] == "RefundOnce.Complete"
    assert body["Branches"][0]["StartAt"] == "Anything to refund?"
    assert body["Catch"] == [{"ErrorEquals": ["States.ALL"], "Next": "RefundOnce.Release"}]


def test_with_a_retry_of_its_own_it_keeps_its_parallel_inside_the_guards_body():
    def build(s):
        step = refund(s)
        step.state.add_retry(errors=["States.TaskFailed"], max_attempts=2)
        return IdempotencyGuard(s, "RefundOnce", table=IdempotencyTable(s, "Table"), body=step)

    body = machine(build)["States"]["RefundOnce.Body"]
    step = body["Branches"][0]["States"]["RefundStep"]
    assert body["Branches"][0]["StartAt"] == "RefundStep" and step["Type"] == "Parallel" and step["Retry"]


def test_fails_when_a_state_of_the_document_has_the_name_of_a_state_the_guard_generates(tmp_path):
    path = tmp_path / "clash.asl.json"
    path.write_text('{"StartAt": "Charge.Body", "States": {"Charge.Body": {"Type": "Pass", "End": true}}}')
    with pytest.raises(IdempotencyConfigurationError) as raised:
        machine(
            lambda s: IdempotencyGuard(
                s,
                "Charge",
                table=IdempotencyTable(s, "Table"),
                body=AslFragment(s, "Step", definition_body=sfn.DefinitionBody.from_file(str(path))),
            )
        )
    assert raised.value.construct_path == "Test/Charge"
    assert raised.value.problems == [
        f"body: the state 'Charge.Body' of {path} has the name of a state this guard generates; pass "
        "state_name_prefix=... (now 'Charge.') or rename the state in the document"
    ]


def test_fails_synth_where_its_parallel_is_rendered_with_the_name_of_a_state_of_the_document():
    target = stack()
    sfn.StateMachine(
        target,
        "Machine",
        definition_body=sfn.DefinitionBody.from_chainable(
            sfn.Pass(target, "Before").next(AslFragment(target, "Work", definition_body=WORK))
        ),
    )
    with pytest.raises(RuntimeError) as raised:
        target.node.root.synth()
    assert (
        "[Test/Work/Work] definition_body: the state 'Work' of the definition given has the name of the Parallel state "
        "that runs the document; pass state_name=... to name that otherwise"
    ) in str(raised.value)


def test_as_a_guards_lone_body_its_own_name_may_be_a_state_of_the_document():
    definition = machine(
        lambda s: IdempotencyGuard(
            s, "Once", table=IdempotencyTable(s, "Table"), body=AslFragment(s, "Work", definition_body=WORK)
        )
    )
    assert definition["States"]["Once.Body"]["Branches"][0]["States"] == {"Work": {"Type": "Pass", "End": True}}


def test_fails_with_every_problem_of_the_document_at_once_under_its_construct_path():
    with pytest.raises(IdempotencyConfigurationError) as raised:
        machine(
            lambda s: AslFragment(
                s,
                "Step",
                definition_body=sfn.DefinitionBody.from_string(
                    '{"QueryLanguage": "JSONata", "StartAt": "A", "States": {"A": {"Type": "Task", '
                    '"Resource": "${Fn}", "Output": "{% result %}", "Next": "B"}}}'
                ),
            )
        )
    assert raised.value.construct_path == "Test/Step"
    assert [problem.split(":")[0] for problem in raised.value.problems] == ["definition_substitutions"]
