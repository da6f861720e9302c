"""DynamoDB item sizes and write units by DynamoDB's published rules (moto reports no consumed capacity)."""

from __future__ import annotations

import base64
from typing import Any


def item_size(item: dict[str, Any]) -> int:
    """Bytes of a DynamoDB item (in DynamoDB JSON, binary values as bytes or base64 text), by
    DynamoDB's published rules: attribute names plus values; strings and binary by their byte length,
    numbers one byte per two significant digits plus one, lists and maps 3 bytes plus one per element
    (an approximation; the records use S, N and B only, which are exact). moto reports no real
    consumed capacity, so write units are computed from this."""

    def value_size(value: dict[str, Any]) -> int:
        ((kind, content),) = value.items()
        if kind == "S":
            return len(content.encode())
        if kind == "B":
            return len(content) if isinstance(content, bytes) else len(base64.b64decode(content))
        if kind == "N":
            digits = content.lstrip("-").replace(".", "").lstrip("0").rstrip("0") or "0"
            return -(-len(digits) // 2) + 1 + int(content.startswith("-"))
        if kind in ("BOOL", "NULL"):
            return 1
        if kind == "L":
            return 3 + sum(value_size(element) + 1 for element in content)
        if kind == "M":
            return 3 + sum(len(name.encode()) + value_size(element) + 1 for name, element in content.items())
        return sum(len(str(element).encode()) for element in content)  # sets

    return sum(len(name.encode()) + value_size(value) for name, value in item.items())


def write_units(item: dict[str, Any]) -> int:
    """On-demand write request units of writing ``item``: one per started KiB."""
    return -(-item_size(item) // 1024)
