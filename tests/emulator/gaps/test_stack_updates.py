"""testing.gaps.stack_updates: a stack update keeps a removed resource whose DeletionPolicy is Retain and
deletes a removed function version without it, as CloudFormation does; moto alone does the opposite."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from aws_cdk import App, RemovalPolicy, Stack
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from botocore.exceptions import ClientError

LAMBDAS = Path(__file__).parents[2] / "lambdas"  # any code: these functions are never invoked


def versioned(name: str, revision: int) -> Stack:
    """Two functions, each with its current version (one retained), and a retained queue in the first
    revision only. A revision is a new configuration: each current version leaves the template for another."""
    stack = Stack(App(), name)
    for function, policy in (("Kept", RemovalPolicy.RETAIN), ("Dropped", RemovalPolicy.DESTROY)):
        _ = lambda_.Function(  # its current version is made by reading it
            stack,
            function,
            function_name=f"{name}-{function}",
            runtime=lambda_.Runtime.PYTHON_3_13,
            handler="step.handler",
            code=lambda_.Code.from_asset(str(LAMBDAS)),  # moto updates no inline code
            environment={"REVISION": str(revision)},
            current_version_options=lambda_.VersionOptions(removal_policy=policy),
        ).current_version
    if revision == 1:
        sqs.Queue(stack, "Queue", queue_name=f"{name}-queue").apply_removal_policy(RemovalPolicy.RETAIN)
    return stack


def exists(call) -> bool:
    try:
        call()
    except ClientError:
        return False
    return True


@pytest.fixture
def updated(emulator, request):
    """The stack's name, its first revision deployed, then updated to the second (with the workaround, or
    without it: ``request.param``)."""
    name = f"StackUpdates{uuid.uuid4().hex[:6]}"
    emulator.deploy_stack(versioned(name, 1))
    if request.param:
        emulator.update_stack(versioned(name, 2))
    else:
        with emulator.without_workaround("stack_updates"):
            emulator.update_stack(versioned(name, 2))
    yield name
    emulator.client("cloudformation").delete_stack(StackName=name)


@pytest.mark.parametrize("updated", [True], indirect=True)
def test_an_update_changes_resources_then_removes_the_old_keeping_what_is_retained(emulator, updated):
    name, lambda_client, queues = updated, emulator.client("lambda"), emulator.client("sqs")
    assert exists(lambda: lambda_client.get_function(FunctionName=f"{name}-Kept", Qualifier="1"))
    assert not exists(lambda: lambda_client.get_function(FunctionName=f"{name}-Dropped", Qualifier="1"))
    new = lambda_client.get_function(FunctionName=f"{name}-Dropped", Qualifier="2")["Configuration"]
    assert new["Environment"]["Variables"] == {"REVISION": "2"}  # published from the function as updated
    assert exists(lambda: queues.get_queue_url(QueueName=f"{name}-queue"))


@pytest.mark.parametrize("updated", [False], indirect=True)
def test_without_the_workaround_moto_deletes_the_retained_queue_keeps_every_version_and_publishes_the_old_code(emulator, updated):
    name, lambda_client, queues = updated, emulator.client("lambda"), emulator.client("sqs")
    assert exists(lambda: lambda_client.get_function(FunctionName=f"{name}-Dropped", Qualifier="1"))
    assert not exists(lambda: queues.get_queue_url(QueueName=f"{name}-queue"))
    (old,) = [
        v for v in lambda_client.list_versions_by_function(FunctionName=f"{name}-Kept")["Versions"] if v["Version"] != "$LATEST"
    ]
    assert old["Environment"]["Variables"] == {"REVISION": "1"}  # the new template's version, of the old configuration


@pytest.mark.parametrize("updated", [True], indirect=True)
def test_a_version_deleted_by_an_update_is_never_numbered_again(emulator, updated):
    name, lambda_client = updated, emulator.client("lambda")
    emulator.update_stack(versioned(name, 3))  # Dropped's version 2 removed, as 1 was: the new one is 3
    assert not exists(lambda: lambda_client.get_function(FunctionName=f"{name}-Dropped", Qualifier="2"))
    third = lambda_client.get_function(FunctionName=f"{name}-Dropped", Qualifier="3")["Configuration"]
    assert third["Environment"]["Variables"] == {"REVISION": "3"}
