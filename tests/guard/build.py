"""Shared by the guard's tests: a guard around one Pass state, synthesized into a state machine."""

from __future__ import annotations

from aws_cdk import aws_stepfunctions as sfn

from idempotent_constructs import IdempotencyGuard, IdempotencyTable
from tests.synth import only_definition, template


def guarded(**options):
    def build(s):
        guard = IdempotencyGuard(s, "ChargeOnce", table=IdempotencyTable(s, "Table"), body=sfn.Pass(s, "Charge"), **options)
        sfn.StateMachine(s, "Machine", definition_body=sfn.DefinitionBody.from_chainable(guard))

    return only_definition(template(build))


def condition_of(state):
    """The ConditionExpression of a generated DynamoDB request (built by one JSONata expression)."""
    return state["Arguments"].split("'ConditionExpression': '")[1].split("'")[0]
