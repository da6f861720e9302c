"""A hundred guarded workflows in one stack (issue 25), and every definition location
(``DefinitionLocation``) giving Step Functions the same definition and the state machine the same
permissions."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from idempotent_constructs import DefinitionLocation, IdempotencyKey, IdempotencyTable, IdempotentStateMachine
from idempotent_constructs.testing import TEMPLATE_MAX_BYTES, state_machine_definitions
from tests.synth import role_statements


def chain(scope: Construct) -> sfn.IChainable:
    return sfn.Pass(scope, "Validate").next(sfn.Pass(scope, "Ship"))


def workflows(
    stack: Stack,
    count: int,
    location: DefinitionLocation | None = None,
    table: IdempotencyTable | None = None,
    key: Callable[[int], IdempotencyKey] = lambda index: IdempotencyKey.from_paths("$.order.id"),
) -> None:
    table = table or IdempotencyTable(stack, "Idempotency")
    for index in range(count):
        scope = Construct(stack, f"Workflow{index}")
        IdempotentStateMachine(
            scope,
            "Orders",
            table=table,
            definition=chain(scope),
            key=key(index),
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
    """The definition a state machine's asset holds, with its substitutions made as CloudFormation makes
    them, rendered as the template's definitions are."""
    return state_machine_definitions(template, directory)[logical_id]


@pytest.mark.scale
def test_a_hundred_guarded_workflows_with_keys_of_their_own_fit_one_stack_by_default():
    app = App()
    table = IdempotencyTable(Stack(app, "Records"), "Idempotency")  # in a stack of its own, as teams share one
    workflows(Stack(app, "Orders"), 100, table=table, key=lambda index: IdempotencyKey.from_paths(f"$.order.line{index}"))

    template, size, _ = synthesized(app)["Orders"]

    machines = [resource for resource in template["Resources"].values() if resource["Type"] == "AWS::StepFunctions::StateMachine"]
    assert len(machines) == 100
    assert size <= TEMPLATE_MAX_BYTES
    # One protocol text serves them all; the table's name reaches each as a cross-stack reference.
    assert [len(texts) for texts in template["Mappings"].values()] == [1]
    assert all("Fn::ImportValue" in json.dumps(machine["Properties"]["DefinitionSubstitutions"]) for machine in machines)


@pytest.mark.scale
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
    assert size <= TEMPLATE_MAX_BYTES
    assert all("DefinitionString" not in resource["Properties"] for resource in machines.values())
    assert all((directory / f"asset.{r['Properties']['DefinitionS3Location']['Key']}").is_file() for r in machines.values())


@functools.cache  # the templates are only read
def _one(location: DefinitionLocation | None) -> tuple[dict[str, Any], Path]:
    app = App()
    workflows(Stack(app, "Orders"), 1, location=location)
    ((template, _, directory),) = synthesized(app).values()
    return template, directory


def _policy(template: dict[str, Any]) -> list[Any]:
    return sorted(role_statements(template, "Workflow0"), key=json.dumps)


def test_an_asset_definition_is_the_template_definition_once_its_substitutions_are_made():
    inline, _ = _one(None)
    asset, directory = _one(DefinitionLocation.ASSET)
    (logical_id,) = state_machine_definitions(inline)

    assert asset_definition(asset, logical_id, directory) == state_machine_definitions(inline)[logical_id]


def test_a_shared_definition_is_the_inline_definition_once_its_substitutions_are_made():
    shared, _ = _one(None)
    inline, _ = _one(DefinitionLocation.INLINE)

    assert "Mappings" not in inline
    assert state_machine_definitions(shared) == state_machine_definitions(inline)


def test_every_location_grants_the_state_machine_the_same_permissions():
    # CloudFormation reads an asset with the deployer's credentials: the role needs nothing more.
    shared, _ = _one(None)
    for location in (DefinitionLocation.INLINE, DefinitionLocation.ASSET):
        assert _policy(_one(location)[0]) == _policy(shared), location
