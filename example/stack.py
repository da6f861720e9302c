"""OrdersStack: validate, charge (guarded by order id), choose shipping, ship; idempotent as a whole."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aws_cdk import Duration, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

from idempotent_constructs import IdempotencyGuard, IdempotencyKey, IdempotencyTable, IdempotentStateMachine
from idempotent_constructs._synth.functions import RUNTIME


class OrdersStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        table = IdempotencyTable(self, "Idempotency")

        charge_logs = logs.LogGroup(self, "ChargeLogs", retention=logs.RetentionDays.ONE_YEAR)
        charge_role = iam.Role(self, "ChargeRole", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
        charge_role.add_to_policy(
            iam.PolicyStatement(actions=["logs:CreateLogStream", "logs:PutLogEvents"], resources=[charge_logs.log_group_arn])
        )
        charge_function = lambda_.Function(
            self,
            "ChargeFunction",
            runtime=RUNTIME,
            architecture=lambda_.Architecture.ARM_64,
            handler="charge.handler",
            code=lambda_.Code.from_asset(str(Path(__file__).parent / "charge"), exclude=["__pycache__"]),
            timeout=Duration.seconds(10),
            role=charge_role,
            log_group=charge_logs,
        )

        validate = sfn.Pass(
            self,
            "Validate",
            parameters={
                "order.$": "$.order",
                "customer.$": "$.customer",
                "payment.$": "$.payment",
                "shipping.$": "$.shipping",
            },
        )
        charge = tasks.LambdaInvoke(
            self,
            "Charge",
            lambda_function=charge_function.current_version,
            payload_response_only=True,
            result_path="$.charge",
        )
        charge_once = IdempotencyGuard(self, "ChargeOnce", table=table, body=charge, key=IdempotencyKey.from_paths("$.order.id"))
        ship_express = sfn.Pass(
            self,
            "ShipExpress",
            parameters={"order_id.$": "$.order.id", "charge.$": "$.charge", "carrier": "express-air"},
        )
        ship_standard = sfn.Pass(
            self,
            "ShipStandard",
            parameters={"order_id.$": "$.order.id", "charge.$": "$.charge", "carrier": "ground"},
        )
        choose_shipping = (
            sfn.Choice(self, "ExpressShipping?")
            .when(sfn.Condition.string_equals("$.shipping", "express"), ship_express)
            .otherwise(ship_standard)
        )

        self.orders = IdempotentStateMachine(
            self,
            "Orders",
            table=table,
            definition=validate.next(charge_once).next(choose_shipping),
            key=IdempotencyKey.from_paths("$.order.id", "$.customer.id"),
            poll_interval=Duration.seconds(1),
            max_wait=Duration.minutes(2),
        )
        self.table = table
