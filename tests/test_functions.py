"""idempotent_constructs/functions.py: the stack's shared functions and results bucket."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from aws_cdk import App, Duration, NestedStack, Size, Stack
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk.assertions import Template

from idempotent_constructs import (
    IdempotencyConfigurationError,
    IdempotencyGuard,
    IdempotencyTable,
    IdempotentStateMachine,
    ResultStorage,
)
from idempotent_constructs.functions import lambda_code
from tests.synth import allows, resources, stack, template


def large_results(**storage):
    def build(s):
        table = IdempotencyTable(s, "Table")
        for name, days in (("Orders", 1), ("Refunds", 30)):
            IdempotentStateMachine(
                s,
                name,
                table=table,
                definition=sfn.Pass(s, f"{name}Work"),
                namespace=f"orders/{name.lower()}",
                expires_after=Duration.days(days),
                result_storage=ResultStorage.large(**storage),
            )

    return template(build)


def test_one_results_bucket_per_stack_encrypted_private_tls_only_and_retained():
    tpl = large_results()
    (bucket,) = resources(tpl, "AWS::S3::Bucket").values()
    assert bucket["DeletionPolicy"] == "Retain"
    properties = bucket["Properties"]
    assert properties["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]["ServerSideEncryptionByDefault"] == {
        "SSEAlgorithm": "AES256"
    }
    assert set(properties["PublicAccessBlockConfiguration"].values()) == {True}
    (policy,) = resources(tpl, "AWS::S3::BucketPolicy").values()
    (deny,) = policy["Properties"]["PolicyDocument"]["Statement"]
    assert (deny["Effect"], deny["Condition"]) == ("Deny", {"Bool": {"aws:SecureTransport": "false"}})


def test_results_expire_a_day_after_their_namespaces_records_and_orphans_after_the_longest():
    (bucket,) = resources(large_results(), "AWS::S3::Bucket").values()
    rules = {rule["Id"]: rule for rule in bucket["Properties"]["LifecycleConfiguration"]["Rules"]}
    by_prefix = {rule.get("Prefix"): rule["ExpirationInDays"] for rule in rules.values() if "ExpirationInDays" in rule}
    # expires_after plus the 15-minute lease, rounded up to days, plus one.
    assert by_prefix == {"orders/orders#/": 3, "orders/refunds#/": 32, None: 32}


def test_the_result_function_may_touch_only_its_namespaces_records_and_objects():
    tpl = large_results()
    (policy,) = [p for name, p in resources(tpl, "AWS::IAM::Policy").items() if name.startswith("IdempotencyResultFunction")]
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    dynamodb = [s for s in statements if any(a.startswith("dynamodb:") for a in s["Action"])]
    (records,) = dynamodb  # one statement for the table, listing the namespaces
    assert records["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"] == ["orders/orders#*", "orders/refunds#*"]
    assert sorted(records["Action"]) == ["dynamodb:GetItem", "dynamodb:UpdateItem"]
    objects = [s for s in statements if s["Action"] == ["s3:PutObject", "s3:GetObject"]]
    assert [s["Resource"]["Fn::Join"][1][-1] for s in objects] == ["/orders/orders#/*", "/orders/refunds#/*"]


def test_a_bucket_of_your_own_is_used_instead_and_no_bucket_is_created():
    def build(s):
        bucket = s3.Bucket.from_bucket_name(s, "Mine", "my-results")
        IdempotentStateMachine(
            s,
            "Orders",
            table=IdempotencyTable(s, "Table"),
            definition=sfn.Pass(s, "Work"),
            result_storage=ResultStorage.large(bucket=bucket),
        )

    assert resources(template(build), "AWS::S3::Bucket") == {}


@pytest.mark.parametrize("threshold", [Size.bytes(512), Size.kibibytes(65)])
def test_fails_when_the_inline_threshold_is_outside_1_to_64_kib(threshold):
    target = stack()
    with pytest.raises(IdempotencyConfigurationError, match="inline_threshold"):
        IdempotentStateMachine(
            target,
            "Orders",
            table=IdempotencyTable(target, "Table"),
            definition=sfn.Pass(target, "Work"),
            result_storage=ResultStorage.large(inline_threshold=threshold),
        )


def test_a_bucket_or_threshold_without_large_results_is_refused():
    with pytest.raises(ValueError, match=r"ResultStorage\.large"):
        ResultStorage(large=False, inline_threshold=Size.kibibytes(4))


def release_function_statements(tpl):
    (policy,) = [p for name, p in resources(tpl, "AWS::IAM::Policy").items() if name.startswith("IdempotencyReleaseFunction")]
    return policy["Properties"]["PolicyDocument"]["Statement"]


def test_the_release_function_may_delete_only_records_of_the_namespaces_its_workflows_and_their_guards_use():
    def build(s):
        table = IdempotencyTable(s, "Table", encryption_key=kms.Key(s, "Key"))

        def guard(name):
            return IdempotencyGuard(s, name, table=table, body=sfn.Pass(s, f"{name}Work"), namespace=f"orders/{name.lower()}")

        # Map item processors are bound when they are declared, Parallel branches with the state machine.
        lines = sfn.Map(s, "Lines").item_processor(guard("Line"))
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


def test_with_asset_staging_disabled_the_functions_code_is_kept_beside_the_cloud_assembly(tmp_path):
    # What `cdk synth --no-staging` sets (the CLI always enables asset metadata, which SAM reads).
    app = App(
        outdir=str(tmp_path / "cdk.out"), context={"aws:cdk:disable-asset-staging": True, "aws:cdk:enable-asset-metadata": True}
    )
    target = Stack(app, "Test")
    IdempotentStateMachine(target, "Orders", table=IdempotencyTable(target, "Table"), definition=sfn.Pass(target, "Work"))
    functions = Template.from_stack(target).find_resources("AWS::Lambda::Function")
    paths = {Path(function["Metadata"]["aws:asset:path"]) for function in functions.values()}
    (path,) = paths  # one asset shared by the key and release functions
    assert path.parent == tmp_path / "cdk.out" and (path / "compute_key.py").is_file()
    assert (path / "aws_lambda_powertools").is_dir()


def test_the_functions_code_is_staged_in_a_temporary_directory_only_this_user_can_read():
    code = lambda_code(stack())
    staged = Path(code.path)
    assert staged.parent == Path(tempfile.gettempdir()) and staged.stat().st_mode & 0o077 == 0  # mkdtemp: 0700
    assert (staged / "compute_key.py").is_file() and (staged / "aws_lambda_powertools").is_dir()


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
