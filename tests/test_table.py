"""idempotent_constructs/table.py: IdempotencyTable."""

from __future__ import annotations

import re

import pytest
from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk.assertions import Annotations, Match, Template

from idempotent_constructs import IdempotencyConfigurationError, IdempotencyTable, IdempotentStateMachine
from idempotent_constructs._synth.functions import RUNTIME, TABLE_KEY_ACTIONS
from tests.synth import resources, role_statements, stack, template


def test_by_default_the_table_is_on_demand_encrypted_backed_up_retained_protected_indexed_by_namespace_and_holder_and_expires_records():
    tpl = template(lambda s: IdempotencyTable(s, "Idempotency"))
    tpl.has_resource(
        "AWS::DynamoDB::Table",
        {
            "DeletionPolicy": "Retain",
            "UpdateReplacePolicy": "Retain",
            "Properties": {
                "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
                "AttributeDefinitions": [
                    {"AttributeName": "id", "AttributeType": "S"},
                    {"AttributeName": "shard", "AttributeType": "S"},
                    {"AttributeName": "held_by", "AttributeType": "S"},
                ],
                "GlobalSecondaryIndexes": [
                    {
                        "IndexName": "by-namespace",
                        "KeySchema": [{"AttributeName": "shard", "KeyType": "HASH"}, {"AttributeName": "id", "KeyType": "RANGE"}],
                        "Projection": {"ProjectionType": "KEYS_ONLY"},
                    },
                    {
                        "IndexName": "by-holder",
                        "KeySchema": [{"AttributeName": "held_by", "KeyType": "HASH"}],
                        "Projection": {"ProjectionType": "KEYS_ONLY"},
                    },
                ],
                "BillingMode": "PAY_PER_REQUEST",
                "TimeToLiveSpecification": {"AttributeName": "expiration", "Enabled": True},
                "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
                "SSESpecification": {"SSEEnabled": True},
                "DeletionProtectionEnabled": True,
                "TableName": Match.absent(),
            },
        },
    )


def test_removal_policy_destroy_is_allowed_with_a_warning():
    target = stack()
    IdempotencyTable(target, "Idempotency", removal_policy=RemovalPolicy.DESTROY)
    # Deletion protection would stop the stack from taking the table with it: off.
    Template.from_stack(target).has_resource(
        "AWS::DynamoDB::Table", {"DeletionPolicy": "Delete", "Properties": {"DeletionProtectionEnabled": False}}
    )
    Annotations.from_stack(target).has_warning("/Test/Idempotency", Match.string_like_regexp("deletes every"))


def test_a_customer_managed_key_encrypts_the_table():
    def build(s):
        IdempotencyTable(s, "Idempotency", encryption_key=kms.Key(s, "Key"))

    tpl = template(build)
    tpl.has_resource_properties(
        "AWS::DynamoDB::Table",
        {"SSESpecification": {"SSEEnabled": True, "SSEType": "KMS", "KMSMasterKeyId": Match.any_value()}},
    )


def test_point_in_time_recovery_can_be_turned_off():
    tpl = template(lambda s: IdempotencyTable(s, "Idempotency", point_in_time_recovery=False))
    tpl.has_resource_properties(
        "AWS::DynamoDB::Table", {"PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": False}}
    )


def test_an_existing_table_is_adopted_instead_of_creating_one():
    def build(s):
        existing = dynamodb.Table.from_table_name(s, "Existing", "orders-idempotency")
        assert IdempotencyTable(s, "Idempotency", table=existing).table is existing

    assert resources(template(build), "AWS::DynamoDB::Table") == {}


def test_fails_when_an_existing_table_comes_with_options_for_a_new_one():
    target = stack()
    existing = dynamodb.Table.from_table_name(target, "Existing", "orders-idempotency")
    with pytest.raises(IdempotencyConfigurationError, match=r"(?s)Test/Idempotency: .*pass one or the other"):
        IdempotencyTable(target, "Idempotency", table=existing, removal_policy=RemovalPolicy.DESTROY)


