"""docs/guides/asl-files.md: an existing Amazon States Language file made idempotent as a whole, used as
one step of a CDK chain, and with one of its states guarded by name (tests/test_docs.py synthesizes
each, in a directory holding statemachine/booking.asl.json and statemachine/refund.asl.json)."""

from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from idempotent_constructs import AslFragment, IdempotencyGuard, IdempotencyKey, IdempotencyTable, IdempotentStateMachine


def whole(self: Construct) -> tuple[lambda_.IFunction, sns.Topic]:
    # --8<-- [start:whole]
    reserve = lambda_.Function.from_function_name(self, "ReserveFlight", "reserve-flight")
    topic = sns.Topic(self, "Notices")

    booking = IdempotentStateMachine(
        self,
        "Booking",
        table=IdempotencyTable(self, "Idempotency"),
        definition_body=sfn.DefinitionBody.from_file("statemachine/booking.asl.json"),
        definition_substitutions={"ReserveFlightFunction": reserve.function_arn, "NotifyTopic": topic.topic_arn},
        key=IdempotencyKey.from_paths("$.trip_id"),
    )
    # As with sfn.StateMachine and a file, the role gets nothing for what the document calls: grant it.
    booking.state_machine.add_to_role_policy(
        iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=[reserve.function_arn])
    )
    topic.grant_publish(booking.state_machine)
    # --8<-- [end:whole]
    return reserve, topic


def fragment(self: Construct, table: IdempotencyTable, refund_function: lambda_.IFunction, validate: sfn.INextable) -> None:
    # --8<-- [start:fragment]
    refund = AslFragment(
        self,
        "Refund",
        definition_body=sfn.DefinitionBody.from_file("statemachine/refund.asl.json"),
        definition_substitutions={"RefundFunction": refund_function.function_arn},
    )
    refund_once = IdempotencyGuard(self, "RefundOnce", table=table, body=refund, key=IdempotencyKey.from_paths("$.trip_id"))
    sfn.StateMachine(self, "Refunds", definition_body=sfn.DefinitionBody.from_chainable(validate.next(refund_once)))
    # --8<-- [end:fragment]


def guarded(self: Construct, reserve: lambda_.IFunction, topic: sns.ITopic) -> IdempotentStateMachine:
    # --8<-- [start:guarded]
    booking = IdempotentStateMachine(
        self,
        "GuardedBooking",
        table=IdempotencyTable(self, "BookingRecords"),
        definition_body=sfn.DefinitionBody.from_file("statemachine/booking.asl.json"),
        definition_substitutions={"ReserveFlightFunction": reserve.function_arn, "NotifyTopic": topic.topic_arn},
        key=IdempotencyKey.from_paths("$.trip_id"),
        guard_states={"ReserveFlight": IdempotencyKey.from_paths("$.trip_id")},
        # or GuardedState(key=..., on_failure=FailurePolicy.CACHE, ...): the guard's other options
    )
    # --8<-- [end:guarded]
    return booking
