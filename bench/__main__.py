"""``python -m bench [--smoke] [--output PATH]``: run the benchmarks, print the report, write the JSON.

The full run (a few minutes) writes ``bench/results.json``; ``--smoke`` runs every section with fewer
repetitions, smaller stacks and a 1 s baseline poll (seconds, for CI) and writes to a temporary file
unless ``--output`` is given. Exits 1 if a scenario did not behave as it must for its figures to mean
anything; missed bars are reported, not fatal.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from . import ROOT, bars, bounds, cost, growth, hashing, overhead, report, shapes, sources

DEFAULT_OUTPUT = Path(__file__).resolve().parent / "results.json"


def _git() -> str:
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return commit + (" with uncommitted changes" if dirty else "")


def run(smoke: bool, log=print) -> dict[str, Any]:
    started, clock = dt.datetime.now(dt.UTC), time.perf_counter()
    results: dict[str, Any] = {
        "meta": {
            "mode": "smoke" if smoke else "full",
            "started": started.strftime("%Y-%m-%d %H:%M UTC"),
            "git": _git(),
            "python": sys.version.split()[0],
            "aws_cdk_lib": metadata.version("aws-cdk-lib"),
            "moto": metadata.version("moto"),
            "aws_lambda_powertools": metadata.version("aws-lambda-powertools"),
            "cpus": os.cpu_count(),
            "section_seconds": {},
        }
    }

    def section(name: str, compute) -> None:
        log(f"{name} ...")
        begun = time.perf_counter()
        results[name] = compute()
        results["meta"]["section_seconds"][name] = round(time.perf_counter() - begun, 1)

    section("overhead", lambda: overhead.run(smoke=smoke, log=log))
    section("cost", lambda: cost.run(results["overhead"]))
    section("growth", lambda: growth.stack_growth((1, 3) if smoke else (1, 10, 50), log=log))
    section("scale", lambda: growth.per_strategy((1, 3) if smoke else (1, 21), log=log))
    section("synth_time", lambda: growth.synth_time(4 if smoke else 20, 1 if smoke else 5, log=log))
    section("hashing", lambda: hashing.run(smoke=smoke))
    section("bounds", lambda: bounds.run(smoke=smoke, log=log))
    section("sources", lambda: sources.run(smoke=smoke, log=log))
    section("shapes", lambda: shapes.run(smoke=smoke, log=log))
    results["bars"] = bars.evaluate(results)
    results["meta"]["seconds"] = round(time.perf_counter() - clock, 1)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="a fast run of every section (CI)")
    parser.add_argument(
        "--output",
        type=Path,
        help=f"where to write the JSON (default: {DEFAULT_OUTPUT} for a full run, a temporary file for --smoke)",
    )
    parser.add_argument(
        "--markdown",
        type=Path,
        metavar="RESULTS_JSON",
        help="print the benchmarks page's table (docs/project/benchmarks.md) of an existing results file and exit",
    )
    args = parser.parse_args(argv)
    if args.markdown:
        print(report.markdown(json.loads(args.markdown.read_text())))
        return 0
    output = args.output
    if output is None:
        output = Path(tempfile.mkdtemp(prefix="bench-")) / "results.json" if args.smoke else DEFAULT_OUTPUT
    results = run(args.smoke, log=lambda message: print(message, file=sys.stderr, flush=True))
    print(report.render(results))
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(results, indent=1, sort_keys=False) + "\n")
    print(f"\nJSON written to {output}")
    return 1 if results["overhead"]["checks"] or results["shapes"]["checks"] else 0


if __name__ == "__main__":
    sys.exit(main())
