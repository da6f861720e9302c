"""`idempotent-constructs wrap`: the template it writes for an ASL file (the aws-samples SAM saga), as
CloudFormation and as SAM; its deploy on the emulator is tests/emulator/cli/test_wrap.py."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import boto3
import cfnlint.api
import pytest
from click.testing import CliRunner, Result
from moto import mock_aws

from idempotent_constructs._synth import quota_checks
from idempotent_constructs.cli import cli
from idempotent_constructs.testing.package import package

from ..sam import translated
from ..stacks import DOCUMENTS, SAGA_FUNCTIONS

SAGA = DOCUMENTS / "saga-pattern-sam.asl.json"
PLACEHOLDERS = sorted([*SAGA_FUNCTIONS, "snsTopicArn"])


def wrap(out: Path, *arguments: str, file: Path = SAGA) -> Result:
    return CliRunner().invoke(cli, ["wrap", str(file), "--out", str(out), *arguments])


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("wrapped")
    result = wrap(out, "--key", "$.trip_id")
    assert result.exit_code == 0, result.output
    return out, result.output


@pytest.fixture(scope="module")
def sam(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sam")
    result = wrap(out, "--key", "$.trip_id", "--format", "sam")
    assert result.exit_code == 0, result.output
    assert "sam deploy --template-file" in result.output
    return out


def template_of(out: Path) -> dict[str, Any]:
    return json.loads((out / "template.json").read_text())


def lint(template: dict[str, Any], *, packaged: bool = True) -> list[str]:
    """cfn-lint's findings but W3005 (see test_templates.py); a template not packaged yet names local paths
    on purpose, which W3002 points out ("This code may only work with 'package' cli command")."""
    ignored = {"W3005"} | (set() if packaged else {"W3002"})
    matches = cfnlint.api.lint(json.dumps(template), config=cfnlint.api.ManualArgs(regions=["us-east-1"]))
    return [f"{m.rule.id} {m.message}" for m in matches if m.rule.id not in ignored]


def packaged(out: Path) -> dict[str, Any]:
    """The template as `aws cloudformation package` (or `sam package`) leaves it: its local paths uploaded."""
    with mock_aws():
        return package(boto3.client("s3", region_name="us-east-1"), template_of(out), out)


def test_the_template_has_a_parameter_for_each_placeholder_of_the_file_and_none_of_the_cdks_bootstrap(written):
    template = template_of(written[0])
    assert sorted(template["Parameters"]) == PLACEHOLDERS
    assert "Rules" not in template and "CDKMetadata" not in template["Resources"]
    assert "cdk-hnb659fds" not in json.dumps(template) and "aws:cdk:path" not in json.dumps(template)
    assert sorted(template["Outputs"]) == ["StateMachineArn", "StateMachineName", "TableName"]
    types = sorted({resource["Type"] for resource in template["Resources"].values()})
    assert {"AWS::DynamoDB::Table", "AWS::StepFunctions::StateMachine", "AWS::Lambda::Function"} <= set(types)


def test_the_functions_code_and_the_definition_are_local_paths_beside_the_template_that_package_uploads(written):
    out, _ = written
    template = template_of(out)
    codes = {r["Properties"]["Code"] for r in template["Resources"].values() if r["Type"] == "AWS::Lambda::Function"}
    assert codes == {"functions"} and (out / "functions" / "compute_key.py").is_file()
    # Readable by Lambda's user, as `package` zips them: files 0644, folders 0755.
    modes = {path.stat().st_mode & 0o777 for path in (out / "functions").rglob("*")}
    assert modes == {0o644, 0o755}
    (machine,) = [r["Properties"] for r in template["Resources"].values() if r["Type"] == "AWS::StepFunctions::StateMachine"]
    definition = (out / machine["DefinitionS3Location"]).read_text()
    # The file's own placeholders keep their names, each given its template parameter.
    for name in PLACEHOLDERS:
        assert "${" + name + "}" in definition and machine["DefinitionSubstitutions"][name] == {"Ref": name}
    assert set(re.findall(r"\$\{(\w+)\}", definition)) == set(machine["DefinitionSubstitutions"])


def test_the_template_passes_cfn_lint_as_written_and_once_packaged_and_the_quota_checks(written):
    out, _ = written
    template = template_of(out)
    assert lint(template, packaged=False) == [] and lint(packaged(out)) == []
    assert quota_checks.check_template(template, len((out / "template.json").read_bytes()), out) == []


def test_the_command_prints_how_to_package_and_deploy_with_each_parameter(written):
    _, output = written
    assert "aws cloudformation package --template-file" in output
    assert "--s3-bucket YOUR_BUCKET --capabilities CAPABILITY_IAM" in output
    assert all(f"{name}=..." in output for name in PLACEHOLDERS)


def test_the_sam_form_is_a_sam_template_of_serverless_functions_and_state_machine_that_passes_cfn_lint(sam):
    template = template_of(sam)
    assert template["Transform"] == "AWS::Serverless-2016-10-31"
    resources = template["Resources"].values()
    assert {r["Properties"]["CodeUri"] for r in resources if r["Type"] == "AWS::Serverless::Function"} == {"functions"}
    (machine,) = [r["Properties"] for r in resources if r["Type"] == "AWS::Serverless::StateMachine"]
    assert (sam / machine["DefinitionUri"]).is_file() and "Role" in machine
    assert not [r for r in resources if r["Type"] in ("AWS::Lambda::Function", "AWS::StepFunctions::StateMachine")]
    assert lint(template, packaged=False) == []


def test_the_sam_form_once_packaged_translates_with_aws_sam_translator_to_a_template_that_passes_cfn_lint(sam):
    cloudformation = translated(packaged(sam))
    assert "Transform" not in cloudformation
    assert [r["Type"] for r in cloudformation["Resources"].values()].count("AWS::Lambda::Function") == 3
    assert lint(cloudformation) == []


def test_an_existing_table_is_adopted_by_name_and_none_created(tmp_path):
    result = wrap(tmp_path, "--key", "$.trip_id", "--table-name", "idempotency")
    assert result.exit_code == 0, result.output
    template = template_of(tmp_path)
    assert not [r for r in template["Resources"].values() if r["Type"] == "AWS::DynamoDB::Table"]
    assert "table/idempotency" in json.dumps(template)


def test_a_key_that_is_no_jsonpath_is_refused_before_anything_is_written(tmp_path):
    result = wrap(tmp_path / "out", "--key", "trip_id")
    assert result.exit_code == 2 and "Invalid value for --key: a key path must start with '$'" in result.output
    assert not (tmp_path / "out").exists()


def test_a_guarded_state_the_file_does_not_have_is_the_constructs_error_in_one_line(tmp_path):
    result = wrap(tmp_path, "--key", "$.trip_id", "--guard-state", "NoSuchState=$.trip_id")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "NoSuchState" in result.output and result.output.startswith("Error: ")


def test_a_wait_longer_than_an_express_execution_is_the_constructs_error(tmp_path):
    result = wrap(tmp_path, "--key", "$.trip_id", "--type", "express", "--max-wait", "10m")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "max_wait: 10 minutes" in result.output and "before its own execution ends (5 minutes)" in result.output


def test_a_wait_that_leaves_an_express_execution_too_little_margin_is_the_quota_checks_warning(tmp_path):
    result = wrap(tmp_path, "--key", "$.trip_id", "--type", "express", "--max-wait", "290s")
    assert result.exit_code == 0, result.output
    assert "warning: " in result.output and "its execution may run 300 s: it risks ending in States.Timeout" in result.output


def test_a_role_of_your_own_runs_the_state_machine_and_gets_the_guards_permissions_as_a_policy(tmp_path):
    result = wrap(tmp_path, "--key", "$.trip_id", "--role-arn", "arn:aws:iam::123456789012:role/trips")
    assert result.exit_code == 0, result.output
    resources = template_of(tmp_path)["Resources"].values()
    (machine,) = [r["Properties"] for r in resources if r["Type"] == "AWS::StepFunctions::StateMachine"]
    assert machine["RoleArn"] == "arn:aws:iam::123456789012:role/trips"
    (policy,) = [r["Properties"] for r in resources if r["Type"] == "AWS::IAM::Policy"]
    assert policy["Roles"] == ["trips"] and "dynamodb:UpdateItem" in json.dumps(policy["PolicyDocument"])


def test_a_file_that_is_not_json_is_refused_in_one_line_naming_it(tmp_path):
    broken = tmp_path / "broken.asl.json"
    broken.write_text('{"StartAt": "A", "States": {')
    result = wrap(tmp_path / "out", file=broken)
    assert result.exit_code == 1 and result.output.startswith("Error: ") and "Traceback" not in result.output
    assert f"{broken} is not JSON" in result.output and not (tmp_path / "out" / "template.json").exists()


def test_a_payload_the_duplicate_must_repeat_is_part_of_the_wrapped_definition(tmp_path):
    result = wrap(tmp_path, "--key", "$.trip_id", "--payload-path", "$.depart_city")
    assert result.exit_code == 0, result.output
    (definition,) = (tmp_path / "statemachine").glob("*.asl.json")
    assert "depart_city" in definition.read_text()


def test_each_placeholder_is_a_parameter_even_one_named_as_an_output_and_one_with_characters_a_name_refuses(tmp_path):
    document = tmp_path / "notify.asl.json"
    document.write_text(
        json.dumps({"StartAt": "Notify", "States": {"Notify": {"Type": "Task", "End": True,
            "Resource": "arn:aws:states:::sns:publish",
            "Parameters": {"TopicArn": "${my-topic.arn}", "Message": "${TableName}"}}}})
    )  # fmt: skip
    result = wrap(tmp_path / "out", "--key", "$.id", file=document)
    assert result.exit_code == 0, result.output
    template = template_of(tmp_path / "out")
    assert sorted(template["Parameters"]) == ["TableName", "mytopicarn"] and "TableName" in template["Outputs"]
    assert "mytopicarn=... TableName=..." in result.output or "TableName=... mytopicarn=..." in result.output
    (definition,) = (tmp_path / "out" / "statemachine").glob("*.asl.json")
    assert "${mytopicarn}" in definition.read_text() and "${TableName}" in definition.read_text()


def test_two_placeholders_that_would_share_a_parameter_are_refused(tmp_path):
    document = tmp_path / "two.asl.json"
    document.write_text(json.dumps({"StartAt": "A", "States": {"A": {"Type": "Pass", "Result": "${a-b} ${ab}", "End": True}}}))
    result = wrap(tmp_path / "out", file=document)
    assert result.exit_code == 2 and "a-b and ab would be named 'ab'" in result.output


def test_the_outputs_are_exported_under_the_name_of_the_stack_deployed(written):
    outputs = template_of(written[0])["Outputs"]
    assert outputs["TableName"]["Export"]["Name"] == {"Fn::Join": ["", [{"Ref": "AWS::StackName"}, "-TableName"]]}


def test_a_folder_of_yours_is_never_written_into_and_wraps_own_is_written_afresh(tmp_path, written):
    (tmp_path / "functions").mkdir()
    (tmp_path / "functions" / "app.py").write_text("yours")
    result = wrap(tmp_path, "--key", "$.trip_id")
    assert result.exit_code == 2 and "holds files that wrap did not write" in result.output
    assert (tmp_path / "functions" / "app.py").read_text() == "yours"
    out, _ = written
    (out / "functions" / "stale.py").write_text("left from an earlier run")
    assert wrap(out, "--key", "$.trip_id").exit_code == 0
    assert not (out / "functions" / "stale.py").exists() and (out / "functions" / "compute_key.py").is_file()


def test_a_role_arn_that_is_no_roles_arn_is_refused_and_a_managed_policy_given_twice_is_attached_once(tmp_path):
    refused = wrap(tmp_path / "refused", "--role-arn", "trips")
    assert refused.exit_code == 2 and "is not a role's ARN" in refused.output
    arn = "arn:aws:iam::aws:policy/AWSLambda_FullAccess"
    result = wrap(tmp_path / "out", "--managed-policy-arn", arn, "--managed-policy-arn", arn)
    assert result.exit_code == 0, result.output
    (machine_role,) = [
        r for r in template_of(tmp_path / "out")["Resources"].values()
        if r["Type"] == "AWS::IAM::Role" and "states.amazonaws.com" in json.dumps(r)
    ]  # fmt: skip
    assert machine_role["Properties"]["ManagedPolicyArns"] == [arn]


def test_a_managed_policy_for_a_role_of_your_own_is_refused_before_anything_is_written(tmp_path):
    result = wrap(
        tmp_path / "out",
        *("--role-arn", "arn:aws:iam::123456789012:role/trips"),
        *("--managed-policy-arn", "arn:aws:iam::aws:policy/AWSLambda_FullAccess"),
    )
    assert result.exit_code == 2 and "--managed-policy-arn is for the role it creates" in result.output
    assert not (tmp_path / "out" / "template.json").exists()
