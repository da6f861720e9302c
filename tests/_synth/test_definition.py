"""Where a definition lives (``definition``): substitutions made as CloudFormation makes them, and a
definition shared between workflows that gives each exactly its own definition back."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, CfnParameter, Duration, Fn, Stack, Token
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks

from idempotent_constructs import (
    DefinitionLocation,
    FailurePolicy,
    IdempotencyGuard,
    IdempotencyKey,
    IdempotencyPayload,
    IdempotencyTable,
    IdempotentStateMachine,
)
from idempotent_constructs._readers.assembly import substitute
from idempotent_constructs._synth import definition
from idempotent_constructs.testing import state_machine_definitions


def test_substitutions_are_made_again_on_their_result_and_an_unnamed_placeholder_stays():
    assert substitute("${A} ${B} ${C}", {"A": "${B}", "B": "b"}) == "b b ${C}"


def test_substitutions_that_refer_to_each_other_endlessly_are_refused():
    with pytest.raises(ValueError, match="endlessly"):
        substitute("${A}", {"A": "${B}", "B": "${A}"})


def _template(*workflows: tuple[str, IdempotencyKey, sfn.IChainable | None], location: DefinitionLocation | None = None) -> dict:
    stack = Stack(App(), "Orders")
    table = IdempotencyTable(stack, "Idempotency")
    for name, key, body in workflows:
        IdempotentStateMachine(
            stack,
            name,
            table=table,
            key=key,
            definition=body or sfn.Pass(stack, f"{name}Ship"),
            namespace=name.lower(),
            definition_location=location,
        )
    return stack.node.root.synth().get_stack_by_name("Orders").template


def test_workflows_of_the_same_options_share_one_text_whatever_their_keys_namespaces_and_bodies():
    template = _template(
        ("Orders", IdempotencyKey.from_paths("$.order.id"), None),
        ("Refunds", IdempotencyKey.from_paths("$.refund.id", "$.customer"), None),
    )
    (texts,) = template["Mappings"].values()
    assert len(texts) == 1
    machines = [r["Properties"] for r in template["Resources"].values() if r["Type"] == "AWS::StepFunctions::StateMachine"]
    assert machines[0]["DefinitionString"] == machines[1]["DefinitionString"]
    assert {"IdempotencyBody", "IdempotencyNamespace", "IdempotencyKeySelection"} <= set(machines[0]["DefinitionSubstitutions"])


def test_workflows_whose_payloads_differ_only_in_their_selections_share_one_text_and_each_gets_its_own_back():
    def template(location: DefinitionLocation | None) -> dict:
        stack = Stack(App(), "Orders")
        table = IdempotencyTable(stack, "Idempotency")
        for name, payload in (
            ("Queue", IdempotencyPayload.from_paths("$[0].body")),
            ("Api", IdempotencyPayload.from_paths("$.body", "$.path")),
            ("Pipe", IdempotencyPayload.from_jsonata("$parse($states.input[0].body)")),
            ("Rule", IdempotencyPayload.from_jsonata("$states.input.detail")),
        ):
            IdempotentStateMachine(
                stack,
                name,
                table=table,
                key=IdempotencyKey.from_paths("$[0].messageId"),
                payload=payload,
                definition=sfn.Pass(stack, f"{name}Ship"),
                definition_location=location,
            )
        return stack.node.root.synth().get_stack_by_name("Orders").template

    shared = template(None)
    (texts,) = shared["Mappings"].values()
    assert len(texts) == 2  # one per payload kind
    assert state_machine_definitions(shared) == state_machine_definitions(template(DefinitionLocation.INLINE))


def test_each_workflow_gets_exactly_the_definition_the_cdk_would_write_whole():
    # One-letter namespaces, as "a", occur everywhere in the text: only whole literals are cut out.
    workflows = [("A", IdempotencyKey.from_jsonata("$states.input.a"), None), ("B", IdempotencyKey.whole_input(), None)]
    assert state_machine_definitions(_template(*workflows)) == state_machine_definitions(
        _template(*workflows, location=DefinitionLocation.INLINE)
    )


def _machine(body: Callable[[Stack], sfn.IChainable], **options: Any) -> dict:
    stack = Stack(App(), "Orders")
    IdempotentStateMachine(
        stack,
        "Orders",
        table=IdempotencyTable(stack, "Idempotency"),
        key=IdempotencyKey.from_paths("$.id"),
        definition=body(stack),
        **options,
    )
    return stack.node.root.synth().get_stack_by_name("Orders").template


def test_a_definition_in_an_asset_is_the_one_written_whole_a_nested_guards_numbers_known_at_synth_included(tmp_path):
    def machine(location: DefinitionLocation, outdir: str | None = None) -> tuple[dict, Any]:
        app = App(outdir=outdir)
        stack = Stack(app, "Orders")
        table = IdempotencyTable(stack, "Idempotency")
        inner = IdempotencyGuard(stack, "Charge", table=table, body=sfn.Pass(stack, "ChargeCard"))
        IdempotentStateMachine(stack, "Orders", table=table, definition=inner, definition_location=location)
        assembly = app.synth()
        return assembly.get_stack_by_name("Orders").template, Path(assembly.directory)

    in_asset, directory = machine(DefinitionLocation.ASSET, str(tmp_path))
    (location,) = [
        r["Properties"]["DefinitionS3Location"]
        for r in in_asset["Resources"].values()
        if r["Type"] == "AWS::StepFunctions::StateMachine"
    ]
    assert '"MaxAttempts":${IdempotencyToken' in (directory / f"asset.{location['Key']}").read_text()  # the poll's, at synth
    assert state_machine_definitions(in_asset, directory) == state_machine_definitions(machine(DefinitionLocation.INLINE)[0])


def test_a_body_that_holds_a_placeholder_of_ours_keeps_its_definition_whole():
    # A body naming ${IdempotencyNamespace} would be substituted again by CloudFormation: kept whole.
    template = _machine(lambda stack: sfn.Pass(stack, "Say", result=sfn.Result.from_string("${IdempotencyNamespace}")))
    assert "Mappings" not in template
    (definition,) = state_machine_definitions(template).values()
    (branch,) = definition["States"]["Idempotency.Body"]["Branches"]
    assert branch["States"]["Say"]["Result"] == "${IdempotencyNamespace}"


def _parameter(stack: Stack) -> CfnParameter:
    return CfnParameter(stack, "Greeting", type="String")


@pytest.mark.parametrize(
    ("case", "body", "options"),
    [
        # The CDK escapes the quote it joins with; a list token and a number token it writes as JSON too.
        (
            "an escaped token",
            lambda s: sfn.Pass(s, "Say", result=sfn.Result.from_string(Fn.join('"', ["a", _parameter(s).value_as_string]))),
            {},
        ),
        (
            "a list token",
            lambda s: sfn.Pass(s, "Say", result=sfn.Result.from_object({"s": Fn.split(",", _parameter(s).value_as_string)})),
            {},
        ),
        ("a number token", lambda s: sfn.Pass(s, "Say"), {"timeout": Duration.seconds(Token.as_number(Fn.ref("Seconds")))}),
    ],
)
def test_a_definition_the_cdk_writes_with_tokens_it_escapes_or_encodes_is_kept_whole(case, body, options):
    template = _machine(body, **options)
    assert "Mappings" not in template, case
    (machine,) = [r["Properties"] for r in template["Resources"].values() if r["Type"] == "AWS::StepFunctions::StateMachine"]
    assert "DefinitionSubstitutions" not in machine


def test_a_distributed_map_in_the_body_gets_its_permissions_on_the_state_machine():
    def body(stack: Stack) -> sfn.IChainable:
        return sfn.DistributedMap(stack, "EachOrder").item_processor(sfn.Pass(stack, "Ship"))

    template = _machine(body)
    policies = [r for logical_id, r in template["Resources"].items() if "DistributedMapPolicy" in logical_id]
    assert len(policies) == 1
    assert "states:StartExecution" in json.dumps(policies[0])


def test_a_stack_of_more_than_a_hundred_texts_spreads_them_over_mappings_of_a_hundred_each_once():
    from idempotent_constructs._synth.definition import _shared_definitions

    stack = Stack(App(), "Orders")
    shared = _shared_definitions(stack)
    assert _shared_definitions(stack) is shared  # one a stack
    found = [stack.resolve(shared.find(f"text {index}")) for index in range(205)]
    assert stack.resolve(shared.find("text 3")) == found[3]
    assert found[150]["Fn::FindInMap"][0] == "IdempotentDefinitions2"
    assert [stack.resolve(mapping.logical_id) for mapping in shared.node.children] == [
        "IdempotentDefinitions",
        "IdempotentDefinitions2",
        "IdempotentDefinitions3",
    ]


@pytest.mark.parametrize("released", [False, True], ids=["one Task", "a chain released when the execution fails"])
def test_workflows_whose_bodies_run_bare_share_one_text_whatever_their_states_are_named(released):
    # A body that runs bare sits in the definition's top level, its states' names in the guard's transitions:
    # they are each workflow's own, cut out of the shared text like the branches of a Body.
    def template(location: DefinitionLocation | None) -> dict:
        stack = Stack(App(), "Orders")
        table = IdempotencyTable(stack, "Idempotency")
        for name in ("Charge", "Refund"):
            work = tasks.EvaluateExpression(stack, f"{name}Work", expression="$.amount * 2")
            options = {"on_failure": FailurePolicy.RELEASE_WHEN_EXECUTION_FAILS} if released else {}
            IdempotentStateMachine(
                stack,
                name,
                table=table,
                definition=work.next(sfn.Pass(stack, f"{name}Done")) if released else work,
                definition_location=location,
                **options,
            )
        return stack.node.root.synth().get_stack_by_name("Orders").template

    shared = template(None)
    (texts,) = shared["Mappings"].values()
    assert len(texts) == 1
    assert state_machine_definitions(shared) == state_machine_definitions(template(DefinitionLocation.INLINE))


@pytest.mark.parametrize(
    ("case", "result", "shared", "checked_again"),
    [
        (
            "a plain result",
            {"text": 'quotes " and \\ backslashes, \n controls \u0001, \u2028 and emoji \U0001f600', "n": 2**53},
            True,
            False,
        ),
        ("a float, whose exponent JavaScript writes otherwise", {"ratio": 1e-7}, False, True),
        ("a key JavaScript puts first (the CDK gave it first already)", {"b": 1, "1": 2}, True, True),
        ("a lone surrogate, which JavaScript escapes", {"text": "\ud800"}, False, True),
        ("a key the CDK's resolve rewrites", {"$IntrinsicKey$x": ["k", "v"]}, False, True),
    ],
)
def test_a_workflow_alike_an_earlier_one_is_written_as_if_its_text_were_checked_again(
    monkeypatch, case, result, shared, checked_again
):
    # The first workflow's shared text is checked against the CDK's writing (its whole definition sent to the CDK);
    # a later one alike is not checked again where Python and the CDK write what differs alike
    # (definition._written_alike), and is otherwise: the template is the same either way.
    def template() -> tuple[str, int]:
        sent = []
        writes = Stack.to_json_string
        monkeypatch.setattr(
            Stack, "to_json_string", lambda self, *args, **kwargs: sent.append(1) or writes(self, *args, **kwargs)
        )
        stack = Stack(App(), "Orders")
        table = IdempotencyTable(stack, "Idempotency")
        for name, body in (("Orders", {"plain": True}), ("Refunds", result), ("Returns", {"plain": "again"})):
            chain = sfn.Pass(stack, f"{name}Say", result=sfn.Result.from_object(body)).next(sfn.Pass(stack, f"{name}Ship"))
            IdempotentStateMachine(stack, name, table=table, definition=chain, namespace=name)
        written = json.dumps(stack.node.root.synth().get_stack_by_name("Orders").template)
        monkeypatch.setattr(Stack, "to_json_string", writes)
        return written, len(sent)

    written, checks = template()
    machines = [
        r["Properties"] for r in json.loads(written)["Resources"].values() if r["Type"] == "AWS::StepFunctions::StateMachine"
    ]
    assert ["DefinitionSubstitutions" in machine for machine in machines] == [True, shared, True], case
    assert checks == (2 if checked_again else 1), case  # Orders, and Refunds where it is checked again; never Returns
    monkeypatch.setattr(definition, "_written_alike", lambda value, text: False)  # each text checked
    assert template() == (written, 3), case
