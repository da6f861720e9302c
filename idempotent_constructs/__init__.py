"""AWS CDK constructs that make any AWS Step Functions workflow, or any step of one, idempotent."""

from __future__ import annotations

import importlib
import importlib.metadata
from typing import TYPE_CHECKING, Any

from .errors import (
    IdempotencyConfigurationError,
    IdempotencyError,
    RecordInProgressError,
    RecordNotFoundError,
    TableNotFoundError,
)

__version__ = importlib.metadata.version("idempotent-constructs")  # set in pyproject.toml only

if TYPE_CHECKING:
    from ._synth.definition import DefinitionLocation
    from .asl_fragment import AslFragment
    from .batch import BatchSource, IdempotentBatch
    from .dashboard import IdempotencyDashboard
    from .guard import ExtendLease, IdempotencyGuard
    from .guarded_state import GuardedState
    from .key import IdempotencyKey
    from .payload import IdempotencyPayload
    from .policies import CompletedPolicy, FailurePolicy, InFlightPolicy, ResultStorage
    from .state_machine import IdempotentStateMachine
    from .table import IdempotencyTable

# The constructs import aws_cdk, which takes a second or more and starts a Node.js process (jsii).
# They load on first use (PEP 562), so that the run-time modules (operations, the command-line tool),
# which import this package first like any submodule's, never pay for the CDK.
_LAZY = {
    "AslFragment": "asl_fragment",
    "BatchSource": "batch",
    "CompletedPolicy": "policies",
    "DefinitionLocation": "_synth.definition",
    "ExtendLease": "guard",
    "FailurePolicy": "policies",
    "GuardedState": "guarded_state",
    "IdempotencyDashboard": "dashboard",
    "IdempotencyGuard": "guard",
    "IdempotencyKey": "key",
    "IdempotencyPayload": "payload",
    "IdempotencyTable": "table",
    "IdempotentBatch": "batch",
    "IdempotentStateMachine": "state_machine",
    "InFlightPolicy": "policies",
    "ResultStorage": "policies",
}

__all__ = [
    "AslFragment",
    "BatchSource",
    "CompletedPolicy",
    "DefinitionLocation",
    "ExtendLease",
    "FailurePolicy",
    "GuardedState",
    "IdempotencyConfigurationError",
    "IdempotencyDashboard",
    "IdempotencyError",
    "IdempotencyGuard",
    "IdempotencyKey",
    "IdempotencyPayload",
    "IdempotencyTable",
    "IdempotentBatch",
    "IdempotentStateMachine",
    "InFlightPolicy",
    "RecordInProgressError",
    "RecordNotFoundError",
    "ResultStorage",
    "TableNotFoundError",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
