"""The results bucket: large results, encrypted, private, TLS only, expiring with their records."""

from __future__ import annotations

import math
from typing import Any

import jsii
from aws_cdk import Duration, IStableAnyProducer, Lazy, RemovalPolicy
from aws_cdk import aws_s3 as s3
from constructs import Construct, IConstruct

from ...lambda_src import schema
from .. import nag
from .shared import singleton

RESULTS_BUCKET_ID = "IdempotencyResults"  # API: see key_function


class ResultsBucket(Construct):
    """The stack's bucket for results too large for their record (created on first use).

    Encrypted (S3 managed keys), public access blocked, TLS only, owner-enforced, retained with the
    stack (like the table: nothing is lost on a redeploy). Objects expire one day after the longest
    record retention of the guards writing under their namespace, by one lifecycle rule per namespace,
    and objects of namespaces no guard writes any more after the longest of those. (Shortening a
    guard's retention shortens its rule for objects already written: a record kept longer than its
    object fails a replay with ``Idempotency.ResultMissing``, until it is reset or expires.)
    """

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        self._retention_days: dict[str, int] = {}
        self.bucket = s3.Bucket(
            self,
            "Bucket",
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            removal_policy=RemovalPolicy.RETAIN,
        )
        cfn = self.bucket.node.default_child
        assert isinstance(cfn, s3.CfnBucket)
        cfn.add_property_override("LifecycleConfiguration", Lazy.any(_LifecycleRules(self._retention_days)))
        nag.results_bucket(self.bucket)

    def retain(self, namespace: str, retention: Duration) -> None:
        """Keep objects under ``namespace/`` at least ``retention``, plus a day."""
        days = math.ceil(retention.to_seconds() / 86400) + 1
        self._retention_days[namespace] = max(days, self._retention_days.get(namespace, 0))


@jsii.implements(IStableAnyProducer)
class _LifecycleRules:
    """The bucket's lifecycle rules, rendered when the template is synthesized (after every guard)."""

    def __init__(self, retention_days: dict[str, int]) -> None:
        self._retention_days = retention_days

    def produce(self) -> Any:
        rules = [
            {
                "Id": f"ExpireResults{index}",
                "Status": "Enabled",
                "Prefix": schema.object_prefix(namespace),
                "ExpirationInDays": days,
            }
            for index, (namespace, days) in enumerate(sorted(self._retention_days.items()))
        ]
        # Objects of namespaces no guard writes any more (S3 applies the shortest matching rule, so
        # this one never shortens a namespace's own).
        rules.append(
            {"Id": "ExpireOthers", "Status": "Enabled", "ExpirationInDays": max(self._retention_days.values(), default=1)}
        )
        rules.append(
            {"Id": "AbortIncompleteUploads", "Status": "Enabled", "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1}}
        )
        return {"Rules": rules}


def results_bucket(scope: IConstruct) -> ResultsBucket:
    """The stack's results bucket, created on first use."""
    return singleton(scope, RESULTS_BUCKET_ID, ResultsBucket)
