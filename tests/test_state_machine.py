"""idempotent_constructs/state_machine.py: IdempotentStateMachine."""

from __future__ import annotations

import json

import pytest
from aws_cdk import Duration
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk.assertions import Annotations, Match

from idempotent_constructs import IdempotencyConfigurationError, IdempotencyTable, IdempotentStateMachine
from tests.synth import allows, only_definition, resources, stack, template


def workflow(**options):
    def build(s):
        IdempotentStateMachine(s, "Orders", table=IdempotencyTable(s, "Table"), definition=sfn.Pass(s, "Work"), **options)

    return template(build)


def test_by_default_it_is_a_standard_state_machine_that_logs_everything_but_payloads_and_traces():
    tpl = workflow()
    tpl.has_resource_properties(
        "AWS::StepFunctions::StateMachine",
        {
            "StateMachineType": "STANDARD",
            "TracingConfiguration": {"Enabled": True},
            "LoggingConfiguration": {"Level": "ALL", "IncludeExecutionData": False, "Destinations": Match.any_value()},
        },
    )
    assert only_definition(tpl)["StartAt"] == "Idempotency.Acquire"
    assert "'Test/Orders#' & $digest(" in only_definition(tpl)["States"]["Idempotency.Acquire"]["Arguments"]


def test_the_role_may_do_exactly_the_record_operations_on_the_table_and_invoke_the_key_and_result_functions():
    tpl = workflow()
    (table_id,) = resources(tpl, "AWS::DynamoDB::Table")
    versions = [{"Ref": version} for version in resources(tpl, "AWS::Lambda::Version")]
    assert len(versions) == 2
    policy = next(p for p in resources(tpl, "AWS::IAM::Policy").values() if "StateMachineRole" in str(p["Properties"]["Roles"]))
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    dynamodb = {
        a
        for s in statements
        for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
        if a.startswith("dynamodb:")
    }
    assert dynamodb == {"dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"}
    for statement in statements:
        action = statement["Action"]
        if str(action).startswith("dynamodb:") or "dynamodb:" in str(action):
            assert table_id in str(statement["Resource"]) and "*" not in str(statement["Resource"]).replace("/index/*", "")
        if "lambda:InvokeFunction" in str(action):
            # Exactly the published version the state invokes, not the function and all its versions.
            assert statement["Resource"] in versions


def test_express_workflows_default_the_lease_to_the_five_minutes_an_express_execution_may_run():
    tpl = workflow(state_machine_type=sfn.StateMachineType.EXPRESS)
    tpl.has_resource_properties("AWS::StepFunctions::StateMachine", {"StateMachineType": "EXPRESS"})
    assert "$now + 300000" in only_definition(tpl)["States"]["Idempotency.Acquire"]["Arguments"]


def test_name_timeout_logs_and_tracing_pass_through():
    def build(s):
        IdempotentStateMachine(
            s,
            "Orders",
            table=IdempotencyTable(s, "Table"),
            definition=sfn.Pass(s, "Work"),
            state_machine_name="orders",
            timeout=Duration.minutes(30),
            logs=sfn.LogOptions(destination=logs.LogGroup(s, "Mine"), level=sfn.LogLevel.ERROR),
            tracing_enabled=False,
        )

    tpl = template(build)
    tpl.has_resource_properties(
        "AWS::StepFunctions::StateMachine",
        {
            "StateMachineName": "orders",
            "TracingConfiguration": {"Enabled": False},
            "LoggingConfiguration": {"Level": "ERROR", "Destinations": Match.any_value()},
        },
    )
    assert only_definition(tpl)["TimeoutSeconds"] == 1800
    assert len(resources(tpl, "AWS::Logs::LogGroup")) == 4  # the given one, the key, result and release functions


@pytest.mark.parametrize("option", ["timeout", "lease", "max_wait"])
def test_fails_when_an_express_duration_exceeds_five_minutes(option):
    with pytest.raises(IdempotencyConfigurationError, match=f"{option}: 10 minutes is longer than the 5 minutes"):
        workflow(state_machine_type=sfn.StateMachineType.EXPRESS, **{option: Duration.minutes(10)})


def test_fails_when_max_wait_outlasts_the_waiting_execution():
    with pytest.raises(IdempotencyConfigurationError, match="max_wait: 2 minutes leaves a waiting duplicate no time"):
        workflow(timeout=Duration.minutes(2), max_wait=Duration.minutes(2))


