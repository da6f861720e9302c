"""The benchmark's smoke run (what CI runs so that ``python -m bench`` cannot rot): every section runs
and writes numbers, the baseline is measured next to ours, and the scenarios behaved as they must."""

from __future__ import annotations

import json
import numbers
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SECTIONS = ("overhead", "cost", "growth", "scale", "synth_time", "hashing", "bounds", "sources", "shapes")


def _numbers(value) -> list[float]:
    if isinstance(value, bool):
        return []
    if isinstance(value, numbers.Number):
        return [value]
    if isinstance(value, dict):
        return [number for item in value.values() for number in _numbers(item)]
    if isinstance(value, list):
        return [number for item in value for number in _numbers(item)]
    return []


def test_the_smoke_benchmark_measures_every_section_next_to_the_baseline(tmp_path, node_bin):
    output = tmp_path / "results.json"
    completed = subprocess.run(
        [sys.executable, "-m", "bench", "--smoke", "--output", str(output)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PATH": f"{node_bin}{os.pathsep}{os.environ.get('PATH', '')}"},
    )
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    results = json.loads(output.read_text())
    for section in SECTIONS:
        assert _numbers(results[section]), f"section {section} has no figures"

    variants = results["overhead"]["variants"]
    assert results["overhead"]["checks"] == []
    for name in ("ours/from_paths", "ours/whole_input", "baseline"):
        replay = variants[name]["replay"]
        assert replay["states_entered"] > 0 and replay["transitions"] >= replay["states_entered"]
        assert replay["dynamodb_calls_total"] > 0 and replay["write_units"] > 0 and replay["read_units"] > 0
        assert not replay["body_ran"] and replay["same_output"]
        cycle = variants[name]["waiting"]["cycle"]
        assert cycle["states_entered"] > 0 and cycle["dynamodb_calls"] == {"GetItem": 1}
    assert variants["baseline"]["first_run"]["dynamodb_calls"]["TransactWriteItems"] == 1
    assert variants["baseline"]["blocked"]["still_waiting"]
    assert variants["ours/from_paths"]["takeover"]["body_ran"]
    assert variants["ours/whole_input+large"]["first_run_100k"]["s3_calls_in_lambda"] == {"PutObject": 1}

    cost = results["cost"]["per_million"]
    for name in ("ours/from_paths", "baseline"):
        for path in ("first_run", "replay", "poll_cycle"):
            assert cost[name][path]["small"]["total"] > 0 and cost[name][path]["100_kib"]["total"] > 0
    growth = results["growth"]
    assert growth["per_workflow"]["wrapped"]["resources"] > 0 and growth["per_workflow"]["bare"]["resources"] > 0
    assert results["synth_time"]["ratio"] > 0
    calls = results["synth_time"]["jsii_calls_per_workflow"]
    assert calls["wrapped"] > calls["bare"] > 0
    assert results["hashing"]["key_hashing"]["200_kib/realistic (with floats)"]["ratio_key"] > 0
    assert set(results["hashing"]["imports"]["modules"]) == {"compute_key", "release", "results"}
    assert results["bars"] and all(isinstance(bar["met"], bool) for bar in results["bars"])
    # The report shows every section and every bar's verdict.
    bounds = {(row["key"], row["shape"]): row for row in results["bounds"]["rows"]}
    assert bounds["from_paths", "flat"]["native"] and bounds["from_paths", "flat"]["first_run"]["lambda_invocations"] == 0
    beyond = bounds["from_paths", "nested 32"]  # beyond the native bounds: the key function, once a run
    assert not beyond["native"] and beyond["first_run"]["status"] == beyond["replay"]["status"] == "SUCCEEDED"
    assert beyond["first_run"]["lambda_invocations"] == beyond["replay"]["lambda_invocations"] == 1
    assert all(row["acquire"]["peak"] > 0 for row in bounds.values())
    # Each source's recipe replays its redelivery; the defaults run an SQS redelivery again (a new key).
    sources = {row["source"]: row for row in results["sources"]["rows"]}
    assert all(not row["recipe"]["redelivery"]["body_ran"] for row in sources.values())
    assert sources["SqsPipe"]["defaults"]["redelivery"]["body_ran"]
    # Each shape side by side, with the shapes before issue 43 and the baseline: a whole workflow of one Task
    # enters 2 of the wrapper's states on a first run, as few as a guard run once per execution; a guard of your own
    # one fewer than before, and costs less per million on Standard.
    shapes = results["shapes"]["shapes"]
    assert results["shapes"]["checks"] == []
    assert shapes["IdempotentStateMachine, one Task"]["standard"]["first_run"]["states"] == [
        "Idempotency.Acquire",
        "Idempotency.Complete",
    ]
    for kind in ("standard", "express"):
        guard, before = (
            shapes["IdempotencyGuard, one Task"][kind],
            shapes["IdempotencyGuard drawing its token first (Begin)"][kind],
        )
        assert guard["first_run"]["states_entered"] == before["first_run"]["states_entered"] - 1
        assert shapes["IdempotencyGuard once per execution, one Task"][kind]["first_run"]["states_entered"] == 2
    standard = {name: kinds["standard"]["first_run"]["dollars_per_million"] for name, kinds in shapes.items()}
    assert standard["IdempotentStateMachine, one Task"] < standard["IdempotentStateMachine, two states (Body Parallel)"]
    assert standard["IdempotencyGuard, one Task"] < standard["IdempotencyGuard drawing its token first (Begin)"]
    assert standard["IdempotentStateMachine, one Task"] < standard["aws-samples baseline, one Task"]
    for heading in (
        "1. Per-execution overhead",
        "2. Cost per million",
        "3. Stack growth",
        "4. Synth time",
        "5. Key hashing",
        "6. The native key within AWS's JSONata bounds",
        "7. Duplicates as AWS's event sources deliver them",
        "8. The wrapper's states by shape",
    ):
        assert heading in completed.stdout
    assert (
        f"Bars (docs/project/benchmarks.md): {sum(bar['met'] for bar in results['bars'])} of {len(results['bars'])} met"
        in completed.stdout
    )


def _guard_floor(node_bin, expression):
    completed = subprocess.run(
        [sys.executable, "-c", f"import json, bench.guard_floor as f; print(json.dumps({expression}))"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PATH": f"{node_bin}{os.pathsep}{os.environ.get('PATH', '')}"},
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    return json.loads(completed.stdout.splitlines()[-1])


def test_the_guard_floor_experiment_cuts_each_guard_and_the_real_one_in_python_makes_fewer_calls_than_four_cdk_states(
    node_bin,
):
    # bench.guard_floor (issue 56) swaps the guard's states for four of the CDK's, or for the body's Parallel alone: if a
    # swap stopped taking effect, the guards would make the same calls, and the experiment's figures would measure
    # nothing. The real guard, rendered in Python (guard.json_states), makes fewer calls than the four CDK states.
    found = _guard_floor(node_bin, "f.measure(2, 1)")
    calls = found["jsii_calls_per_workflow"]
    assert calls["bare"] < calls["body"] < calls["cut"], calls
    assert calls["bare"] < calls["real"] < calls["cut"], calls
    assert set(found["ratio"]) == {"real", "cut", "body"} and all(ratio > 0 for ratio in found["ratio"].values())


def test_a_guard_cut_to_its_body_grants_what_the_real_guard_grants(node_bin):
    # It stands for a guard whose other states are rendered in Python: the CDK still gets every permission.
    found = _guard_floor(node_bin, "[f.permissions(kind) for kind in ('real', 'body', 'cut')]")
    real, body, cut = found
    assert body["definition_bytes"] < cut["definition_bytes"] < real["definition_bytes"]  # each cut took effect
    assert len(real["policies"]) == 2 and all(real["policies"].values())
    assert body["policies"] == real["policies"]
    assert cut["policies"] != real["policies"]  # the four-state cut registers its one action only: the comparison can tell
