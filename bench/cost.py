"""Section 2: cost per million executions of each path, from the measured overhead and a price table.

Prices: us-east-1, on-demand, without free tiers. Taken on 2026-11-22 from the public pricing pages
(which carry no "last updated" date; where known, the date each price took effect is given):

* Step Functions Standard, https://aws.amazon.com/step-functions/pricing/ : $0.025 per 1,000 state
  transitions (unchanged since Standard workflows launched in 2016). "Step Functions counts a state
  transition each time a step of your workflow is executed ... including retries."
* Lambda, https://aws.amazon.com/lambda/pricing/ : $0.20 per 1M requests; duration per GB-second,
  first pricing tier: arm64 $0.0000133334 (since Graviton2 support, 2021-09-29), x86_64 $0.0000166667;
  duration billed in 1 ms increments (since 2020-12-01).
* DynamoDB on-demand, https://aws.amazon.com/dynamodb/pricing/on-demand/ : $0.625 per million write
  request units, $0.125 per million read request units (since the price reduction of 2024-11-01).
* S3 Standard, https://aws.amazon.com/s3/pricing/ : PUT $0.005 per 1,000 requests, GET $0.0004 per
  1,000 (only large results stored through the result function touch S3).

How DynamoDB counts units (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/
read-write-operations.html and WorkingWithItems.html#WorkingWithItems.ConditionalUpdate): a strongly
consistent read costs one RRU per started 4 KB of the item, an eventually consistent one half of that,
also for an absent item; a write one WRU per started 1 KB of the larger of the item before and after
(PutItem, UpdateItem) or of the deleted item; a write whose condition fails still costs one WRU per
started KB of the existing item (at least one); a transactional write twice the units of its items
(assumed the same for a transaction cancelled by its condition). Item sizes are DynamoDB's
(``idempotent_constructs.testing.item_size``), measured on the items each call touched in the emulator.

Lambda duration: each function's median warm run time measured in the emulator (in-process, this
machine), rounded up to the 1 ms billing increment, at the memory configured in the template. Cold
starts (and their INIT duration) are not included.
"""

from __future__ import annotations

import math
from typing import Any

PRICES = {
    "region": "us-east-1",
    "taken_on": "2026-11-22",
    "state_transition": 0.025 / 1000,
    "lambda_request": 0.20 / 1_000_000,
    "lambda_gb_second": {"arm64": 0.0000133334, "x86_64": 0.0000166667},
    "dynamodb_write_request_unit": 0.625 / 1_000_000,
    "dynamodb_read_request_unit": 0.125 / 1_000_000,
    "s3_put_request": 0.005 / 1000,
    "s3_get_request": 0.0004 / 1000,
}
MILLION = 1_000_000


def path_cost(measured: dict[str, Any], functions: dict[str, dict[str, Any]]) -> dict[str, float]:
    """Dollars per million executions of one measured path, by component."""
    gb_seconds: dict[str, float] = {}
    for name, count in measured["lambda"]["by_function"].items():
        function = functions[name]
        billed_seconds = math.ceil(function["median_ms"]) / 1000
        gb_seconds[function["architecture"]] = (
            gb_seconds.get(function["architecture"], 0.0) + count * billed_seconds * function["memory_mb"] / 1024
        )
    s3 = measured["s3_calls_in_lambda"]
    parts = {
        "transitions": measured["transitions"] * PRICES["state_transition"],
        "lambda_requests": measured["lambda_invocations"] * PRICES["lambda_request"],
        "lambda_duration": sum(seconds * PRICES["lambda_gb_second"][arch] for arch, seconds in gb_seconds.items()),
        "dynamodb_writes": measured["write_units"] * PRICES["dynamodb_write_request_unit"],
        "dynamodb_reads": measured["read_units"] * PRICES["dynamodb_read_request_unit"],
        "s3_requests": s3.get("PutObject", 0) * PRICES["s3_put_request"] + s3.get("GetObject", 0) * PRICES["s3_get_request"],
    }
    per_million = {name: round(value * MILLION, 4) for name, value in parts.items()}
    per_million["total"] = round(sum(parts.values()) * MILLION, 4)
    return per_million


# Which measurement prices each path, for a small and a 100 KiB result. A duplicate waiting for a
# holder reads the holder's record in progress, which holds no result yet: the same for both sizes.
PATHS = {
    "first_run": ("first_run", "first_run_100k"),
    "replay": ("replay", "replay_100k"),
    "poll_cycle": ("poll_cycle", "poll_cycle"),
    "takeover": ("takeover", "takeover_100k"),
}


def run(overhead: dict[str, Any]) -> dict[str, Any]:
    """Per million executions (per million poll cycles for ``poll_cycle``) of every variant and path."""
    functions = overhead["lambda_functions"]
    table: dict[str, Any] = {}
    for variant, entry in overhead["variants"].items():
        measured = dict(entry)
        if entry.get("waiting") and entry["waiting"]["cycle"]:
            measured["poll_cycle"] = entry["waiting"]["cycle"]
        rows = {}
        for path, (small, big) in PATHS.items():
            if small not in measured or measured[small] is None:
                continue
            rows[path] = {
                "small": path_cost(measured[small], functions),
                f"{overhead['big_result_kib']}_kib": path_cost(measured[big], functions),
            }
        table[variant] = rows
    return {"prices": PRICES, "per_million": table}
