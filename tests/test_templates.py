"""Every synthesized template: snapshots of the two extremes, cfn-lint, and the checks Step Functions
makes of every generated state machine definition. asl-validator checks each definition read here once,
with every other definition the run synthesized, when the session ends (tests/every_definition.py); the
last test shows it refuses a broken one."""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
from typing import Any

import cfnlint.api
import pytest
from aws_cdk import App
from syrupy.extensions.json import JSONSnapshotExtension

from example.stack import OrdersStack
from idempotent_constructs._jsonata import check as jsonata_check
from idempotent_constructs.testing import stable_template, state_machine_definitions
from tests import every_definition
from tests.stacks import everything_on, minimal

# The CDK adds DependsOn on a role that a GetAtt already implies; harmless and not ours to change.
IGNORED_CFN_LINT_RULES = {"W3005"}


# From aws-cdk-lib 2.274.0 the CDK itself limits a state machine role's trust to this account's state
# machines. The oldest release we support (pyproject.toml) renders the role without it; on that release
# (the minimum job of .ci/run) the condition is added back before comparing with the snapshots, made with
# the release we develop with, so that any other difference still fails.
CDK_TRUSTS_ONLY_OWN_STATE_MACHINES = (2, 274, 0)
OWN_STATE_MACHINES = {
    "ArnLike": {
        "aws:SourceArn": {
            "Fn::Join": [
                "",
                [
                    "arn:",
                    {"Ref": "AWS::Partition"},
                    ":states:",
                    {"Ref": "AWS::Region"},
                    ":",
                    {"Ref": "AWS::AccountId"},
                    ":stateMachine:*",
                ],
            ]
        }
    },
    "StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}},
}


def as_the_snapshots_cdk_renders(template: dict[str, Any]) -> dict[str, Any]:
    installed = tuple(int(part) for part in importlib.metadata.version("aws-cdk-lib").split(".")[:3])
    if installed >= CDK_TRUSTS_ONLY_OWN_STATE_MACHINES:
        return template
    for resource in template["Resources"].values():
        if resource["Type"] == "AWS::IAM::Role":
            for statement in resource["Properties"]["AssumeRolePolicyDocument"]["Statement"]:
                if statement.get("Principal") == {"Service": "states.amazonaws.com"}:
                    statement.setdefault("Condition", OWN_STATE_MACHINES)
    return template


# The emulator suite's own stacks (tests/stacks.py) are large; their templates are checked in that tier
# (./dev test --all), whose deployments synthesize them anyway, and built here only when a test asks.
EVERY_TEMPLATE = [
    "Minimal",
    "EverythingOn",
    "IdempotentOrders",
    *(pytest.param(name, marks=pytest.mark.emulator) for name in ("Behaviour", "Composition", "Documents")),
]


class Templates(dict[str, dict[str, Any]]):
    """The templates by stack name: this file's own, and a test stack's synthesized on first use."""

    def __init__(self, own: dict[str, dict[str, Any]], test_stack: Any) -> None:
        super().__init__(own)
        self.test_stack = test_stack

    def __missing__(self, name: str) -> dict[str, Any]:
        self[name] = self.test_stack(name).node.root.synth().get_stack_by_name(name).template
        return self[name]


@pytest.fixture(scope="module")
def templates(tmp_path_factory, test_stack) -> Templates:
    app = App(outdir=str(tmp_path_factory.mktemp("assembly")))
    stacks = [minimal(app), everything_on(app), OrdersStack(app, "IdempotentOrders")]
    assembly = app.synth()
    return Templates({stack.stack_name: assembly.get_stack_by_name(stack.stack_name).template for stack in stacks}, test_stack)


@pytest.mark.parametrize("name", ["Minimal", "EverythingOn"])
def test_the_minimal_and_the_everything_on_templates_match_their_snapshots(templates, name, snapshot):
    assert as_the_snapshots_cdk_renders(stable_template(templates[name])) == snapshot(extension_class=JSONSnapshotExtension)


@pytest.mark.parametrize("name", EVERY_TEMPLATE)
def test_every_template_passes_cfn_lint(templates, name):
    matches = cfnlint.api.lint(json.dumps(templates[name]), config=cfnlint.api.ManualArgs(regions=["us-east-1"]))
    findings = [
        f"{m.rule.id} {m.message} at {'/'.join(map(str, m.path))}" for m in matches if m.rule.id not in IGNORED_CFN_LINT_RULES
    ]
    assert findings == []


def asl_validator(node_bin, definition: dict[str, Any], tmp_path) -> subprocess.CompletedProcess:
    path = tmp_path / "definition.json"
    path.write_text(json.dumps(definition))
    return subprocess.run([str(node_bin / "asl-validator"), "--json-path", str(path)], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("name", EVERY_TEMPLATE)
def test_step_functions_would_refuse_no_jsonata_expression_of_any_generated_definition(templates, name):
    definitions = state_machine_definitions(templates[name])
    assert definitions
    for logical_id, definition in definitions.items():
        assert jsonata_check.definition_problems(definition) == [], logical_id


def test_asl_validator_rejects_a_broken_definition(templates, node_bin, tmp_path):
    (definition,) = state_machine_definitions(templates["Minimal"]).values()
    assert asl_validator(node_bin, definition, tmp_path).returncode == 0
    definition["States"]["Idempotency.Acquire"]["Next"] = "NoSuchState"
    assert asl_validator(node_bin, definition, tmp_path).returncode != 0


def test_the_sessions_one_run_of_asl_validator_judges_each_definition_as_its_own_command_does(templates, node_bin, tmp_path):
    # tests/asl_validator.js compiles asl-validator's schemas once for every definition of the run: what one
    # definition leaves in them must not change the verdict on the next.
    (sound,) = state_machine_definitions(templates["Minimal"]).values()
    broken = json.loads(json.dumps(sound))
    broken["States"]["Idempotency.Acquire"]["Next"] = "NoSuchState"
    mistyped = json.loads(json.dumps(sound))
    mistyped["States"]["Idempotency.Acquire"]["Type"] = "Nope"
    paths = []
    for name, definition in [("sound", sound), ("broken", broken), ("sound-again", sound), ("mistyped", mistyped)]:
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(json.dumps(definition))
    reports = every_definition.asl_validator_reports(node_bin, paths)
    assert [report.partition(":")[0] for report in reports] == [str(paths[1]), str(paths[3])]
    assert "NoSuchState" in reports[0] and "Type is invalid" in reports[1]
    for path, definition in zip(paths, [sound, broken, sound, mistyped], strict=True):
        assert (asl_validator(node_bin, definition, tmp_path).returncode == 0) == (str(path) not in "".join(reports))