def test_warns_when_an_express_lease_is_shorter_than_the_longest_run():
    target = stack()
    IdempotentStateMachine(
        target,
        "Orders",
        table=IdempotencyTable(target, "Table"),
        definition=sfn.Pass(target, "Work"),
        state_machine_type=sfn.StateMachineType.EXPRESS,
        lease=Duration.minutes(1),
        max_wait=Duration.seconds(30),
    )
    Annotations.from_stack(target).has_warning("/Test/Orders", Match.string_like_regexp("may take over an Express holder"))


def test_standard_workflows_get_a_synth_time_name_and_check_lapsed_holders_with_describe_execution():
    tpl = workflow()
    (machine,) = resources(tpl, "AWS::StepFunctions::StateMachine").values()
    name = machine["Properties"]["StateMachineName"]
    assert name.startswith("Test_Orders-") and len(name) <= 80
    assert "Idempotency.OwnerCheck" in only_definition(tpl)["States"]
    assert f":execution:{name}:*" in json.dumps(resources(tpl, "AWS::IAM::Policy"))


def test_express_workflows_rely_on_the_lease_alone():
    tpl = workflow(state_machine_type=sfn.StateMachineType.EXPRESS)
    assert "Idempotency.OwnerCheck" not in only_definition(tpl)["States"]
    assert "states:DescribeExecution" not in json.dumps(resources(tpl, "AWS::IAM::Policy"))


def test_each_further_workflow_adds_only_its_state_machine_role_policy_and_log_group():
    def count(n):
        def build(s):
            table = IdempotencyTable(s, "Table")
            for i in range(n):
                IdempotentStateMachine(s, f"Flow{i}", table=table, definition=sfn.Pass(s, f"Work{i}"))

        resources_by_type: dict[str, int] = {}
        for resource in template(build).to_json()["Resources"].values():
            resources_by_type[resource["Type"]] = resources_by_type.get(resource["Type"], 0) + 1
        return resources_by_type

    one, three = count(1), count(3)
    growth = {kind: three.get(kind, 0) - one.get(kind, 0) for kind in set(one) | set(three)}
    assert {kind: n for kind, n in growth.items() if n} == {
        "AWS::StepFunctions::StateMachine": 2,
        "AWS::IAM::Role": 2,
        "AWS::IAM::Policy": 2,
        "AWS::Logs::LogGroup": 2,
    }


def test_a_workflow_may_touch_only_its_own_namespaces_items_as_its_synthesized_policy_says():
    def build(s):
        table = IdempotencyTable(s, "Table")
        for name in ("A", "B"):
            IdempotentStateMachine(s, name, table=table, definition=sfn.Pass(s, f"{name}Work"), namespace=f"orders/{name}")

    tpl = template(build)
    (table_id,) = resources(tpl, "AWS::DynamoDB::Table")
    table_arn = {"Fn::GetAtt": [table_id, "Arn"]}
    policies = {
        path: policy["Properties"]["PolicyDocument"]["Statement"]
        for path, policy in resources(tpl, "AWS::IAM::Policy").items()
        if path.startswith(("AStateMachineRole", "BStateMachineRole"))
    }
    statements_of_a = next(statements for path, statements in policies.items() if path.startswith("A"))
    for action in ("dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"):
        assert allows(statements_of_a, action, table_arn, "orders/A#0f3a")
        assert not allows(statements_of_a, action, table_arn, "orders/B#0f3a")
        assert not allows(statements_of_a, action, table_arn, "orders/AB#0f3a")
    for action in ("dynamodb:PutItem", "dynamodb:Scan", "dynamodb:Query", "dynamodb:BatchWriteItem", "dynamodb:DeleteTable"):
        assert not allows(statements_of_a, action, table_arn, "orders/A#0f3a")


def test_query_language_passes_through_and_a_jsonata_definition_is_accepted():
    def build(s):
        IdempotentStateMachine(
            s,
            "Orders",
            table=IdempotencyTable(s, "Table"),
            query_language=sfn.QueryLanguage.JSONATA,
            definition=sfn.Pass.jsonata(s, "Work", outputs="{% {'done': true} %}"),
        )

    definition = only_definition(template(build))
    (body,) = definition["States"]["Idempotency.Body"]["Branches"]
    assert definition["QueryLanguage"] == "JSONata" and body["States"]["Work"]["Output"] == "{% {'done': true} %}"


def test_fails_when_a_jsonata_state_machine_holds_states_written_in_jsonpath():
    def build(s):
        IdempotentStateMachine(
            s,
            "Orders",
            table=IdempotencyTable(s, "Table"),
            query_language=sfn.QueryLanguage.JSONATA,
            definition=sfn.Pass(s, "Classic", parameters={"order.$": "$.order"}),
        )

    with pytest.raises(IdempotencyConfigurationError, match=r"states Classic use JSONPath fields .* \.jsonata\(\) factories"):
        template(build)
