"""Section 6: the native key within AWS's JSONata bounds (contract B18).

AWS fails a JSONata evaluation deeper than 100 levels, holding about 7 MB, or running longer than 1 s.
For each payload shape and key strategy this section runs the generated states whose work grows with
the input (``Acquire``, which computes the key, ``ComputeKey``, which measures what it may send the key
function, and ``Complete``, which writes the result, as large as the input here) in
jsonata-js 2.0.6, the JSONata AWS runs, with jsonata's Timebox hooks on: the peak evaluation depth as
the Timebox counts it and as plain nesting, and the best time of a few runs on this machine. Then it
runs each shape through the deployed workflow on the emulator (whose JSONata enforces AWS's bounds): a
first run and a replay, with their wrapper states and Lambda calls. An input beyond the native bounds
takes the key function; the bars say where that may happen.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import uuid
from pathlib import Path
from typing import Any

from aws_cdk import App, Stack
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from idempotent_constructs import IdempotencyKey, IdempotencyTable, IdempotentStateMachine
from idempotent_constructs._jsonata.key_expressions import BEYOND_NATIVE
from idempotent_constructs.testing import LocalEmulator, state_machine_definitions

from .bars import BOUNDS_DEPTH, BOUNDS_MILLISECONDS

ROOT = Path(__file__).resolve().parent.parent
KEYS = {
    "whole_input": IdempotencyKey.whole_input(),
    "from_paths": IdempotencyKey.from_paths("$.id"),
    "from_jsonata": IdempotencyKey.from_jsonata("$states.input.id"),
}
MACHINES = {name: f"Bounds{name.title().replace('_', '')}" for name in KEYS}
BODY_STATE = "Work"
# The body's output: small, so that the runs measure the key's path (a result as large as the input
# would add the result function, which large results earn; Complete's evaluation is measured with one).
DONE = {"done": True}

# jsonata-js with Step Functions' $hash, $uuid, $parse and $partition, and the Timebox's entry and exit hooks: each job's
# peak depth counted as jsonata's Timebox counts it (parallel items skipped) and as plain nesting.
_RUNNER = """
const jsonata = require('jsonata');
const crypto = require('crypto');
const algorithms = {'MD5': 'md5', 'SHA-1': 'sha1', 'SHA-256': 'sha256', 'SHA-384': 'sha384', 'SHA-512': 'sha512'};
let text = '';
process.stdin.on('data', chunk => text += chunk).on('end', async () => {
  const {jobs, repeat} = JSON.parse(text);
  const results = [];
  for (const {expression, bindings} of jobs) {
    let best = Infinity, peak = 0, strict = 0, error = null;
    for (let attempt = 0; attempt < repeat; attempt++) {
      const compiled = jsonata(expression);
      compiled.registerFunction('hash', (data, algorithm) =>
        crypto.createHash(algorithms[algorithm]).update(data, 'utf8').digest('hex'), '<ss:s>');
      compiled.registerFunction('uuid', () => crypto.randomUUID(), '<:s>');
      compiled.registerFunction('parse', (json) => JSON.parse(json), '<s:j>');
      compiled.registerFunction('partition', (items, size) =>
        Array.from({length: Math.ceil(items.length / size)}, (_, i) => items.slice(i * size, (i + 1) * size)), '<an:a>');
      let depth = 0, nesting = 0;
      compiled.assign(Symbol.for('jsonata.__evaluate_entry'), (node, input, environment) => {
        nesting++; strict = Math.max(strict, nesting);
        if (!environment.isParallelCall) { depth++; peak = Math.max(peak, depth); }
      });
      compiled.assign(Symbol.for('jsonata.__evaluate_exit'), (node, input, environment) => {
        nesting--;
        if (!environment.isParallelCall) depth--;
      });
      const started = process.hrtime.bigint();
      try { await compiled.evaluate({}, bindings); } catch (e) { error = e.message || String(e); }
      best = Math.min(best, Number(process.hrtime.bigint() - started) / 1e6);
    }
    results.push({peak, strict, milliseconds: Math.round(best * 10) / 10, error});
  }
  process.stdout.write(JSON.stringify(results));
});
"""


def nested(levels: int) -> dict[str, Any]:
    """A flat object wrapped ``levels`` times as ``{"a": <inner>, "i": n}`` (the outermost carries the key,
    ``id``): ``levels + 1`` objects nested in one another."""
    value: dict[str, Any] = {"id": "o-1", "amount": 12.5, "paid": True, "note": "a small order"}
    for level in range(levels):
        value = {"a": value, "i": level, "id": "o-1"}
    return value


def small_fields(kib: int) -> dict[str, Any]:
    """An object of small fields whose compact JSON is just under ``kib`` KiB."""
    document: dict[str, Any] = {"id": "o-1"}
    while len(json.dumps(document, separators=(",", ":"))) < kib * 1024 - 40:
        document[f"f{len(document)}"] = len(document)
    return document


def with_id(payload: dict[str, Any], key: str) -> dict[str, Any]:
    """The payload keyed ``key``: each shape its own record (a shape is another payload)."""
    return {**payload, "id": key}


def shapes(smoke: bool) -> dict[str, Any]:
    if smoke:
        return {"flat": nested(0), "nested 32": nested(32), "16 KiB of small fields": small_fields(16)}
    # 255 KiB: an execution's input may be 256 KiB at most, the field names of the run's input included.
    return {
        "flat": nested(0),
        "nested 6": nested(6),
        "nested 8": nested(8),
        "nested 32": nested(32),
        "nested 64": nested(64),
        "16 KiB of small fields": small_fields(16),
        "64 KiB of small fields": small_fields(64),
        "128 KiB of small fields": small_fields(128),
        "255 KiB of small fields": small_fields(255),
        "one 250 KiB string": {"id": "o-1", "text": "x" * (250 * 1024)},
        # Version 3's number and string forms at their costliest within the bounds, and a value left to
        # the key function (a number a JVM engine may hold as a long).
        "500 fractions": {"id": "o-1", "n": [index / 7 for index in range(1, 501)]},
        "800 fractions": {"id": "o-1", "n": [index / 7 for index in range(1, 801)]},
        "escapes, controls and emoji": {"id": "o-1", "text": '"\\\n😀\u0001é' * 10_000},
        "a nanosecond timestamp": {"id": "o-1", "at": 1764061200123456789, "amount": 12.5},
    }


class BoundsStack(Stack):
    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        table = IdempotencyTable(self, "Table")
        for name, key in KEYS.items():
            IdempotentStateMachine(
                self,
                MACHINES[name],
                table=table,
                key=key,
                definition=sfn.Pass(self, f"{MACHINES[name]}Work", state_name=BODY_STATE, result=sfn.Result.from_object(DONE)),
            )


def in_jsonata_js(jobs: list[dict[str, Any]], repeat: int) -> list[dict[str, Any]]:
    """Each job (``{"expression", "bindings"}``) evaluated in jsonata-js ``repeat`` times: its peak depth as the Timebox
    counts it and as plain nesting (``peak``, ``strict``), its best time (``milliseconds``) and its ``error``."""
    done = subprocess.run(
        ["node", "-e", _RUNNER],
        input=json.dumps({"jobs": jobs, "repeat": repeat}),
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
        timeout=600,
    )
    return list(json.loads(done.stdout))


def _expression(field: str) -> str:
    return field.removeprefix("{%").removesuffix("%}").strip()


STATES = ("acquire", "compute_key", "complete")


def _states(definition: dict[str, Any]) -> tuple[dict[str, str], str]:
    """({state: its request's JSONata}, the guard's variable) of a workflow."""
    states = definition["States"]
    acquire = states["Idempotency.Acquire"]
    (variable,) = acquire["Assign"]
    requests = {
        "acquire": acquire["Arguments"],
        "compute_key": states["Idempotency.ComputeKey"]["Arguments"],
        "complete": states["Idempotency.Complete"]["Arguments"],
    }
    return {state: _expression(text) for state, text in requests.items()}, variable


def run(smoke: bool, log=print) -> dict[str, Any]:
    payloads = shapes(smoke)
    with tempfile.TemporaryDirectory(prefix="bench-bounds-") as outdir:
        app = App(outdir=outdir)
        BoundsStack(app, "Bounds")
        assembly = Path(app.synth().directory)
        template = json.loads((assembly / "Bounds.template.json").read_text())
        machines = state_machine_definitions(template)
        definitions = {name: next(d for logical, d in machines.items() if logical.startswith(MACHINES[name])) for name in KEYS}
        log(f"  jsonata-js: {len(payloads)} shapes x {len(KEYS)} keys x {len(STATES)} states ...")
        jobs, where = [], []
        for name, definition in definitions.items():
            requests, variable = _states(definition)
            for shape, payload in payloads.items():
                states = {"input": payload, "context": {"Execution": {"Id": "arn:aws:states:::execution:m:e"}}}
                facts = {"id": "ns#0", "validation": "0", "owner": "arn:aws:states:::execution:m:e#0"}
                for state in STATES:
                    jobs.append({"expression": requests[state], "bindings": {"states": states, variable: facts}})
                where.append((name, shape))
        measured = in_jsonata_js(jobs, repeat=1 if smoke else 3)
        rows: dict[tuple[str, str], dict[str, Any]] = {}
        for index, (name, shape) in enumerate(where):
            row = dict(zip(STATES, measured[len(STATES) * index : len(STATES) * (index + 1)], strict=True))
            native = row["acquire"]["error"] is None
            # What a state may raise by design: Acquire beyond the native bounds, Complete for a result
            # the native write cannot keep (the result function keeps it). Anything else is a failure.
            expected = {"acquire": BEYOND_NATIVE, "complete": "the result is kept by the result function"}
            for state, outcome in row.items():
                if outcome["error"] is not None and expected.get(state, "\0") not in outcome["error"]:
                    raise AssertionError(f"{name}, {shape}: {state} failed in jsonata-js: {outcome['error']}")
            rows[name, shape] = {
                "key": name,
                "shape": shape,
                "bytes": len(json.dumps(payloads[shape], separators=(",", ":")).encode()),
                "native": native,
                **row,
            }
        log("  emulator: a first run and a replay of every shape ...")
        with LocalEmulator() as emulator:
            deployment = emulator.deploy(assembly, "Bounds")
            for (name, shape), row in rows.items():
                payload = with_id(payloads[shape], uuid.uuid4().hex)
                first = deployment.run(MACHINES[name], payload, name=f"first-{uuid.uuid4().hex[:12]}")
                replay = deployment.run(MACHINES[name], payload, name=f"replay-{uuid.uuid4().hex[:12]}")
                for path, execution in (("first_run", first), ("replay", replay)):
                    entered = [state for state in execution.entered_states() if state != BODY_STATE]
                    row[path] = {
                        "status": execution.status,
                        "error": execution.error,
                        "states_entered": len(entered),
                        "states": entered,
                        "lambda_invocations": execution.lambda_invocations(),
                        "same_output": execution.output == DONE if execution.status == "SUCCEEDED" else None,
                    }
    return {"rows": list(rows.values()), "depth_bar": BOUNDS_DEPTH, "milliseconds_bar": BOUNDS_MILLISECONDS}
