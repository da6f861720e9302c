"""Emulator end-to-end: two environments' stacks sharing one table never see each other's records (issue 4)."""

from __future__ import annotations

import pytest
from aws_cdk import App, RemovalPolicy, Stack
from aws_cdk import aws_stepfunctions as sfn

from idempotent_constructs import IdempotencyKey, IdempotencyTable, IdempotentStateMachine
from idempotent_constructs.testing import Deployment, LocalEmulator

KEY = IdempotencyKey.from_paths("$.order.id")


class SharedTableStack(Stack):
    def __init__(self, scope: App, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        self.table = IdempotencyTable(self, "Idempotency", removal_policy=RemovalPolicy.DESTROY)


class OrdersStack(Stack):
    """The same workflow, deployed once per environment; its default namespace is "{stack id}/Orders"."""

    def __init__(self, scope: App, construct_id: str, *, table: IdempotencyTable) -> None:
        super().__init__(scope, construct_id)
        self.orders = IdempotentStateMachine(
            self, "Orders", table=table, definition=sfn.Pass(self, "Charge", parameters={"charged.$": "$.order.id"}), key=KEY
        )


@pytest.fixture(scope="module")
def environments(emulator: LocalEmulator, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Deployment]:
    app = App(outdir=str(tmp_path_factory.mktemp("environments-assembly")))
    shared = SharedTableStack(app, "Shared")
    stacks = {name: OrdersStack(app, name, table=shared.table) for name in ("Dev", "Prod")}
    return {"Shared": emulator.deploy_stack(shared)} | {name: emulator.deploy_stack(stack) for name, stack in stacks.items()}


def test_the_same_request_in_dev_and_prod_runs_in_each_with_its_own_record_in_the_shared_table(environments, unique):
    request = {"order": {"id": unique}}
    dev, prod = (environments[name].run("Orders", request) for name in ("Dev", "Prod"))
    assert "Charge" in dev.entered_states() and "Charge" in prod.entered_states()
    (dev_record,) = environments["Shared"].records_of(dev)
    (prod_record,) = environments["Shared"].records_of(prod)
    assert dev_record == KEY.record_id(request, namespace="Dev/Orders")
    assert prod_record == KEY.record_id(request, namespace="Prod/Orders")


def test_a_replay_in_one_environment_leaves_the_other_alone(environments, unique):
    request = {"order": {"id": unique}}
    environments["Dev"].run("Orders", request)
    replay = environments["Dev"].run("Orders", request)
    assert replay.entered_states()[-1] == "Idempotency.Replay"
    first_in_prod = environments["Prod"].run("Orders", request)
    assert "Charge" in first_in_prod.entered_states()
