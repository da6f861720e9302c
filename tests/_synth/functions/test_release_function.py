"""idempotent_constructs/_synth/functions/release_function.py: the release function, its rule and dead-letter queue."""

from __future__ import annotations

from aws_cdk import App, NestedStack, Stack
from aws_cdk import aws_kms as kms
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk.assertions import Template

from idempotent_constructs import IdempotencyGuard, IdempotencyTable, IdempotentStateMachine, ResultStorage
from tests.synth import allows, resources, role_statements, template


def release_function_statements(tpl):
    return role_statements(tpl, "IdempotencyReleaseFunction")


def test_the_release_function_may_delete_only_records_of_the_namespaces_its_workflows_and_their_guards_use():
    def build(s):
        table = IdempotencyTable(s, "Table", encryption_key=kms.Key(s, "Key"))

        def guard(name, **options):
            return IdempotencyGuard(
                s, name, table=table, body=sfn.Pass(s, f"{name}Work"), namespace=f"orders/{name.lower()}", **options
            )

        # Map item processors are bound when they are declared, Parallel branches with the state machine.
        lines = sfn.Map(s, "Lines").item_processor(guard("Line", in_inline_map=True))
        parts = sfn.DistributedMap(s, "Parts").item_processor(guard("Part"))
        both = sfn.Parallel(s, "Both").branch(guard("Charge")).branch(sfn.Pass(s, "Other"))
        IdempotentStateMachine(s, "Orders", table=table, definition=lines.next(parts).next(both), namespace="orders/orders")
        IdempotentStateMachine(s, "Refunds", table=table, definition=sfn.Pass(s, "Refund"), namespace="orders/refunds")
        mine = IdempotencyGuard(s, "Mine", table=table, body=sfn.Pass(s, "Own"), namespace="orders/mine")
        sfn.StateMachine(s, "Plain", definition_body=sfn.DefinitionBody.from_chainable(mine))  # not watched

    tpl = template(build)
    statements = release_function_statements(tpl)
    (table_id,) = resources(tpl, "AWS::DynamoDB::Table")
    table_arn = {"Fn::GetAtt": [table_id, "Arn"]}
    for namespace in ("orders/orders", "orders/line", "orders/part", "orders/charge", "orders/refunds"):
        assert allows(statements, "dynamodb:DeleteItem", table_arn, f"{namespace}#0f3a")
        assert not allows(statements, "dynamodb:PutItem", table_arn, f"{namespace}#0f3a")
    assert not allows(statements, "dynamodb:DeleteItem", table_arn, "orders/mine#0f3a")
    assert not allows(statements, "dynamodb:DeleteItem", table_arn, "orders/ordersX#0f3a")
    (key_id,) = resources(tpl, "AWS::KMS::Key")
    kms_statements = [s for s in statements if s["Resource"] == {"Fn::GetAtt": [key_id, "Arn"]}]
    assert kms_statements and {"kms:Decrypt", "kms:GenerateDataKey"} <= set(kms_statements[0]["Action"])


def test_with_two_tables_the_release_and_result_functions_touch_each_tables_records_of_its_own_namespaces_only():
    def build(s):
        for name in ("Orders", "Refunds"):
            IdempotentStateMachine(
                s,
                name,
                table=IdempotencyTable(s, f"{name}Table"),
                definition=sfn.Pass(s, f"{name}Work"),
                namespace=name.lower(),
                result_storage=ResultStorage.large(),
            )

    tpl = template(build)
    tables = {
        name: {"Fn::GetAtt": [logical_id, "Arn"]}
        for logical_id in resources(tpl, "AWS::DynamoDB::Table")
        for name in ("Orders", "Refunds")
        if logical_id.startswith(name)
    }
    for function, action in (
        ("IdempotencyReleaseFunction", "dynamodb:DeleteItem"),
        ("IdempotencyResultFunction", "dynamodb:UpdateItem"),
    ):
        statements = role_statements(tpl, function)
        for name, table_arn in tables.items():
            other = "refunds" if name == "Orders" else "orders"
            assert allows(statements, action, table_arn, f"{name.lower()}#0f3a"), (function, name)
            assert not allows(statements, action, table_arn, f"{other}#0f3a"), (function, name)


