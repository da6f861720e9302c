"""Gap: moto's DynamoDB integration hands binary attributes (B) to the state as Python bytes, which
then sit in the execution's output: moto's own DescribeExecution fails on them ("Object of type bytes
is not JSON serializable").

AWS hands them over base64-encoded, as the DynamoDB API returns them in JSON.

Evidence: tests/emulator/gaps/test_dynamodb_binary.py, a GetItem of a binary attribute.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..patches import Patch


def binary_to_base64(value: Any) -> None:
    """Replace bytes inside a response, in place, by their base64 text."""
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in list(children):
        if isinstance(child, (bytes, bytearray)):
            value[key] = base64.b64encode(child).decode()
        else:
            binary_to_base64(child)


def install(patch: Patch) -> None:
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_dynamodb import (
        StateTaskServiceDynamoDB,
    )

    original = StateTaskServiceDynamoDB._eval_service_task

    def dynamodb_task(task: Any, env: Any, *args: Any, **kwargs: Any) -> None:
        original(task, env, *args, **kwargs)
        binary_to_base64(env.stack[-1])

    patch(StateTaskServiceDynamoDB, "_eval_service_task", dynamodb_task)
