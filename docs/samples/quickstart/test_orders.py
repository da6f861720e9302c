# test_orders.py
from aws_cdk import App

from idempotent_constructs.testing import Faults, LocalEmulator
from orders import OrdersStack

ORDER = {"order": {"id": 1}, "customer": {"id": 7}}


def test_a_duplicate_gets_the_first_output_and_concurrent_ones_run_the_workflow_once():
    with LocalEmulator() as emulator:
        deployment = emulator.deploy_stack(OrdersStack(App(), "Orders"))  # or emulator.deploy("cdk.out", "Orders")
        first = deployment.run("Orders", ORDER)
        again = deployment.run("Orders", ORDER)
        assert first.status == again.status == "SUCCEEDED" and again.output == first.output
        assert "Charge" in first.entered_states() and "Idempotency.Replay" in again.entered_states()
        assert "Charge" not in again.entered_states() and again.lambda_invocations() == 0
        records = deployment.records_of(first)  # the workflow's record and the ChargeOnce step's
        assert len(records) == 2 and {r["status"]["S"] for r in records.values()} == {"COMPLETED"}

        other = {"order": {"id": 2}, "customer": {"id": 7}}
        arns = [deployment.start("Orders", other) for _ in range(3)]
        executions = [deployment.wait(arn) for arn in arns]
        assert [e.status for e in executions] == ["SUCCEEDED"] * 3
        assert sum("Idempotency.Body" in e.entered_states() for e in executions) == 1
        emulator.settle()  # what the executions set off has run before the next test


def test_a_duplicate_arriving_mid_run_waits_for_the_first_and_gets_its_output():
    with LocalEmulator() as emulator:
        deployment = emulator.deploy_stack(OrdersStack(App(), "Orders"))
        with emulator.hold("Validate") as gate:  # the first run stops in its body, holding the key
            first = deployment.start("Orders", ORDER)
            gate.arrived()
            duplicate = deployment.start("Orders", ORDER)
            deployment.wait_for_state(duplicate, "Idempotency.Busy")  # it polls while the first runs
            gate.release()
        held, waited = deployment.wait(first), deployment.wait(duplicate)
        assert held.status == waited.status == "SUCCEEDED" and waited.output == held.output
        assert "Validate" not in waited.entered_states()
        emulator.settle()


def test_throttled_writes_are_retried_and_states_can_be_tried_alone():
    with LocalEmulator() as emulator:
        deployment = emulator.deploy_stack(OrdersStack(App(), "Orders"))
        with emulator.faults(Faults(dynamodb=0.3, seed=5)) as faults:  # DynamoDB throttling on 30% of calls
            assert deployment.run("Orders", ORDER).status == "SUCCEEDED"
        assert faults.injected["dynamodb"] >= 1  # drawn from the seed and each call: the same calls in every run
        hashed = emulator.run_definition(
            {
                "QueryLanguage": "JSONata",
                "StartAt": "H",
                "States": {"H": {"Type": "Pass", "Output": {"h": "{% $hash($states.input.id, 'SHA-256') %}"}, "End": True}},
            },
            {"id": "a"},
        )
        assert hashed.output == {"h": "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb"}
        emulator.settle()
