"""AWS CDK constructs that make any AWS Step Functions workflow, or any step of one, idempotent."""

from .errors import IdempotencyConfigurationError, IdempotencyError, RecordInProgressError, RecordNotFoundError
from .guard import IdempotencyGuard
from .key import IdempotencyKey
from .policies import FailurePolicy, InFlightPolicy, ResultStorage
from .state_machine import IdempotentStateMachine
from .table import IdempotencyTable

__all__ = [
    "FailurePolicy",
    "IdempotencyConfigurationError",
    "IdempotencyError",
    "IdempotencyGuard",
    "IdempotencyKey",
    "IdempotencyTable",
    "IdempotentStateMachine",
    "InFlightPolicy",
    "RecordInProgressError",
    "RecordNotFoundError",
    "ResultStorage",
]
