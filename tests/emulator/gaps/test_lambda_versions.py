"""testing.gaps.lambda_versions: a Ref to a function version is the version's ARN; moto's
CloudFormation alone gives it no physical id."""

from __future__ import annotations

import re

from .conftest import deploy_without, stack_output

VERSION_ARN = r"arn:aws:lambda:us-east-1:\d{12}:function:[^:]+:\d+"


def test_a_ref_to_a_function_version_is_its_qualified_arn(emulator, gaps_deployed):
    deployment = gaps_deployed
    assert re.fullmatch(VERSION_ARN, stack_output(emulator, deployment, "Version"))


def test_without_the_workaround_moto_resolves_it_to_something_else(emulator, deployment_gaps):
    deployment = deploy_without(emulator, deployment_gaps, "lambda_versions")
    assert not re.fullmatch(VERSION_ARN, stack_output(emulator, deployment, "Version"))
