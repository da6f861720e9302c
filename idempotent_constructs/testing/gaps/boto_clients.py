"""Not a gap of behaviour, of speed: moto's interpreter builds a new boto3 client for every task it runs.

Under many concurrent executions that costs seconds of CPU per call. One client per service and
region is reused instead (boto3 clients are thread-safe; retries stay disabled, as moto set them).
Nothing observable changes, so no test shows a difference; tests/emulator/gaps/test_boto_clients.py
checks that clients are shared.
"""

from __future__ import annotations

import importlib
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..patches import Patch

_MODULES_USING_BOTO_CLIENT_FOR = (
    "state_task.lambda_eval_utils",
    "state_task.service.state_task_service_dynamodb",
    "state_task.service.state_task_service_aws_sdk",
    "state_task.service.state_task_service_sfn",
)


def install(patch: Patch) -> None:
    from moto.stepfunctions.parser.asl.utils import boto_client

    make_client = boto_client.boto_client_for
    clients: dict[tuple[str, str], Any] = {}
    lock = threading.Lock()

    def cached_client(region: str, service: str, state_credentials: Any = None) -> Any:
        with lock:
            if (region, service) not in clients:
                clients[(region, service)] = make_client(region=region, service=service)
            return clients[(region, service)]

    for name in _MODULES_USING_BOTO_CLIENT_FOR:
        module = importlib.import_module(f"moto.stepfunctions.parser.asl.component.state.exec.{name}")
        patch(module, "boto_client_for", cached_client)
