"""The body of the shapes section's workflows (bench/shapes.py): returns its input."""

from typing import Any


def handler(event: Any, context: object = None) -> Any:
    return event
