"""Deterministic, realistic JSON documents of a given size: nested objects, strings, ints and floats."""

from __future__ import annotations

import json
import random
from typing import Any

_WORDS = ["blue", "widget", "express", "fragile", "gift", "bulk", "return", "priority", "eu", "us", "café"]


def order_document(kib: float, seed: int = 0) -> dict[str, Any]:
    """An order with enough lines to make ``kib`` KiB of compact JSON (within a line's length)."""
    rng = random.Random(seed)
    document: dict[str, Any] = {
        "order": {"id": f"ord-{seed:06d}", "created": "2026-11-22T05:00:00Z", "total": 0.0, "currency": "EUR"},
        "customer": {"id": f"cust-{rng.randrange(10**6)}", "tier": "gold", "address": {"city": "Lyon", "zip": "69001"}},
        "lines": [],
    }
    target = int(kib * 1024)
    size = len(json.dumps(document, separators=(",", ":")))
    total = 0.0
    while size < target:
        price = round(rng.uniform(0.5, 900), 2)
        quantity = rng.randrange(1, 50)
        line = {
            "sku": f"SKU-{rng.randrange(10**8):08d}",
            "quantity": quantity,
            "price": price,
            "weight_kg": rng.choice([1.0, 2.5, 0.25, 10.0]),  # integral floats too
            "note": " ".join(rng.choice(_WORDS) for _ in range(rng.randrange(2, 8))),
            "flags": {"gift": rng.random() < 0.1, "fragile": rng.random() < 0.2},
        }
        total += price * quantity
        document["lines"].append(line)
        size += len(json.dumps(line, separators=(",", ":"), ensure_ascii=False).encode()) + 1
    document["order"]["total"] = round(total, 2)
    return document
