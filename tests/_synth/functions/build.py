"""Shared by the shared functions' tests: a stack of workflows with large results."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_stepfunctions as sfn

from idempotent_constructs import IdempotencyTable, IdempotentStateMachine, ResultStorage
from tests.synth import template


def large_results(**storage):
    def build(s):
        table = IdempotencyTable(s, "Table")
        for name, days in (("Orders", 1), ("Refunds", 30)):
            IdempotentStateMachine(
                s,
                name,
                table=table,
                definition=sfn.Pass(s, f"{name}Work"),
                namespace=f"orders/{name.lower()}",
                expires_after=Duration.days(days),
                result_storage=ResultStorage.large(**storage),
            )

    return template(build)
