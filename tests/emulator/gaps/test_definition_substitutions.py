"""testing.gaps.definition_substitutions: CloudFormation puts each DefinitionSubstitutions value, a
reference too, in place of its ``${name}``, and leaves a placeholder no entry names; moto alone keeps
every placeholder. A definition kept in S3 (``DefinitionS3Location``) is read from there first; moto
alone gives that state machine an empty definition."""

from __future__ import annotations

import pytest

from .conftest import deploy_without, stack_output


def test_a_state_machine_runs_its_definition_with_the_substitutions_made(emulator, gaps_deployed):
    execution = gaps_deployed.run("Substituted", {})
    table = stack_output(emulator, gaps_deployed, "TableName")
    assert (execution.status, execution.output) == ("SUCCEEDED", {"greeting": "hello", "table": table, "other": "${Other}"})


def test_without_the_workaround_moto_keeps_the_placeholders(emulator, deployment_gaps):
    deployment = deploy_without(emulator, deployment_gaps, "definition_substitutions")
    execution = deployment.run("Substituted", {})
    assert execution.output == {"greeting": "${Greeting}", "table": "${Table}", "other": "${Other}"}


def test_a_state_machine_whose_definition_is_in_s3_runs_it_with_the_substitutions_made(emulator, gaps_deployed):
    execution = gaps_deployed.run("FromS3", {})
    table = stack_output(emulator, gaps_deployed, "TableName")
    assert (execution.status, execution.output) == ("SUCCEEDED", {"greeting": "hello", "table": table, "other": "${Other}"})


def test_without_the_workaround_moto_gives_a_definition_in_s3_an_empty_one_which_its_interpreter_refuses(
    emulator, deployment_gaps
):
    with emulator.without_workaround("definition_substitutions"), pytest.raises(Exception, match=r"at <EOF>"):
        emulator.deploy(deployment_gaps, "DefinitionInS3")
