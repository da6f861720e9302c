"""``./dev explore``: the protocol explored within the deeper bounds (``plans.DEEP``), every configuration by
default, on every core; ``--ci`` within CI's. Prints each run's figures and the exemptions it saw; exits 1,
with the trace, when a promise breaks. ``--mutation NAME`` explores a planted mistake (``mutations``), which
must break a promise: it exits 1 with the trace that shows it.

    ./dev explore                              # every configuration, the deep suites
    ./dev explore --configuration guard --suite clock
    ./dev explore --mutation takeover-without-lease
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor

from . import plans
from .configurations import configurations
from .mutations import MUTATIONS, named
from .transitions import Bounds


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="./dev explore", description=__doc__.split("\n\n")[0])
    parser.add_argument("--configuration", action="append", choices=sorted(configurations()), help="only these (repeatable)")
    parser.add_argument("--suite", action="append", help="only these suites (repeatable): clock, faults, recovery, three")
    parser.add_argument("--ci", action="store_true", help="CI's bounds instead of the deeper ones")
    parser.add_argument("--mutation", choices=[mutation.name for mutation in MUTATIONS], help="explore a planted mistake")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="processes (default: every core)")
    parser.add_argument("--limit", type=int, default=None, help="stop a run past this many states")
    parser.add_argument("--traces", action="store_true", help="print the first trace of each exemption seen")
    options = parser.parse_args(argv)

    tasks: list[tuple[str, str, Bounds, str | None]] = []
    if options.mutation is not None:
        mutation = named(options.mutation)
        tasks.append((mutation.configuration, "mutation", mutation.bounds, mutation.name))
    else:
        for name in options.configuration or configurations():
            suites = plans.ci(name) if options.ci else plans.DEEP
            for suite, bounds in suites.items():
                if options.suite is None or suite in options.suite:
                    tasks.append((name, suite, bounds, None))
    started, broken, states = time.monotonic(), 0, 0
    # Spawned, not forked: each process talks to a jsii Node.js process of its own.
    workers = max(1, min(options.jobs, len(tasks)))
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [
            pool.submit(plans.run, name, suite, bounds, mutation, options.limit) for name, suite, bounds, mutation in tasks
        ]
        for future in futures:
            suite, report = future.result()
            states += report.states
            print(f"{suite:9} {report.summary()}", flush=True)
            if report.exemptions:
                print(f"          exemptions seen: {', '.join(report.exemptions)}")
                if options.traces:
                    for exemption, trace in report.exemptions.items():
                        print(f"          {exemption}:")
                        print("\n".join(f"            {line}" for line in trace))
            if report.counterexample is not None:
                broken += 1
                print(report.counterexample, flush=True)
    print(
        f"{len(tasks)} runs, {states:,} states in {time.monotonic() - started:.0f} s: "
        + (f"{broken} broke a promise" if broken else "every promise holds")
    )
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
