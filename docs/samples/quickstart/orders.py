# orders.py
from aws_cdk import Stack
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from idempotent_constructs import IdempotencyGuard, IdempotencyKey, IdempotencyTable, IdempotentStateMachine


class OrdersStack(Stack):
    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        table = IdempotencyTable(self, "Idempotency")  # retained, encrypted, TTL on
        validate = sfn.Pass(self, "Validate")
        charge = sfn.Pass(self, "Charge")  # your Lambda task, say
        ship = sfn.Pass(self, "Ship")
        charge_once = IdempotencyGuard(
            self, "ChargeOnce", table=table, body=charge, key=IdempotencyKey.from_paths("$.order.id")
        )  # one step, once per order
        self.orders = IdempotentStateMachine(
            self,
            "Orders",
            table=table,
            definition=validate.next(charge_once).next(ship),  # any chain of states
            key=IdempotencyKey.from_paths("$.order.id", "$.customer.id"),
        )  # the whole workflow, once per key
        self.orders.state_machine  # the sfn.StateMachine
