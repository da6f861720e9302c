"""docs/guides/per-step.md: a guard around each step that has side effects, so that running a failed
workflow again with the same input resumes it (tests/test_docs.py synthesizes it)."""

from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from idempotent_constructs import IdempotencyGuard, IdempotencyKey, IdempotencyTable


def orders(
    self: Construct, table: IdempotencyTable, reserve_task: sfn.IChainable, charge_task: sfn.IChainable, ship_task: sfn.IChainable
) -> None:
    # --8<-- [start:sample]
    key = IdempotencyKey.from_jmespath("[order.id, run || `1`]")  # the business key, and a run number
    reserve = IdempotencyGuard(self, "Reserve", table=table, body=reserve_task, key=key)
    charge = IdempotencyGuard(self, "Charge", table=table, body=charge_task, key=key)
    ship = IdempotencyGuard(self, "Ship", table=table, body=ship_task, key=key)
    sfn.StateMachine(self, "Orders", definition_body=sfn.DefinitionBody.from_chainable(reserve.next(charge).next(ship)))
    # --8<-- [end:sample]
