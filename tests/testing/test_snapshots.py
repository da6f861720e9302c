"""idempotent_constructs/testing/snapshots.py: a synthesized stack as a snapshot that changes only where what
the stack says changes."""

from __future__ import annotations

import importlib.util
import sys

from aws_cdk import App, Stack
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks

from idempotent_constructs import IdempotencyTable, IdempotentStateMachine
from idempotent_constructs.testing import stable_template
from tests.conftest import ROOT

QUICKSTART = ROOT / "docs" / "samples" / "quickstart"


def orders(code_dir, *, version_reporting: bool = False) -> Stack:
    app = App(context={"aws:cdk:version-reporting": version_reporting})
    stack = Stack(app, "Orders")
    charge = lambda_.Function(
        stack,
        "Charge",
        runtime=lambda_.Runtime.PYTHON_3_13,
        handler="index.handler",
        code=lambda_.Code.from_asset(str(code_dir)),
    )
    step = tasks.LambdaInvoke(stack, "ChargeIt", lambda_function=charge.current_version)
    IdempotentStateMachine(stack, "Workflow", table=IdempotencyTable(stack, "Table"), definition=step)
    return stack


def code(tmp_path, name: str, body: str):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "index.py").write_text(f"def handler(event, context):\n    {body}\n")
    return folder


def test_a_change_of_a_functions_code_alone_leaves_the_snapshot_as_it_was(tmp_path):
    first = stable_template(orders(code(tmp_path, "a", "return event")))
    second = stable_template(orders(code(tmp_path, "b", "return {'charged': event}")))
    assert first == second
    (charge,) = [r for i, r in first["Resources"].items() if i.startswith("Charge") and r["Type"] == "AWS::Lambda::Function"]
    assert charge["Properties"]["Code"]["S3Key"] == "<asset-hash>.zip"
    assert any(logical_id.startswith("ChargeCurrentVersion<code-hash>") for logical_id in first["Resources"])


def test_what_the_cdk_adds_of_its_own_is_left_out_and_definitions_read_as_json(tmp_path):
    stable = stable_template(orders(code(tmp_path, "a", "return event"), version_reporting=True))
    assert "Parameters" not in stable and "Rules" not in stable and "Mappings" not in stable
    assert not [resource for resource in stable["Resources"].values() if resource["Type"] == "AWS::CDK::Metadata"]
    (machine,) = [r for r in stable["Resources"].values() if r["Type"] == "AWS::StepFunctions::StateMachine"]
    definition = machine["Properties"]["Definition"]
    assert "DefinitionString" not in machine["Properties"]
    assert definition["StartAt"] == "Idempotency.Acquire" and definition["States"]["ChargeIt"]["Type"] == "Task"
    assert all("aws:asset:path" not in resource.get("Metadata", {}) for resource in stable["Resources"].values())


def test_a_template_as_a_dict_is_taken_as_it_is():
    stack = Stack(App(), "Bare")
    sfn.StateMachine(stack, "Machine", definition_body=sfn.DefinitionBody.from_chainable(sfn.Pass(stack, "Only")))
    from aws_cdk.assertions import Template

    resources = stable_template(Template.from_stack(stack).to_json())["Resources"].values()  # the machine and its role
    (machine,) = [resource for resource in resources if resource["Type"] == "AWS::StepFunctions::StateMachine"]
    assert machine["Properties"]["Definition"]["States"]["Only"] == {"Type": "Pass", "End": True}


def test_the_guides_snapshot_test_of_the_quick_starts_stack_passes(snapshot, monkeypatch):
    # docs/samples/quickstart/test_orders_snapshot.py, as the testing guide shows it, beside the Quick start's orders.py.
    monkeypatch.syspath_prepend(str(QUICKSTART))
    monkeypatch.delitem(sys.modules, "orders", raising=False)
    spec = importlib.util.spec_from_file_location("test_orders_snapshot", QUICKSTART / "test_orders_snapshot.py")
    assert spec is not None and spec.loader is not None
    sample = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sample)
    sample.test_the_orders_stack_deploys_what_its_snapshot_says(snapshot)
