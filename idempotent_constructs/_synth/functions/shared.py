"""What every shared function is: its own log group, a role that may write only there, and one per stack."""

from __future__ import annotations

import weakref
from typing import TypeVar

from aws_cdk import Acknowledgment, Duration, RemovalPolicy, Stack, Validations
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct, IConstruct

from .. import nag, read_once
from ..inline_role import InlineRole
from .assets import RUNTIME, lambda_code
from .iam import as_nag_renders


class SharedFunction(Construct):
    """A function of lambda_src with its own log group and a role that may write only there; ``asynchronous``
    for one an EventBridge rule invokes rather than state machines' Tasks (what cdk-nag is told: ``nag``)."""

    def __init__(
        self, scope: Construct, construct_id: str, *, handler: str, description: str, asynchronous: bool = False
    ) -> None:
        super().__init__(scope, construct_id)
        self.log_group = logs.LogGroup(self, "Logs", retention=logs.RetentionDays.ONE_YEAR)
        self.role = InlineRole(self, "Role", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"), description=description)
        self.function = lambda_.Function(
            self,
            "Function",
            runtime=RUNTIME,
            architecture=lambda_.Architecture.ARM_64,
            handler=handler,
            code=lambda_code(self),
            memory_size=256,
            timeout=Duration.seconds(30),
            role=self.role,
            log_group=self.log_group,
            description=description,
            # Kept by every deploy: an execution started before it still calls the version it started with
            # (the guards' roles may invoke every version of the function: guard.tasks.FunctionTask).
            current_version_options=lambda_.VersionOptions(removal_policy=RemovalPolicy.RETAIN),
        )
        stack = read_once.stack(self)
        Validations.of(stack).acknowledge(
            Acknowledgment(
                id=f"AwsSolutions::AwsSolutions-IAM5[Resource::{as_nag_renders(stack.resolve(self.function.function_arn))}:*]",
                reason="lambda:InvokeFunction on the published versions of one of the library's functions: an execution "
                "started before a deploy calls the version it started with, kept by the deploy.",
            )
        )
        nag.shared_function(self, asynchronous=asynchronous)
        # Only its own log group, instead of the AWSLambdaBasicExecutionRole managed policy.
        self.role.add_to_policy(
            iam.PolicyStatement(
                actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                resources=[self.log_group.log_group_arn],
            )
        )


Shared = TypeVar("Shared", bound=Construct)


def singleton(scope: IConstruct, construct_id: str, kind: type[Shared]) -> Shared:
    stack = read_once.stack(scope)
    made = _MADE.setdefault(stack, {})  # what this module made in the stack: no call into jsii to find it again
    existing = made.get(construct_id)
    if isinstance(existing, kind):
        return existing
    found = stack.node.try_find_child(construct_id)
    made[construct_id] = found if isinstance(found, kind) else kind(stack, construct_id)
    return made[construct_id]  # type: ignore[return-value]  # of kind, as just checked or made


_MADE: weakref.WeakKeyDictionary[Stack, dict[str, IConstruct]] = weakref.WeakKeyDictionary()