def test_the_release_rule_matches_this_stacks_generated_names_and_no_other_stacks():
    app = App()
    stacks = {name: Stack(app, name) for name in ("Orders", "Orders-Eu")}
    stacks["Nested"] = NestedStack(stacks["Orders"], "Eu")
    for target in stacks.values():
        IdempotentStateMachine(target, "Flow", table=IdempotencyTable(target, "Table"), definition=sfn.Pass(target, "Work"))
    names, watched = {}, {}
    for label, target in stacks.items():
        tpl = Template.from_stack(target)
        (machine,) = tpl.find_resources("AWS::StepFunctions::StateMachine").values()
        names[label] = machine["Properties"]["StateMachineName"]
        (rule,) = tpl.find_resources("AWS::Events::Rule").values()
        (pattern,) = rule["Properties"]["EventPattern"]["detail"]["stateMachineArn"]
        # {"prefix": ...} for this stack's generated names; the exact ARN in a nested stack.
        prefixed = "prefix" in pattern
        arn = pattern["prefix"] if prefixed else pattern
        watched[label] = (prefixed, arn["Fn::Join"][1][-1].rpartition(":stateMachine:")[2])
    assert watched == {"Orders": (True, "Orders_"), "Orders-Eu": (True, "Orders-Eu_"), "Nested": (False, names["Nested"])}
    assert names["Nested"].startswith("Orders-Eu-Flow-")
    for label, name in names.items():
        matching = [other for other, (prefix, text) in watched.items() if name.startswith(text) if prefix or name == text]
        assert matching == [label], (names, watched)


def test_events_the_release_function_could_not_handle_land_in_an_encrypted_dead_letter_queue_with_an_alarm():
    def build(s):
        IdempotentStateMachine(s, "Orders", table=IdempotencyTable(s, "Table"), definition=sfn.Pass(s, "Work"))

    tpl = template(build)
    ((queue_id, queue),) = resources(tpl, "AWS::SQS::Queue").items()
    assert queue["Properties"]["SqsManagedSseEnabled"] is True and queue["Properties"]["MessageRetentionPeriod"] == 14 * 86400
    (rule,) = resources(tpl, "AWS::Events::Rule").values()
    (target,) = rule["Properties"]["Targets"]
    assert target["RetryPolicy"] == {"MaximumRetryAttempts": 8, "MaximumEventAgeInSeconds": 7200}
    assert target["DeadLetterConfig"]["Arn"] == {"Fn::GetAtt": [queue_id, "Arn"]}
    # A function error (a stale DescribeExecution read that still says RUNNING) is retried twice, then kept.
    (invoke_config,) = resources(tpl, "AWS::Lambda::EventInvokeConfig").values()
    assert invoke_config["Properties"]["MaximumRetryAttempts"] == 2
    assert invoke_config["Properties"]["DestinationConfig"]["OnFailure"]["Destination"] == {"Fn::GetAtt": [queue_id, "Arn"]}
    (alarm,) = resources(tpl, "AWS::CloudWatch::Alarm").values()
    assert alarm["Properties"]["Threshold"] == 1 and alarm["Properties"]["MetricName"] == "ApproximateNumberOfMessagesVisible"


def test_the_release_function_lists_an_executions_records_by_the_holder_index_and_reads_no_history():
    def build(s):
        IdempotentStateMachine(
            s, "Orders", table=IdempotencyTable(s, "Table"), definition=sfn.Pass(s, "Work"), state_machine_name="Orders"
        )

    tpl = template(build)
    statements = release_function_statements(tpl)
    actions = {
        action
        for statement in statements
        for action in ([statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"])
    }
    assert "states:GetExecutionHistory" not in actions
    (table_id,) = resources(tpl, "AWS::DynamoDB::Table")
    (query,) = [statement for statement in statements if statement["Action"] == "dynamodb:Query"]
    assert query["Resource"] == {"Fn::Join": ["", [{"Fn::GetAtt": [table_id, "Arn"]}, "/index/by-holder"]]}
    (executions,) = query["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"]
    assert executions["Fn::Join"][1][-1] == ":execution:Orders:*"  # the watched state machine's executions only
    (function,) = [
        resource["Properties"]
        for resource in tpl.to_json()["Resources"].values()
        if resource["Type"] == "AWS::Lambda::Function" and resource["Properties"].get("Handler") == "release.handler"
    ]
    assert function["Environment"]["Variables"]["IDEMPOTENCY_TABLES"] == {"Ref": table_id}
