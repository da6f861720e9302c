"""The result function: stores and restores results too large or too exotic for a native write."""

from __future__ import annotations

from aws_cdk import Acknowledgment, Stack, Validations
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct, IConstruct

from ...lambda_src import schema
from .iam import ItemGrants, as_nag_renders
from .shared import SharedFunction, singleton

RESULT_FUNCTION_ID = "IdempotencyResultFunction"  # API: see key_function


class ResultFunction(SharedFunction):
    """Stores and restores the results of guards with ``ResultStorage.large()`` (one per stack).

    It may update records of the tables it serves, and put and get objects under the namespaces of
    the guards it serves, nothing else.
    """

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(
            scope,
            construct_id,
            handler="results.handler",
            description="idempotent-constructs: stores and restores large results",
        )
        self._records = ItemGrants(self.role, "dynamodb:UpdateItem", "dynamodb:GetItem")

    def serve(self, table: dynamodb.ITable, namespace: str, bucket: s3.IBucket | None) -> None:
        """Allow completing and reading records of ``namespace`` in ``table``, and keeping their
        results under the namespace's prefix in ``bucket``."""
        self._records.add(table, namespace)
        if bucket is None:
            return
        objects = bucket.arn_for_objects(f"{schema.object_prefix(namespace)}*")
        self.role.add_to_policy(iam.PolicyStatement(actions=["s3:PutObject", "s3:GetObject"], resources=[objects]))
        if bucket.encryption_key is not None:
            self.role.add_to_policy(
                iam.PolicyStatement(actions=["kms:GenerateDataKey", "kms:Decrypt"], resources=[bucket.encryption_key.key_arn])
            )
        Validations.of(self.role).acknowledge(
            Acknowledgment(
                id=f"AwsSolutions::AwsSolutions-IAM5[Resource::{as_nag_renders(Stack.of(self).resolve(objects))}]",
                reason="s3:PutObject and GetObject on the objects of one namespace: each result's object "
                "name carries its key hash and holder, which cannot be known in advance.",
            )
        )


def result_function(scope: IConstruct) -> ResultFunction:
    """The stack's result function, created on first use."""
    return singleton(scope, RESULT_FUNCTION_ID, ResultFunction)
