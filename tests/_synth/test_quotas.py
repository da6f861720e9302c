"""The AWS quotas no emulator enforces, met at the scale we promise and checked when the app synthesizes
(idempotent_constructs/_synth/quotas.py, quota_checks.py, quota_plugin.py, names.py, inline_role.py, outcome_metrics.py,
functions/iam.py)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Duration, NestedStack, Stack
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk.assertions import Annotations, Match
from constructs import Construct

from idempotent_constructs import (
    DefinitionLocation,
    ExtendLease,
    IdempotencyGuard,
    IdempotencyKey,
    IdempotencyTable,
    IdempotentStateMachine,
)
from idempotent_constructs._synth.functions.iam import leading_keys
from idempotent_constructs._synth.outcome_metrics import MAX_FILTER_PATTERN, filter_patterns
from idempotent_constructs._synth.quota_checks import check_template, policy_characters, waiting_schedules
from idempotent_constructs._synth.quotas import MAX_RESOURCES, ROLE_INLINE_POLICY_CHARACTERS, TEMPLATE_MAX_BYTES, Finding
from idempotent_constructs.testing import state_machine_definitions
from tests.synth import only_definition, template

WORKFLOWS = 120
METRICS = (
    "executed",
    "replayed",
    "waited",
    "taken_over",
    "mismatched",
    "key_missing",
    "in_flight",
    "lease_lost",
    "result_missing",
    "failed",
    "lease_extended",
)


def namespace(index: int) -> str:
    return f"team{index}/" + "orders-" * 40 + f"{index}"[:256]


def guarded_workflows(stack: Stack, table: IdempotencyTable, count: int, *, leases: int) -> None:
    """``count`` workflows with 256-character namespaces, ``leases`` ExtendLease states each and every
    metric; with ExtendLease states, their definitions in S3 (eight of them take 14 kB a workflow)."""
    for index in range(count):
        scope = Construct(stack, f"W{index}")
        first = sfn.Pass(scope, "Start")
        chain: sfn.INextable = first
        for lease in range(leases):
            chain = chain.next(ExtendLease(scope, f"Heartbeat{lease}"))
        machine = IdempotentStateMachine(
            scope,
            "Orders",
            table=table,
            definition=first,
            key=IdempotencyKey.from_paths("$.order_id"),
            namespace=namespace(index)[:256],
            definition_location=DefinitionLocation.ASSET if leases else None,
        )
        for metric in METRICS if leases else METRICS[:-1]:
            getattr(machine, f"metric_{metric}")()


@dataclass
class Synthesized:
    template: dict[str, Any]
    size: int  # bytes as written
    stack: Stack
    directory: Path  # the cloud assembly, with the definitions stored as assets

    def findings(self) -> list[Finding]:
        return check_template(self.template, self.size, self.directory)


def synthesized(leases: int) -> Synthesized:
    app = App()
    table = IdempotencyTable(Stack(app, "Records"), "Idempotency")
    orders = Stack(app, "Orders")
    guarded_workflows(orders, table, WORKFLOWS, leases=leases)
    artifact = app.synth().get_stack_by_name("Orders")
    path = Path(artifact.template_full_path)
    return Synthesized(json.loads(path.read_text()), path.stat().st_size, orders, path.parent)


@pytest.fixture(scope="module")
def at_scale() -> Synthesized:
    return synthesized(leases=8)


@pytest.mark.scale
def test_a_hundred_and_twenty_workflows_with_long_namespaces_and_every_metric_fit_one_template_by_default():
    default = synthesized(leases=0)

    assert "IdempotentDefinitions" in default.template["Mappings"]  # DefinitionLocation.TEMPLATE
    assert len(of_type(default.template, "AWS::StepFunctions::StateMachine")) == WORKFLOWS
    assert len(of_type(default.template, "AWS::Logs::MetricFilter")) == WORKFLOWS
    assert default.size <= TEMPLATE_MAX_BYTES
    assert default.findings() == []


def of_type(template: dict[str, Any], kind: str) -> dict[str, Any]:
    return {logical_id: r for logical_id, r in template["Resources"].items() if r["Type"] == kind}


@pytest.mark.scale
def test_a_hundred_and_twenty_workflows_with_long_namespaces_eight_extend_lease_states_and_every_metric_fit_one_stack(at_scale):
    template = at_scale.template

    assert len(namespace(0)[:256]) == 256
    assert len(of_type(template, "AWS::StepFunctions::StateMachine")) == WORKFLOWS
    assert len(template["Resources"]) <= MAX_RESOURCES
    assert at_scale.size <= TEMPLATE_MAX_BYTES
    assert at_scale.findings() == []  # the 120 definitions (assets) read and checked too


@pytest.mark.scale
def test_at_scale_every_role_keeps_its_permissions_within_what_iam_allows_a_role(at_scale):
    template = at_scale.template

    # The workflows' and the shared functions' roles hold their permissions inline: no policy resources.
    assert of_type(template, "AWS::IAM::Policy") == {}
    sizes = {
        logical_id: sum(policy_characters(policy["PolicyDocument"]) for policy in role["Properties"]["Policies"])
        for logical_id, role in of_type(template, "AWS::IAM::Role").items()
    }
    assert len(sizes) == WORKFLOWS + 3
    assert max(sizes.values()) <= ROLE_INLINE_POLICY_CHARACTERS


@pytest.mark.scale
def test_at_scale_the_shared_functions_access_is_widened_to_the_namespaces_prefixes_with_a_warning(at_scale):
    template, orders = at_scale.template, at_scale.stack

    release = next(r for logical_id, r in of_type(template, "AWS::IAM::Role").items() if "ReleaseFunction" in logical_id)
    (deletes,) = [
        s for s in release["Properties"]["Policies"][0]["PolicyDocument"]["Statement"] if s["Action"] == "dynamodb:DeleteItem"
    ]
    assert deletes["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"] == [
        f"team{i}/*" for i in sorted(range(WORKFLOWS), key=str)
    ]
    warnings = Annotations.from_stack(orders).find_warning("*", Match.string_like_regexp("IAM's 10,240 characters"))
    assert len(warnings) == 2  # the release and the result functions


@pytest.mark.scale
def test_at_scale_each_workflow_logs_under_vendedlogs_and_its_filter_patterns_fit(at_scale):
    template = at_scale.template

    names = [group["Properties"].get("LogGroupName") for group in of_type(template, "AWS::Logs::LogGroup").values()]
    vended = [name for name in names if name is not None]
    assert len(vended) == WORKFLOWS
    assert all(name["Fn::Join"][1][0].startswith("/aws/vendedlogs/states/Orders_Orders-") for name in vended)
    patterns = [f["Properties"]["FilterPattern"] for f in of_type(template, "AWS::Logs::MetricFilter").values()]
    assert len(patterns) == WORKFLOWS
    assert max(len(pattern) for pattern in patterns) <= MAX_FILTER_PATTERN


def test_a_guard_with_more_outcome_states_than_one_pattern_holds_gets_several_metric_filters():
    built = {}

    def build(s):
        first = sfn.Pass(s, "Start")
        chain: sfn.INextable = first
        for lease in range(12):
            chain = chain.next(ExtendLease(s, f"HeartbeatWhileTheWarehouseConfirmsTheShipment{lease}"))
        machine = IdempotentStateMachine(
            s, "Orders", table=IdempotencyTable(s, "Table"), definition=first, namespace="shop/orders"
        )
        built["metric"] = machine.metric_lease_extended()
        built["guard"] = machine.guard

    filters = template(build).find_resources("AWS::Logs::MetricFilter")
    patterns = [f["Properties"]["FilterPattern"] for f in filters.values()]

    assert len(patterns) == 2
    assert patterns == filter_patterns(built["guard"])
    assert all(len(pattern) <= MAX_FILTER_PATTERN for pattern in patterns)
    named = "".join(patterns)
    for lease in range(12):
        assert f'"Idempotency.HeartbeatWhileTheWarehouseConfirmsTheShipment{lease}"' in named
    assert named.count('$.details.name = "Idempotency.Body"') == 1


def test_namespaces_are_listed_whole_while_they_fit_and_by_their_prefixes_when_not():
    few = ["orders/eu/prod", "orders/us/prod"]
    assert leading_keys(few) == (["orders/eu/prod#*", "orders/us/prod#*"], False)

    many = [f"orders/eu/prod/{'x' * 200}{index}" for index in range(40)] + ["refunds/prod"]
    assert leading_keys(many) == (["orders/eu/prod/*", "refunds/prod#*"], True)
    assert leading_keys([f"{'x' * 250}{index}" for index in range(40)]) == (["*"], True)


# --- the check, on templates that break each quota -------------------------------------------------


def rules(template: dict[str, Any], size: int = 1000) -> list[str]:
    return [finding.rule for finding in check_template(template, size)]


def state_machine(definition: dict[str, Any], **properties: Any) -> dict[str, Any]:
    return {"Type": "AWS::StepFunctions::StateMachine", "Properties": {"DefinitionString": json.dumps(definition), **properties}}


def test_the_check_reports_a_template_too_large_and_too_many_mappings():
    mappings = {f"M{index}": {"a": {"b": "c"}} for index in range(201)}
    assert rules({"Resources": {}, "Mappings": mappings}, size=TEMPLATE_MAX_BYTES + 1) == ["template-size", "mappings"]


def test_a_reference_counts_as_the_longest_name_or_arn_it_resolves_to_under_the_stack_name():
    table = {"Type": "AWS::DynamoDB::Table", "Properties": {}}
    named = {"Type": "AWS::DynamoDB::Table", "Properties": {"TableName": "orders"}}
    resources = {"IdempotencyTable1A2B3C4D": table, "Named": named}
    arn = {"Fn::GetAtt": ["IdempotencyTable1A2B3C4D", "Arn"]}
    prefix = "arn:aws-us-gov:dynamodb:ap-southeast-2:123456789012:table/"
    # The name CloudFormation generates: the stack name, the logical id and a random suffix, by hyphens.
    generated = len(prefix) + 128 + 1 + len("IdempotencyTable1A2B3C4D") + 14
    assert policy_characters(arn, resources) == generated + 2  # the quotes of the string
    assert generated > 186 > 128  # a table's ARN under the longest stack name: more than a flat estimate
    assert policy_characters(arn, resources, "Orders") == len(prefix) + len("Orders-IdempotencyTable1A2B3C4D") + 14 + 2
    assert policy_characters({"Fn::GetAtt": ["Named", "Arn"]}, resources) == len(prefix + "orders") + 2
    assert policy_characters({"Ref": "AWS::StackName"}) == 128 + 2


def test_a_policy_that_fits_under_a_short_stack_name_breaks_the_quota_under_a_long_one():
    statement = {"Effect": "Allow", "Action": "dynamodb:GetItem", "Resource": {"Fn::GetAtt": ["Table", "Arn"]}}
    document = {"Version": "2012-10-17", "Statement": [statement] * 45}
    role = {"Type": "AWS::IAM::Role", "Properties": {"Policies": [{"PolicyName": "P", "PolicyDocument": document}]}}
    template = {"Resources": {"Role": role, "Table": {"Type": "AWS::DynamoDB::Table", "Properties": {}}}}
    assert [f.rule for f in check_template(template, 1000, stack_name="Shop")] == []
    assert [f.rule for f in check_template(template, 1000, stack_name="s" * 128)] == ["role-inline-policy-size"]


def test_the_check_counts_a_roles_inline_policies_and_attached_policies_together():
    statement = {"Effect": "Allow", "Action": "dynamodb:GetItem", "Resource": {"Fn::GetAtt": ["Table", "Arn"]}}
    half = {"Version": "2012-10-17", "Statement": [statement] * 30}  # 30 * about 190 characters
    role = {"Type": "AWS::IAM::Role", "Properties": {"Policies": [{"PolicyName": "P", "PolicyDocument": half}]}}
    policy = {"Type": "AWS::IAM::Policy", "Properties": {"Roles": [{"Ref": "Role"}], "PolicyDocument": half}}

    assert 5_000 < policy_characters(half) < ROLE_INLINE_POLICY_CHARACTERS
    assert rules({"Resources": {"Role": role}}) == []
    assert rules({"Resources": {"Role": role, "Policy": policy}}) == ["role-inline-policy-size"]


def test_the_check_reports_a_filter_pattern_too_long_and_a_log_group_outside_vendedlogs():
    long_filter = {"Type": "AWS::Logs::MetricFilter", "Properties": {"FilterPattern": "{ " + "x" * 1024 + " }"}}
    group = {"Type": "AWS::Logs::LogGroup", "Properties": {}}
    logging = {"Destinations": [{"CloudWatchLogsLogGroup": {"LogGroupArn": {"Fn::GetAtt": ["Group", "Arn"]}}}]}
    machine = state_machine({"StartAt": "A", "States": {"A": {"Type": "Pass", "End": True}}}, LoggingConfiguration=logging)

    found = check_template({"Resources": {"Filter": long_filter, "Group": group, "Machine": machine}}, 1000)

    assert [(f.rule, f.logical_id) for f in found] == [("filter-pattern-length", "Filter"), ("log-resource-policy", "Machine")]
    assert "InvalidLoggingConfiguration" in found[1].description


def test_the_check_reports_a_definition_beyond_one_megabyte():
    big = {"StartAt": "A", "States": {"A": {"Type": "Pass", "Result": "x" * 1_100_000, "End": True}}}
    assert rules({"Resources": {"Machine": state_machine(big)}}) == ["definition-size"]


def express_guard(max_wait: Duration | None) -> App:
    app = App()
    s = Stack(app, "Jobs")
    guard = IdempotencyGuard(
        s, "Once", table=IdempotencyTable(s, "Table"), body=sfn.Pass(s, "Work"), namespace="jobs", max_wait=max_wait
    )
    sfn.StateMachine(
        s, "Machine", state_machine_type=sfn.StateMachineType.EXPRESS, definition_body=sfn.DefinitionBody.from_chainable(guard)
    )
    return app


def test_the_check_reads_a_definition_stored_as_an_asset_beside_the_template(tmp_path):
    big = {"StartAt": "A", "States": {"A": {"Type": "Pass", "Result": "x" * 1_100_000, "End": True}}}
    (tmp_path / "asset.0123abcd.json").write_text(json.dumps(big))
    machine = {"Type": "AWS::StepFunctions::StateMachine", "Properties": {"DefinitionS3Location": {"Key": "0123abcd.json"}}}

    assert [f.rule for f in check_template({"Resources": {"Machine": machine}}, 1000, tmp_path)] == ["definition-size"]
    assert check_template({"Resources": {"Machine": machine}}, 1000) == []  # without the assembly: not read


def test_the_check_leaves_what_it_cannot_read_to_aws_and_still_checks_the_rest():
    either = {"Fn::If": ["Prod", [{"PolicyName": "P", "PolicyDocument": {}}], {"Ref": "AWS::NoValue"}]}
    role = {"Type": "AWS::IAM::Role", "Properties": {"Policies": either}}
    logging = {"Fn::If": ["Prod", {"Destinations": []}, {"Ref": "AWS::NoValue"}]}
    waits = {
        "QueryLanguage": "JSONata",
        "StartAt": "Backoff",
        "States": {
            "Backoff": {"Type": "Wait", "Seconds": "{% $states.input.delay %}", "Next": "Await"},
            "Await": {
                "Type": "Parallel",
                "Branches": [{"StartAt": "Poll", "States": {"Poll": {"Type": "Pass", "End": True}}}],
                "Retry": [{"ErrorEquals": ["Idempotency.StillInFlight"]}],
                "End": True,
            },
        },
    }
    machine = state_machine(waits, StateMachineType="EXPRESS", LoggingConfiguration=logging)
    untyped = {"Properties": {}}
    long_filter = {"Type": "AWS::Logs::MetricFilter", "Properties": {"FilterPattern": "{ " + "x" * 1024 + " }"}}
    template = {"Resources": {"Role": role, "Machine": machine, "Untyped": untyped, "Filter": long_filter}}

    assert rules(template) == ["filter-pattern-length"]


def test_the_check_reads_nested_stacks_templates_too():
    app = App()
    parent = Stack(app, "Parent")
    nested = NestedStack(parent, "Jobs")
    guard = IdempotencyGuard(
        nested,
        "Once",
        table=IdempotencyTable(nested, "Table"),
        body=sfn.Pass(nested, "Work"),
        namespace="jobs",
        max_wait=Duration.minutes(10),
    )
    sfn.StateMachine(
        nested,
        "Machine",
        state_machine_type=sfn.StateMachineType.EXPRESS,
        definition_body=sfn.DefinitionBody.from_chainable(guard),
    )

    with pytest.raises(
        Exception, match=r"(?s)ValidationFailed.*Machine[0-9A-F]{8}: a duplicate waiting in Once.Await may wait 600 s"
    ):
        app.synth()


def test_the_check_fails_the_synth_of_a_guard_whose_waiting_outlasts_its_express_execution():
    with pytest.raises(
        Exception, match=r"(?s)ValidationFailed.*Once.Await may wait 600 s, and its execution may run 300 s: it ends in"
    ):
        express_guard(Duration.minutes(10)).synth()


def test_a_guard_whose_waiting_leaves_its_express_execution_less_than_the_margin_gets_a_warning():
    assembly = express_guard(Duration.seconds(270)).synth()  # 270 s given: 270 s of waiting at most

    report = json.loads((Path(assembly.directory) / "validation-report.json").read_text())
    (plugin,) = [p for p in report["pluginReports"] if p["pluginName"] == "idempotent-constructs"]
    assert [(v["ruleName"], v["severity"]) for v in plugin["violations"]] == [("waiting-schedule", "warning")]
    assert "may wait 270 s, and its execution may run 300 s: it risks ending in" in plugin["violations"][0]["description"]


def test_a_guard_whose_wait_is_left_to_its_default_fits_its_express_execution():
    assembly = express_guard(None).synth()  # fitted at synth: 4 minutes

    report = json.loads((Path(assembly.directory) / "validation-report.json").read_text())
    assert [p for p in report["pluginReports"] if p["pluginName"] == "idempotent-constructs" and p["violations"]] == []


@pytest.mark.parametrize(
    ("options", "limit"),
    [
        ({"state_machine_type": sfn.StateMachineType.EXPRESS}, 300),
        ({"state_machine_type": sfn.StateMachineType.EXPRESS, "timeout": Duration.seconds(60)}, 60),
        ({"timeout": Duration.minutes(2)}, 120),
        ({}, None),
    ],
)
def test_every_default_waiting_schedule_fits_its_execution_with_margin_added_up_from_the_definition(options, limit):
    def build(s):
        IdempotentStateMachine(s, "Orders", table=IdempotencyTable(s, "Table"), definition=sfn.Pass(s, "Work"), **options)

    definition = only_definition(template(build))
    ((state, waited),) = waiting_schedules(definition)

    assert state == "Idempotency.Await"
    if limit is None:  # a Standard execution without a timeout: the 5 minutes asked for, at most
        assert 240 < waited <= 300
    else:  # at most 80% of the limit (less by up to a delay of the schedule: 32 s of 60)
        assert limit * 0.5 < waited <= limit * 0.8


def test_the_everything_on_stack_has_no_quota_finding():
    from tests.stacks import everything_on

    app = App()
    everything_on(app)
    express: list[int] = []
    for artifact in app.synth().stacks:
        path = Path(artifact.template_full_path)
        assert check_template(json.loads(path.read_text()), path.stat().st_size) == []
        template = json.loads(path.read_text())
        for logical_id, definition in state_machine_definitions(template).items():
            if template["Resources"][logical_id]["Properties"].get("StateMachineType") == "EXPRESS":
                express.extend(waited for _, waited in waiting_schedules(definition))
    assert express and max(express) <= 240  # was 301 s with the 5 minutes of a Standard workflow


def test_a_warning_of_the_check_lets_the_synth_go_on_and_is_in_the_validation_report():
    app = App()
    s = Stack(app, "Jobs")
    guard = IdempotencyGuard(s, "Once", table=IdempotencyTable(s, "Table"), body=sfn.Pass(s, "Work"), namespace="jobs")
    sfn.StateMachine(
        s,
        "Machine",
        definition_body=sfn.DefinitionBody.from_chainable(guard),
        logs=sfn.LogOptions(destination=logs.LogGroup(s, "Logs"), level=sfn.LogLevel.ALL),
    )

    assembly = app.synth()

    report = json.loads((Path(assembly.directory) / "validation-report.json").read_text())
    (plugin,) = [p for p in report["pluginReports"] if p["pluginName"] == "idempotent-constructs"]
    assert [(v["ruleName"], v["severity"]) for v in plugin["violations"]] == [("log-resource-policy", "warning")]