@pytest.mark.parametrize(
    ("grant", "actions", "indexes"),
    [
        ("grant_workflow_access", ["dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:UpdateItem"], False),
        (
            "grant_read_records",
            ["dynamodb:BatchGetItem", "dynamodb:DescribeTable", "dynamodb:GetItem", "dynamodb:Query", "dynamodb:Scan"],
            True,
        ),
    ],
)
def test_grants_give_exactly_the_actions_needed_on_the_table_and_its_index_only_to_readers(grant, actions, indexes):
    def build(s):
        table = IdempotencyTable(s, "Idempotency")
        role = iam.Role(s, "Reader", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
        getattr(table, grant)(role)

    tpl = template(build)
    (table_id,) = resources(tpl, "AWS::DynamoDB::Table")
    (policy,) = resources(tpl, "AWS::IAM::Policy").values()
    (statement,) = policy["Properties"]["PolicyDocument"]["Statement"]
    assert sorted(statement["Action"]) == actions
    table_arn = {"Fn::GetAtt": [table_id, "Arn"]}
    index_arns = [{"Fn::Join": ["", [table_arn, "/index/*"]]}] if indexes else []
    resources_granted = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
    assert [r for r in resources_granted if r != {"Ref": "AWS::NoValue"}] == [table_arn, *index_arns]


def test_workflow_access_is_what_the_librarys_own_workflow_roles_may_do_on_the_table():
    def build(s):
        table = IdempotencyTable(s, "Idempotency")
        IdempotentStateMachine(s, "Orders", table=table, definition=sfn.Pass(s, "Work"))
        table.grant_workflow_access(iam.Role(s, "Mine", assumed_by=iam.ServicePrincipal("states.amazonaws.com")))

    tpl = template(build)

    def dynamodb_actions(prefix):
        listed = (s["Action"] if isinstance(s["Action"], list) else [s["Action"]] for s in role_statements(tpl, prefix))
        return {action for actions in listed for action in actions if action.startswith("dynamodb:")}

    assert (
        dynamodb_actions("Mine")
        == dynamodb_actions("OrdersRole")
        == {"dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"}
    )


def test_workflow_access_to_a_table_with_a_customer_managed_key_includes_the_key_as_a_workflows_role_has_it():
    def build(s):
        table = IdempotencyTable(s, "Idempotency", encryption_key=kms.Key(s, "Key"))
        IdempotentStateMachine(s, "Orders", table=table, definition=sfn.Pass(s, "Work"))
        table.grant_workflow_access(iam.Role(s, "Mine", assumed_by=iam.ServicePrincipal("states.amazonaws.com")))

    tpl = template(build)
    (key_id,) = resources(tpl, "AWS::KMS::Key")

    def key_actions(prefix):
        return {
            action
            for s in role_statements(tpl, prefix)
            if s["Resource"] == {"Fn::GetAtt": [key_id, "Arn"]}
            for action in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])
        }

    assert key_actions("Mine") == key_actions("OrdersRole") == set(TABLE_KEY_ACTIONS)


def powertools_user(scope) -> lambda_.Function:
    return lambda_.Function(
        scope,
        "OrderHandler",
        runtime=RUNTIME,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(event, context):\n    return event\n"),
    )


def test_a_powertools_function_may_get_put_update_and_delete_only_the_items_under_its_key_prefix():
    def build(s):
        IdempotencyTable(s, "Idempotency").grant_powertools_idempotency(powertools_user(s), key_prefix="orders")

    tpl = template(build)
    (table_id,) = resources(tpl, "AWS::DynamoDB::Table")
    (policy,) = resources(tpl, "AWS::IAM::Policy").values()
    (statement,) = policy["Properties"]["PolicyDocument"]["Statement"]
    assert sorted(statement["Action"]) == ["dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"]
    assert statement["Resource"] == {"Fn::GetAtt": [table_id, "Arn"]}
    assert statement["Condition"] == {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["orders#*"]}}


def test_a_powertools_function_finds_the_table_and_its_key_prefix_in_its_environment():
    def build(s):
        IdempotencyTable(s, "Idempotency").grant_powertools_idempotency(powertools_user(s), key_prefix="orders/charge")

    tpl = template(build)
    (table_id,) = resources(tpl, "AWS::DynamoDB::Table")
    tpl.has_resource_properties(
        "AWS::Lambda::Function",
        {"Environment": {"Variables": {"IDEMPOTENCY_TABLE_NAME": {"Ref": table_id}, "IDEMPOTENCY_KEY_PREFIX": "orders/charge"}}},
    )


def test_by_default_the_key_prefix_is_the_functions_construct_path():
    def build(s):
        IdempotencyTable(s, "Idempotency").grant_powertools_idempotency(powertools_user(s))

    template(build).has_resource_properties(
        "AWS::Lambda::Function",
        {"Environment": {"Variables": Match.object_like({"IDEMPOTENCY_KEY_PREFIX": "Test/OrderHandler"})}},
    )


@pytest.mark.parametrize("key_prefix", ["orders#charge", "", "orders*"])
def test_an_invalid_key_prefix_fails_synth_naming_the_function_and_the_value(key_prefix):
    target = stack()
    table = IdempotencyTable(target, "Idempotency")
    with pytest.raises(
        IdempotencyConfigurationError, match=rf"(?s)Test/OrderHandler: .*key_prefix: {re.escape(repr(key_prefix))}"
    ):
        table.grant_powertools_idempotency(powertools_user(target), key_prefix=key_prefix)
