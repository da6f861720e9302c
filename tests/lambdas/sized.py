"""Returns a deterministic order-like result of about ``event["kib"]`` KiB of JSON (``seed`` varies it,
``repetitive`` makes every line alike). The size is that of ``json.dumps`` with its default spacing, as
the Lambda runtime sends it and as the emulator measures it against the 256 KiB payload limit."""

import json
import random
from typing import Any


def handler(event: dict[str, Any], context: object = None) -> dict[str, Any]:
    rng = random.Random(event.get("seed", 0))
    words = ["blue", "widget", "express", "fragile", "gift", "bulk", "return", "priority", "eu", "us"]
    lines, size, target = [], 2, int(event["kib"] * 1024) - 64
    while size < target:
        if event.get("repetitive"):  # every line alike: compresses to almost nothing
            rng.seed(event.get("seed", 0))
        line = {
            "sku": f"SKU-{rng.randrange(10**8):08d}",
            "quantity": rng.randrange(1, 50),
            "price": round(rng.uniform(0.5, 900), 2),
            "note": " ".join(rng.choice(words) for _ in range(rng.randrange(2, 8))),
            "ok": rng.random() < 0.9,
        }
        size += len(json.dumps(line)) + 2
        lines.append(line)
    return {"id": event["id"], "lines": lines}
