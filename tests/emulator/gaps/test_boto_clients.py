"""testing.gaps.boto_clients: the interpreter's tasks share one boto3 client per service and region
(speed only); moto alone builds one per task."""

from __future__ import annotations


def two_clients():
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import state_task_service_dynamodb

    return [state_task_service_dynamodb.boto_client_for(region="us-east-1", service="dynamodb") for _ in range(2)]


def test_tasks_share_one_client_per_service_and_region(emulator):
    first, second = two_clients()
    assert first is second


def test_without_the_workaround_moto_builds_a_client_per_task(emulator):
    with emulator.without_workaround("boto_clients"):
        first, second = two_clients()
    assert first is not second
