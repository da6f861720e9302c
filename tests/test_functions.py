"""idempotent_constructs/functions.py: the stack's shared functions and results bucket."""

from __future__ import annotations

import pytest
from aws_cdk import Duration, Size
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_stepfunctions as sfn

from idempotent_constructs import IdempotencyConfigurationError, IdempotencyTable, IdempotentStateMachine, ResultStorage
from tests.synth import resources, stack, template


def large_results(**storage):
    def build(s):
        table = IdempotencyTable(s, "Table")
        for name, days in (("Orders", 1), ("Refunds", 30)):
            IdempotentStateMachine(
                s, name, table=table, definition=sfn.Pass(s, f"{name}Work"), namespace=f"orders/{name.lower()}",
                expires_after=Duration.days(days), result_storage=ResultStorage.large(**storage),
            )

    return template(build)


def test_one_results_bucket_per_stack_encrypted_private_tls_only_and_retained():
    tpl = large_results()
    (bucket,) = resources(tpl, "AWS::S3::Bucket").values()
    assert bucket["DeletionPolicy"] == "Retain"
    properties = bucket["Properties"]
    assert properties["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]["ServerSideEncryptionByDefault"] == {"SSEAlgorithm": "AES256"}
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
    assert {tuple(s["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"]) for s in dynamodb} == {
        ("orders/orders#*",), ("orders/refunds#*",)
    }
    objects = [s for s in statements if s["Action"] == ["s3:PutObject", "s3:GetObject"]]
    assert [s["Resource"]["Fn::Join"][1][-1] for s in objects] == ["/orders/orders#/*", "/orders/refunds#/*"]


def test_a_bucket_of_your_own_is_used_instead_and_no_bucket_is_created():
    def build(s):
        bucket = s3.Bucket.from_bucket_name(s, "Mine", "my-results")
        IdempotentStateMachine(
            s, "Orders", table=IdempotencyTable(s, "Table"), definition=sfn.Pass(s, "Work"),
            result_storage=ResultStorage.large(bucket=bucket),
        )

    assert resources(template(build), "AWS::S3::Bucket") == {}


@pytest.mark.parametrize("threshold", [Size.bytes(512), Size.kibibytes(65)])
def test_fails_when_the_inline_threshold_is_outside_1_to_64_kib(threshold):
    target = stack()
    with pytest.raises(IdempotencyConfigurationError, match="inline_threshold"):
        IdempotentStateMachine(
            target, "Orders", table=IdempotencyTable(target, "Table"), definition=sfn.Pass(target, "Work"),
            result_storage=ResultStorage.large(inline_threshold=threshold),
        )


def test_a_bucket_or_threshold_without_large_results_is_refused():
    with pytest.raises(ValueError, match="ResultStorage.large"):
        ResultStorage(large=False, inline_threshold=Size.kibibytes(4))
