"""``idempotent_constructs.executions``, the public name of ``idempotent_constructs.runtime.executions``:
start executions idempotently by name, and follow a duplicate to the execution holding its key."""

from .runtime.executions import *  # noqa: F403
from .runtime.executions import __all__ as __all__
