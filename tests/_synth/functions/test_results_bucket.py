"""idempotent_constructs/_synth/functions/results_bucket.py: the shared results bucket."""

from __future__ import annotations

import pytest
from aws_cdk import Size
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_stepfunctions as sfn

from idempotent_constructs import IdempotencyConfigurationError, IdempotencyTable, IdempotentStateMachine, ResultStorage
from tests._synth.functions.build import large_results
from tests.synth import resources, stack, template


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


def test_a_bucket_or_threshold_without_large_results_is_a_configuration_error_of_the_workflow_with_its_others():
    target = stack()
    storage = ResultStorage(large=False, bucket=s3.Bucket(target, "Mine"), inline_threshold=Size.kibibytes(4))
    with pytest.raises(IdempotencyConfigurationError) as raised:
        IdempotentStateMachine(
            target,
            "Orders",
            table=IdempotencyTable(target, "Table"),
            definition=sfn.Pass(target, "Work"),
            result_storage=storage,
            namespace="orders#eu",
        )
    assert raised.value.construct_path == "Test/Orders"  # its guard's problems, with the workflow's own
    assert sorted(problem.split(":")[0] for problem in raised.value.problems) == ["namespace", "result_storage"]
    assert (
        "result_storage: bucket and inline_threshold given to ResultStorage(large=False), which keeps results in the "
        "record only; they apply to large results: pass ResultStorage.large(...) or drop them"
    ) in raised.value.problems
