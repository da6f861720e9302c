"""Section 5: key hashing against Powertools, and the import time of each Lambda handler module.

Ours: what the key function computes for a whole-input key, ``canonical.idempotency_id`` (the record
id: canonical JSON, SHA-256), and ``canonical.key_and_validation``, the id and the payload's validation
hash from one canonical serialization, which is what the key function calls.
Powertools (aws_lambda_powertools 3.37.0): ``BasePersistenceLayer._get_hashed_idempotency_key``, the
method its idempotency handler calls to key an event (JMESPath selection, then ``_generate_hash``:
``json.dumps(..., sort_keys=True)`` and MD5 by default), on a ``DynamoDBPersistenceLayer`` configured
for the whole event; and with ``_get_hashed_payload`` too when payload validation is on (``"@"``).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from idempotent_constructs._synth.functions import lambda_source_dir
from idempotent_constructs.lambda_src import canonical, schema

from .lambdas.payloads import order_document

HANDLER_MODULES = ("compute_key", "release", "results")
NAMESPACE = "Bench/Orders"


def powertools_layers() -> tuple[Any, Any]:
    """Two persistence layers as the idempotency decorator configures them: keyed on the whole event,
    without and with payload validation. No AWS call is made (hashing only)."""
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer, IdempotencyConfig

    key_only = DynamoDBPersistenceLayer(table_name="bench")
    key_only.configure(IdempotencyConfig(), function_name="handler")
    validated = DynamoDBPersistenceLayer(table_name="bench")
    validated.configure(IdempotencyConfig(payload_validation_jmespath="@"), function_name="handler")
    return key_only, validated


def _per_call(function: Callable[[], Any], budget: float) -> float:
    """Seconds per call, from enough calls to fill about ``budget`` seconds."""
    started = time.perf_counter()
    function()
    once = max(time.perf_counter() - started, 1e-7)
    calls = max(1, int(budget / once))
    started = time.perf_counter()
    for _ in range(calls):
        function()
    return (time.perf_counter() - started) / calls


def key_hashing(sizes_kib: tuple[int, ...], repetitions: int, budget: float) -> dict[str, Any]:
    key_only, validated = powertools_layers()
    results = {}
    for kib in sizes_kib:
        cases = {"realistic (with floats)": order_document(kib, seed=kib)}
        cases["no floats"] = _without_floats(cases["realistic (with floats)"])
        for case, payload in cases.items():
            # Same key material on both sides (the whole payload), and the same results every time.
            assert canonical.idempotency_id(NAMESPACE, payload, schema.KIND_WHOLE_INPUT) == canonical.idempotency_id(
                NAMESPACE, json.loads(json.dumps(payload)), schema.KIND_WHOLE_INPUT
            )
            contenders = {
                "ours_key": lambda payload=payload: canonical.idempotency_id(NAMESPACE, payload, schema.KIND_WHOLE_INPUT),
                "powertools_key": lambda payload=payload: key_only._get_hashed_idempotency_key(payload),
                "ours_key_and_validation": lambda payload=payload: canonical.key_and_validation(
                    NAMESPACE, payload, schema.KIND_WHOLE_INPUT
                ),
                "powertools_key_and_validation": lambda payload=payload: (
                    validated._get_hashed_idempotency_key(payload),
                    validated._get_hashed_payload(payload),
                ),
            }
            samples: dict[str, list[float]] = {name: [] for name in contenders}
            for repetition in range(repetitions):
                names = list(contenders) if repetition % 2 == 0 else list(reversed(contenders))
                for name in names:
                    samples[name].append(_per_call(contenders[name], budget))
            medians = {name: statistics.median(values) for name, values in samples.items()}
            results[f"{kib}_kib/{case}"] = {
                "kib": kib,
                "payload": case,
                "bytes": len(json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()),
                "median_us": {name: round(value * 1e6, 1) for name, value in medians.items()},
                "ratio_key": round(medians["ours_key"] / medians["powertools_key"], 2),
                "ratio_key_and_validation": round(
                    medians["ours_key_and_validation"] / medians["powertools_key_and_validation"], 2
                ),
            }
    return results


def _without_floats(value: Any) -> Any:
    if isinstance(value, float):
        return int(value * 100)
    if isinstance(value, dict):
        return {key: _without_floats(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_without_floats(item) for item in value]
    return value


_IMPORT_PROBE = """
import sys, time
before = set(sys.modules)
started = time.perf_counter()
import {module}
elapsed = time.perf_counter() - started
own = {{path.split('.')[0] for path in __import__('os').listdir('.') if path.endswith('.py')}}
third_party = sorted({{name.split('.')[0] for name in set(sys.modules) - before}} - set(sys.stdlib_module_names) - own - {{'__mp_main__'}})
print(elapsed, ','.join(third_party))
"""


def import_times(repetitions: int) -> dict[str, Any]:
    """Each handler module imported as Lambda imports it (top level, the asset's directory first on
    ``sys.path``), in a fresh interpreter each time; the median of ``repetitions``."""
    source = str(lambda_source_dir())
    results = {}
    for module in HANDLER_MODULES:
        seconds, imported = [], ""
        for _ in range(repetitions):
            output = subprocess.run(
                [sys.executable, "-c", _IMPORT_PROBE.format(module=module)],
                cwd=source,
                capture_output=True,
                text=True,
                check=True,
                env={**os.environ, "PYTHONPATH": source, "PYTHONDONTWRITEBYTECODE": "1"},
            ).stdout.split()
            seconds.append(float(output[0]))
            imported = output[1] if len(output) > 1 else ""
        results[module] = {
            "median_ms": round(statistics.median(seconds) * 1000, 1),
            "repetitions": repetitions,
            "third_party_imports": [name for name in imported.split(",") if name],
        }
    return {"python": sys.version.split()[0], "modules": results}


def run(*, smoke: bool) -> dict[str, Any]:
    return {
        "key_hashing": key_hashing((1, 64, 200), repetitions=3 if smoke else 9, budget=0.01 if smoke else 0.05),
        "imports": import_times(repetitions=2 if smoke else 7),
    }
