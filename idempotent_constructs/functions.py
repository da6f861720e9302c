"""The Lambda functions shared by every idempotent workflow of a stack (one of each per stack)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from aws_cdk import Duration, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct, IConstruct

# Construct IDs are API: changing one replaces the function in every deployed stack.
KEY_FUNCTION_ID = "IdempotencyKeyFunction"
RUNTIME = lambda_.Runtime.PYTHON_3_14


def lambda_source_dir() -> Path:
    """The directory that becomes the Lambda asset (``lambda_src`` in the repository and the wheel)."""
    return Path(str(resources.files("idempotent_constructs.lambda_src")))


class KeyFunction(Construct):
    """Computes idempotency keys; pure computation, no AWS permissions beyond its own logs."""

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        self.log_group = logs.LogGroup(self, "Logs", retention=logs.RetentionDays.ONE_YEAR)
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description="idempotent-constructs key function: writes its own logs, nothing else",
        )
        self.function = lambda_.Function(
            self,
            "Function",
            runtime=RUNTIME,
            architecture=lambda_.Architecture.ARM_64,
            handler="compute_key.handler",
            code=lambda_.Code.from_asset(
                str(lambda_source_dir()), exclude=["__pycache__", "*.pyc", "__init__.py"]
            ),
            memory_size=256,
            timeout=Duration.seconds(10),
            role=self.role,
            log_group=self.log_group,
            description="idempotent-constructs: computes idempotency keys (shared by the stack)",
        )
        # Only its own log group, instead of the AWSLambdaBasicExecutionRole managed policy.
        self.role.add_to_policy(
            iam.PolicyStatement(
                actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                resources=[self.log_group.log_group_arn],
            )
        )


def key_function(scope: IConstruct) -> KeyFunction:
    """The stack's key function, created on first use."""
    stack = Stack.of(scope)
    existing = stack.node.try_find_child(KEY_FUNCTION_ID)
    return existing if isinstance(existing, KeyFunction) else KeyFunction(stack, KEY_FUNCTION_ID)
