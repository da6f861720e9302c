"""Emulator end-to-end: the body reads the id of the record its run holds (IdempotencyGuard.record_id_path,
IdempotentStateMachine.RECORD_ID_PATH), in JSONata and in JSONPath, to pass downstream as the provider's
idempotency key; a run after a failed one reads the same id (contract B20)."""

from __future__ import annotations

import pytest
from aws_cdk import App, RemovalPolicy, Stack
from aws_cdk import aws_stepfunctions as sfn

from idempotent_constructs import IdempotencyGuard, IdempotencyKey, IdempotencyTable, IdempotentStateMachine
from idempotent_constructs.testing import Deployment, LocalEmulator
from tests.samples import docs_sample
from tests.stacks import packaged_lambda, side_effects_table


class DownstreamStack(Stack):
    """``Whole``: a workflow whose body outputs the key it would send downstream, read in JSONata and in
    JSONPath, and fails while the input says so; ``Step``: a guard of its own whose body does the same;
    ``LambdaPayments``: the Lambda recipe, whose provider loses its first reply under each key."""

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
        # The event sources guide's Lambda recipe, its provider's first reply lost.
        ledger = side_effects_table(self)
        provider = packaged_lambda(
            self, "Provider", "provider.handler", environment={"COUNTER_TABLE": ledger.table_name, "LOSE_FIRST_REPLY": "1"}
        )
        ledger.grant_read_write_data(provider)
        docs_sample("downstream_key").lambda_payments(self, table, provider)


@pytest.fixture(scope="module")
def downstream(emulator: LocalEmulator) -> Deployment:
    return emulator.deploy_stack(DownstreamStack(App(), "Downstream"))


def test_a_workflows_body_reads_its_record_id_in_jsonata_and_jsonpath_the_same_after_a_failed_run(downstream, unique):
    failed = downstream.run("Whole", {"order": unique, "fail": True})
    assert (failed.status, failed.error) == ("FAILED", "ProviderDown")
    run = downstream.run("Whole", {"order": unique, "fail": False})
    assert run.status == "SUCCEEDED", (run.error, run.cause)
    (record_id,) = downstream.records_of(run, "Idempotency")
    assert run.output == {"jsonata": record_id, "jsonpath": record_id}


def test_a_guards_body_reads_the_id_of_its_own_record(downstream, unique):
    run = downstream.run("Step", {"order": unique})
    assert run.status == "SUCCEEDED", (run.error, run.cause)
    (record_id,) = downstream.records_of(run, "Idempotency")
    assert run.output == {"key": record_id} and record_id.startswith("Downstream/ChargeOnce#")


def test_a_lost_reply_runs_the_body_again_and_the_provider_deduplicates_on_the_record_id(downstream, unique):
    payment = {"payment_id": unique, "amount": 42}
    lost = downstream.run("LambdaPayments", payment)
    assert lost.status == "FAILED" and "ReplyLost" in f"{lost.error} {lost.cause}", (lost.error, lost.cause)
    redelivered = downstream.run("LambdaPayments", payment)  # the key was released: the body runs again
    assert redelivered.status == "SUCCEEDED", (redelivered.error, redelivered.cause)
    (record_id,) = downstream.records_of(redelivered, "Idempotency")
    assert redelivered.output["Payload"] == {"charged": 42, "idempotency_key": record_id}
    (charge,) = [item for item in downstream.items("SideEffects") if item["id"]["S"] == f"Charge#{record_id}"]
    assert charge["calls"]["N"] == "2"  # two calls, one charge: the provider answered the second with the first
