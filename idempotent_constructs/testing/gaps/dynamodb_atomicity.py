"""Gap: moto's DynamoDB checks a write's condition and then writes without a lock, so two concurrent
conditional writes can both succeed; and it updates items in place, so a read during an update can
see half of it.

AWS makes each item write atomic, its condition included, and each strongly consistent read sees
whole writes (DynamoDB's condition expressions and read consistency). Here item reads and writes are
serialized, and reads are handed a copy.

Evidence: tests/emulator/gaps/test_dynamodb_atomicity.py: concurrent conditional puts of one item.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..patches import Patch

ITEM_OPERATIONS = ("get_item", "put_item", "update_item", "delete_item", "transact_write_items")


def install(patch: Patch) -> None:
    from moto.dynamodb.models import DynamoDBBackend

    lock = threading.RLock()
    for name in ITEM_OPERATIONS:
        original = getattr(DynamoDBBackend, name)

        def serialized(*args: Any, _original: Callable[..., Any] = original, **kwargs: Any) -> Any:
            with lock:
                return copy.deepcopy(_original(*args, **kwargs))

        patch(DynamoDBBackend, name, serialized)
