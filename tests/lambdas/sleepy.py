"""A test function that takes as long as it is told to (to make a task time out)."""

import time
from typing import Any


def handler(event: dict[str, Any], context: object = None) -> dict[str, Any]:
    time.sleep(float(event.get("seconds", 0)))
    return event
