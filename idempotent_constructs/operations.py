"""``idempotent_constructs.operations``, the public name of ``idempotent_constructs.runtime.operations``:
look a record up, list records, reset one, purge expired ones."""

from .runtime.operations import *  # noqa: F403
from .runtime.operations import __all__ as __all__
