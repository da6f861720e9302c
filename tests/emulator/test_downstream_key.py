"""Emulator end-to-end: the body reads the id of the record its run holds (IdempotencyGuard.record_id_path,
IdempotentStateMachine.RECORD_ID_PATH), in JSONata and in JSONPath, to pass downstream as the provider's
idempotency key; a run after a failed one reads the same id (contract B20)."""

from __future__ import annotations

import pytest
from aws_cdk import App, RemovalPolicy, Stack
from aws_cdk import aws_stepfunctions as sfn

from idempotent_constructs import IdempotencyGuard, IdempotencyKey, IdempotencyTable, IdempotentStateMachine
from idempotent_constructs.testing import Deployment, LocalEmulator


class DownstreamStack(Stack):
    """``Whole``: a workflow whose body outputs the key it would send downstream, read in JSONata and in
    JSONPath, and fails while the input says so; ``Step``: a guard of its own whose body does the same."""

    def __init__(self, scope: App, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        table = IdempotencyTable(self, "Idempotency", removal_policy=RemovalPolicy.DESTROY)
        path = IdempotentStateMachine.RECORD_ID_PATH
        read = sfn.Pass(self, "ReadInJsonPath", parameters={"jsonpath.$": path, "fail.$": "$.fail"})
        send = sfn.Pass.jsonata(
            self, "Send", outputs={"jsonata": "{% " + path + " %}", "jsonpath": "{% $states.input.jsonpath %}"}
        )
        failing = sfn.Choice.jsonata(self, "Fails").when(
            sfn.Condition.jsonata("{% $states.input.fail = true %}"), sfn.Fail(self, "ProviderDown", error="ProviderDown")
        )
        IdempotentStateMachine(
            self,
            "Whole",
            table=table,
            definition=read.next(failing.otherwise(send)),
            key=IdempotencyKey.from_paths("$.order"),
        )
        step = IdempotencyGuard(
            self,
            "ChargeOnce",
            table=table,
            body=sfn.Pass.jsonata(
                self, "Charge", outputs={"key": "{% " + IdempotencyGuard.record_id_path("ChargeOnce.") + " %}"}
            ),
            key=IdempotencyKey.from_paths("$.order"),
        )
        sfn.StateMachine(self, "Step", definition_body=sfn.DefinitionBody.from_chainable(step))


@pytest.fixture(scope="module")
def downstream(emulator: LocalEmulator) -> Deployment:
    return emulator.deploy_stack(DownstreamStack(App(), "Downstream"))


def test_a_workflows_body_reads_its_record_id_in_jsonata_and_jsonpath_the_same_after_a_failed_run(downstream, unique):
    failed = downstream.run("Whole", {"order": unique, "fail": True})
    assert (failed.status, failed.error) == ("FAILED", "ProviderDown")
    run = downstream.run("Whole", {"order": unique, "fail": False})
    assert run.status == "SUCCEEDED", (run.error, run.cause)
    (record_id,) = downstream.records_of(run)
    assert run.output == {"jsonata": record_id, "jsonpath": record_id}


def test_a_guards_body_reads_the_id_of_its_own_record(downstream, unique):
    run = downstream.run("Step", {"order": unique})
    assert run.status == "SUCCEEDED", (run.error, run.cause)
    (record_id,) = downstream.records_of(run)
    assert run.output == {"key": record_id} and record_id.startswith("Downstream/ChargeOnce#")
