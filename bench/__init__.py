"""Benchmarks of idempotent_constructs: per-execution overhead, cost, stack growth, synth time and key
hashing, side by side with a baseline built like the aws-samples idempotent workflow.

    python -m bench            full run (a few minutes), writes bench/results.json
    python -m bench --smoke    fast run of every section (CI), writes to a temporary file
    python -m bench.guard_floor    an experiment: synth with each guard cut to four states, or to its body (issue 56)
"""

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NODE_BIN = ROOT / "node_modules" / ".bin"
if (NODE_BIN / "node").exists():
    # Before aws_cdk is imported (by any module of the bench): jsii starts the first `node` on PATH (a supported
    # Node.js 22).
    os.environ["PATH"] = f"{NODE_BIN}{os.pathsep}{os.environ.get('PATH', '')}"
