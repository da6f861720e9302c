"""Emulator end-to-end: the harness deploys a stack as ``cdk deploy`` does, and refuses what
CloudFormation refuses: a template over 1,000,000 bytes (moto would create it)."""

from __future__ import annotations

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_stepfunctions as sfn

from idempotent_constructs.testing import TEMPLATE_MAX_BYTES, TemplateTooLarge


def stack_of_bytes(tmp_path, name: str, comment_bytes: int) -> Stack:
    stack = Stack(App(outdir=str(tmp_path / name)), name)
    sfn.StateMachine(
        stack, "Machine", definition_body=sfn.DefinitionBody.from_chainable(sfn.Pass(stack, "Work", comment="x" * comment_bytes))
    )
    return stack


def test_a_template_over_one_million_bytes_is_refused_as_cloudformation_refuses_it(emulator, tmp_path):
    with pytest.raises(TemplateTooLarge, match="split the stack"):
        emulator.deploy_stack(stack_of_bytes(tmp_path, "TooLarge", TEMPLATE_MAX_BYTES))


def test_a_template_under_the_limit_is_deployed(emulator, tmp_path):
    deployment = emulator.deploy_stack(stack_of_bytes(tmp_path, "LargeEnough", TEMPLATE_MAX_BYTES - 10_000))
    assert deployment.stack_name == "LargeEnough"
