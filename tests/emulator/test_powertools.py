"""Emulator end-to-end: a task Lambda using Powertools idempotency shares the workflow's table
(IdempotencyTable.grant_powertools_idempotency; the record schema of idempotent_constructs/lambda_src/schema.py)."""

from __future__ import annotations

import hashlib
import json
import time
from collections import Counter

import pytest
from aws_cdk import App, RemovalPolicy, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_stepfunctions_tasks as tasks

from idempotent_constructs import IdempotencyKey, IdempotencyTable, IdempotentStateMachine
from idempotent_constructs.lambda_src import schema
from idempotent_constructs.testing import Deployment, LocalEmulator
from tests.stacks import packaged_lambda

NAMESPACE = "orders/workflow"
KEY_PREFIX = "orders/powertools"


class PowertoolsInteropStack(Stack):
    """A workflow keyed on the request id whose one task, a Powertools user, is keyed on the order."""

    def __init__(self, scope: App, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        table = IdempotencyTable(self, "Idempotency", removal_policy=RemovalPolicy.DESTROY)
        counters = dynamodb.Table(
            self,
            "Counters",
            partition_key=dynamodb.Attribute(name="name", type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            removal_policy=RemovalPolicy.DESTROY,
        )
        # Powertools comes from the test environment here; a real deployment bundles it or uses its layer.
        charge = packaged_lambda(
            self, "ChargeOrder", "powertools_user.handler", environment={"COUNTER_TABLE_NAME": counters.table_name}
        )
        counters.grant(charge, "dynamodb:UpdateItem")
        table.grant_powertools_idempotency(charge, key_prefix=KEY_PREFIX)
        IdempotentStateMachine(
            self,
            "Orders",
            table=table,
            definition=tasks.LambdaInvoke(self, "Charge", lambda_function=charge, payload_response_only=True),
            key=IdempotencyKey.from_paths("$.request_id"),
            namespace=NAMESPACE,
        )


@pytest.fixture(scope="module")
def interop(emulator: LocalEmulator, tmp_path_factory: pytest.TempPathFactory) -> Deployment:
    app = App(outdir=str(tmp_path_factory.mktemp("powertools-assembly")))
    return emulator.deploy_stack(PowertoolsInteropStack(app, "PowertoolsInterop"))


def order(unique: str, request: str = "first") -> dict:
    return {"request_id": f"{unique}-{request}", "order_id": f"order-{unique}", "amount": 42}


def runs(interop: Deployment, unique: str) -> dict[str, int]:
    """How often the handler's body and ``charge`` really ran for the order."""
    counted = {item["name"]["S"]: int(item["runs"]["N"]) for item in interop.items("Counters")}
    return {what: counted.get(f"{what}#order-{unique}", 0) for what in ("handler", "charge")}


def records(interop: Deployment, prefix: str) -> list[dict]:
    return [item for item in interop.items("Idempotency") if item["id"]["S"].startswith(f"{prefix}#")]


def powertools_id(prefix: str, selection: object) -> str:
    """The record id Powertools derives: the prefix, "#" and the MD5 of the selection as sorted JSON."""
    return f"{prefix}#{hashlib.md5(json.dumps(selection, sort_keys=True).encode()).hexdigest()}"


def test_a_workflow_run_executes_the_handler_and_the_function_once_and_all_three_records_sit_side_by_side(interop, unique):
    payload = order(unique)
    execution = interop.run("Orders", payload)
    assert execution.status == "SUCCEEDED"
    assert "Charge" in execution.entered_states()
    assert execution.output["charged"]["order_id"] == payload["order_id"]
    assert runs(interop, unique) == {"handler": 1, "charge": 1}

    handler_id = powertools_id(KEY_PREFIX, payload["order_id"])
    charge_id = powertools_id(f"{KEY_PREFIX}.charge", {"order_id": payload["order_id"], "amount": 42})
    by_id = {item["id"]["S"]: item for item in interop.items("Idempotency")}
    (workflow_record,) = [item for item in records(interop, NAMESPACE) if json.loads(item[schema.DATA]["S"]) == execution.output]
    for item in (workflow_record, by_id[handler_id], by_id[charge_id]):
        assert item[schema.STATUS]["S"] == schema.COMPLETED
        assert {schema.ID, schema.STATUS, schema.EXPIRATION, schema.IN_PROGRESS_EXPIRATION, schema.DATA} <= set(item)
        # One TTL attribute, in epoch seconds for both (Powertools keeps results 1 hour, the workflow a day).
        assert 0 < int(item[schema.EXPIRATION]["N"]) - time.time() < 2 * 24 * 3600
        assert "S" in item[schema.DATA]
    assert json.loads(by_id[handler_id][schema.DATA]["S"]) == execution.output
    assert json.loads(by_id[charge_id][schema.DATA]["S"]) == execution.output["charged"]


def test_a_new_request_for_the_same_order_runs_the_workflow_again_but_powertools_replays_the_charge(interop, unique):
    first = interop.run("Orders", order(unique, "first"))
    second = interop.run("Orders", order(unique, "second"))
    assert first.status == second.status == "SUCCEEDED"
    assert "Charge" in first.entered_states() and "Charge" in second.entered_states()
    assert second.output == first.output
    assert runs(interop, unique) == {"handler": 1, "charge": 1}


def test_a_workflow_replay_does_not_even_invoke_the_lambda(interop, unique):
    first = interop.run("Orders", order(unique))
    replay = interop.run("Orders", order(unique))
    assert "Charge" not in replay.entered_states()
    assert replay.output == first.output
    assert runs(interop, unique) == {"handler": 1, "charge": 1}


def test_invoking_the_lambda_directly_with_the_same_order_is_served_by_powertools(interop, unique):
    first = interop.run("Orders", order(unique))
    response = interop.emulator.client("lambda").invoke(
        FunctionName=interop.physical_id("AWS::Lambda::Function", "ChargeOrder"),
        Payload=json.dumps(order(unique, "direct")).encode(),
    )
    assert "FunctionError" not in response
    assert json.loads(response["Payload"].read()) == first.output
    assert runs(interop, unique) == {"handler": 1, "charge": 1}


def test_records_of_the_workflow_and_of_powertools_never_collide(interop, unique):
    for request in ("first", "second", "third"):
        assert interop.run("Orders", order(unique, request)).status == "SUCCEEDED"
    items = interop.items("Idempotency")
    assert {item["id"]["S"].partition("#")[0] for item in items} == {NAMESPACE, KEY_PREFIX, f"{KEY_PREFIX}.charge"}
    # Three requests, three workflow records; one order, one record per Powertools decorator.
    of_this_order = [item for item in items if f"order-{unique}" in item[schema.DATA]["S"]]
    assert Counter(item["id"]["S"].partition("#")[0] for item in of_this_order) == {
        NAMESPACE: 3,
        KEY_PREFIX: 1,
        f"{KEY_PREFIX}.charge": 1,
    }
    # Neither layer wrote over the other's records: only the workflow's carry an owner.
    assert all((schema.OWNER in item) == item["id"]["S"].startswith(f"{NAMESPACE}#") for item in of_this_order)
