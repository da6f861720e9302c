"""docs/guides/lock-control.md: a long body that extends its lease, and a caller that follows a
duplicate to the execution holding its key (tests/test_docs.py synthesizes the first and runs the
second on the local emulator)."""

from aws_cdk import Duration
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from idempotent_constructs import IdempotencyTable, IdempotentStateMachine
from idempotent_constructs.executions import IdempotentStart


def export(self: Construct, table: IdempotencyTable, start: sfn.INextable, more_to_do: sfn.IChainable) -> IdempotentStateMachine:
    # --8<-- [start:extend]
    from idempotent_constructs import ExtendLease

    tick = sfn.Wait(self, "Tick", time=sfn.WaitTime.duration(Duration.minutes(1)))
    tick.next(ExtendLease(self, "KeepAlive")).next(more_to_do)  # more_to_do loops back to tick
    export = IdempotentStateMachine(
        self,
        "Export",
        table=table,
        definition=start.next(tick),
        lease=Duration.minutes(3),
        state_machine_type=sfn.StateMachineType.EXPRESS,
    )
    # --8<-- [end:extend]
    return export


def follow(
    failed_execution_arn: str, orders_arn: str, payload: dict[str, object], order_id: str
) -> tuple[IdempotentStart | None, IdempotentStart]:
    # --8<-- [start:follow]
    from idempotent_constructs.executions import in_flight_holder, start_idempotent_execution

    holder = in_flight_holder(failed_execution_arn)  # None unless it failed with Idempotency.InFlight
    if holder is not None:
        ...  # poll holder.execution_arn for its output
    start = start_idempotent_execution(orders_arn, payload, key=order_id)  # the execution doing the work
    # --8<-- [end:follow]
    return holder, start
