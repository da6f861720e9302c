"""A hundred guarded workflows in one app (issue 25), and definitions kept as S3 assets
(``DefinitionLocation.ASSET``), which run the definition the template would have held."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from aws_cdk import App, Stack
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from idempotent_constructs import DefinitionLocation, IdempotencyKey, IdempotencyTable, IdempotentStateMachine
from idempotent_constructs.definition import SUBSTITUTION_PREFIX
from idempotent_constructs.testing import state_machine_definitions

# CloudFormation's limit for a template sent through S3, as `cdk deploy` sends it.
TEMPLATE_LIMIT = 1_000_000
# The README's advice for the default location: this many guarded workflows a stack.
WORKFLOWS_PER_STACK = 25


def chain(scope: Construct) -> sfn.IChainable:
    return sfn.Pass(scope, "Validate").next(sfn.Pass(scope, "Ship"))


def workflows(
    stack: Stack, count: int, start: int = 0, location: DefinitionLocation | None = None, table: IdempotencyTable | None = None
) -> None:
    table = table or IdempotencyTable(stack, "Idempotency")
    for index in range(start, start + count):
        scope = Construct(stack, f"Workflow{index}")
        IdempotentStateMachine(
            scope,
            "Orders",
            table=table,
            definition=chain(scope),
            key=IdempotencyKey.from_paths("$.order.id"),
            definition_location=location,
        )


def synthesized(app: App) -> dict[str, tuple[dict[str, Any], int, Path]]:
    """Each stack's template, its size in bytes as written, and the assembly's directory."""
    assembly = app.synth()
    stacks = {}
    for artifact in assembly.stacks:
        path = Path(artifact.template_full_path)
        stacks[artifact.stack_name] = (json.loads(path.read_text()), path.stat().st_size, Path(assembly.directory))
    return stacks


def asset_definition(template: dict[str, Any], logical_id: str, directory: Path) -> dict[str, Any]:
    """The definition a state machine's asset holds, with its substitutions made: written back as the
    template's ``Fn::Join`` would hold it, and rendered as the template's definitions are."""
    properties = template["Resources"][logical_id]["Properties"]
    text = (directory / f"asset.{properties['DefinitionS3Location']['Key']}").read_text()
    pieces = re.split(r"\$\{(" + SUBSTITUTION_PREFIX + r"\d+)\}", text)
    # re.split keeps the names it split on at the odd places.
    parts = [properties["DefinitionSubstitutions"][piece] if index % 2 else piece for index, piece in enumerate(pieces)]
    joined = {"Type": "AWS::StepFunctions::StateMachine", "Properties": {"DefinitionString": {"Fn::Join": ["", parts]}}}
    return state_machine_definitions({"Resources": {logical_id: joined}})[logical_id]


def test_a_hundred_guarded_workflows_synthesize_in_stacks_of_twenty_five_that_share_one_table():
    app = App()
    table = IdempotencyTable(Stack(app, "Records"), "Idempotency")
    for first in range(0, 100, WORKFLOWS_PER_STACK):
        workflows(Stack(app, f"Orders{first // WORKFLOWS_PER_STACK}"), WORKFLOWS_PER_STACK, first, table=table)

    stacks = synthesized(app)

    assert len(stacks) == 5
    machines = [
        logical_id
        for template, _, _ in stacks.values()
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] == "AWS::StepFunctions::StateMachine"
    ]
    assert len(machines) == 100
    assert all(size <= TEMPLATE_LIMIT for _, size, _ in stacks.values()), {name: size for name, (_, size, _) in stacks.items()}


def test_a_hundred_guarded_workflows_with_their_definitions_as_assets_fit_one_stack():
    app = App()
    workflows(Stack(app, "Orders"), 100, location=DefinitionLocation.ASSET)

    ((template, size, directory),) = synthesized(app).values()

    machines = {
        logical_id: resource
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] == "AWS::StepFunctions::StateMachine"
    }
    assert len(machines) == 100
    assert size <= TEMPLATE_LIMIT
    assert all("DefinitionString" not in resource["Properties"] for resource in machines.values())
    assert all((directory / f"asset.{r['Properties']['DefinitionS3Location']['Key']}").is_file() for r in machines.values())


def _one(location: DefinitionLocation | None) -> tuple[dict[str, Any], Path]:
    app = App()
    workflows(Stack(app, "Orders"), 1, location=location)
    ((template, _, directory),) = synthesized(app).values()
    return template, directory


def _policy(template: dict[str, Any]) -> list[Any]:
    (policy,) = [
        resource["Properties"]["PolicyDocument"]["Statement"]
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] == "AWS::IAM::Policy" and logical_id.startswith("Workflow0")
    ]
    return sorted(policy, key=json.dumps)


def test_an_asset_definition_is_the_template_definition_once_its_substitutions_are_made():
    inline, _ = _one(None)
    asset, directory = _one(DefinitionLocation.ASSET)
    (logical_id,) = state_machine_definitions(inline)

    assert asset_definition(asset, logical_id, directory) == state_machine_definitions(inline)[logical_id]


def test_an_asset_definition_grants_the_state_machine_the_same_permissions():
    # CloudFormation reads the asset with the deployer's credentials: the role needs nothing more.
    inline, _ = _one(None)
    asset, _ = _one(DefinitionLocation.ASSET)

    assert _policy(asset) == _policy(inline)
