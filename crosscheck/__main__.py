"""python -m crosscheck [cdk.out] [--as-released] [--ministack-python PATH]

Deploys the example app (from the cloud assembly ``cdk synth`` wrote) and the behaviour,
everything-on, documents, lost-replies and races test stacks (synthesized here) into a ministack server, runs every
scenario, prints one line per scenario and, last, ``N passed, M failed`` and the title of each scenario
that failed. Exits 1 if any scenario failed. A scenario a known divergence stops is reported as
diverged, with the divergence, and counts as neither. A stack that does not deploy fails only the
scenarios that use it.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from botocore.exceptions import ClientError

from idempotent_constructs.testing import Deployment

from .divergences import ALL, MINISTACK_VERSION
from .scenarios import RELEASE_TIMINGS, SCENARIOS, Checks, Scenario, ScenarioFailed, Stacks, Undeployed
from .server import Ministack, ServerFailed

EXAMPLE_STACK = "IdempotentOrders"
DEFAULT_MINISTACK_PYTHON = Path(__file__).resolve().parent.parent / ".crosscheck-venv" / "bin" / "python"


def synthesize_test_stacks(outdir: Path) -> Path:
    """The behaviour, resumable, documents, everything-on, lost-replies and races stacks of tests/stacks.py, in a
    cloud assembly."""
    from aws_cdk import App

    from tests.stacks import BehaviourStack, DocumentsStack, LostRepliesStack, RacesStack, ResumableStack, everything_on

    app = App(outdir=str(outdir))
    BehaviourStack(app, "Behaviour")
    ResumableStack(app, "Resumable")
    DocumentsStack(app, "Documents")
    # ministack refuses an alarm on metric math ("AWS::CloudWatch::Alarm Properties.Metrics (metric math) is not
    # supported"), which CloudWatch takes: the dashboard's alarms stay out of its copy of the stack.
    everything_on(app, alarms=False)
    LostRepliesStack(app, "LostReplies")
    RacesStack(app, "Races")
    return Path(app.synth().directory)


@dataclass
class Tally:
    """How the scenarios went: the passed and diverged ones counted, the failed ones by title."""

    passed: int = 0
    diverged: int = 0
    failed: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """``N passed, M failed``, then a line naming each scenario that failed."""
        return f"{self.passed} passed, {len(self.failed)} failed" + "".join(f"\n  failed: {title}" for title in self.failed)


def run_scenarios(stacks: Stacks, scenarios: list[tuple[str, Scenario]], tally: Tally) -> None:
    """Run each scenario, print its title and outcome, and count it in ``tally``."""
    for title, run in scenarios:
        checks, began = Checks(), time.monotonic()
        try:
            run(stacks, checks)
        except ScenarioFailed as failure:
            outcome = f"FAILED   {failure}"
            tally.failed.append(title)
        except Exception as broke:  # a scenario that breaks is a failed one; say where
            where = traceback.extract_tb(broke.__traceback__)[-1]
            outcome = f"FAILED   {type(broke).__name__}: {broke} ({Path(where.filename).name}:{where.lineno})"
            tally.failed.append(title)
        else:
            if checks.diverged:
                outcome, tally.diverged = "DIVERGED " + "; ".join(str(d) for d in checks.diverged), tally.diverged + 1
            else:
                outcome, tally.passed = "passed", tally.passed + 1
        print(f"{title}\n  {outcome} ({time.monotonic() - began:.1f} s)", flush=True)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m crosscheck", description=__doc__.split("\n\n")[1])
    parser.add_argument("assembly", nargs="?", default="cdk.out", type=Path, help="the example app's cdk.out")
    parser.add_argument("--as-released", action="store_true", help="without the launcher's corrections")
    parser.add_argument("--ministack-python", type=Path, default=DEFAULT_MINISTACK_PYTHON)
    options = parser.parse_args(argv)
    if not (options.assembly / f"{EXAMPLE_STACK}.template.json").exists():
        print(f"{options.assembly}/{EXAMPLE_STACK}.template.json not found: run `cdk synth` first (./dev crosscheck does)")
        return 2
    if not options.ministack_python.exists():
        print(f"{options.ministack_python} not found: ./dev crosscheck makes ministack's virtual environment")
        return 2

    corrected = [d.id for d in ALL if d.corrected_by_launcher and not options.as_released]
    print(
        f"Cross-check on ministack {MINISTACK_VERSION}"
        + (f", corrected for {', '.join(corrected)}" if corrected else ", as released")
    )
    started = time.monotonic()
    tally = Tally()
    with tempfile.TemporaryDirectory(prefix="crosscheck-assembly-") as scratch:
        test_assembly = synthesize_test_stacks(Path(scratch))
        print(f"synthesized the test stacks in {time.monotonic() - started:.0f} s")
        try:
            with Ministack(options.ministack_python, as_released=options.as_released) as server:
                print(f"ministack on {server.endpoint}")

                def deployed(assembly: Path, name: str) -> Deployment:
                    try:
                        return server.deploy(assembly, name)
                    except (ServerFailed, ClientError) as problem:
                        print(f"{name} did not deploy: {problem}")
                        return cast(Deployment, Undeployed(name, str(problem)))

                stacks = Stacks(
                    orders=deployed(options.assembly, EXAMPLE_STACK),
                    behaviour=deployed(test_assembly, "Behaviour"),
                    resumable=deployed(test_assembly, "Resumable"),
                    everything=deployed(test_assembly, "EverythingOn"),
                    documents=deployed(test_assembly, "Documents"),
                    guards=deployed(test_assembly, "LostReplies"),
                    races=deployed(test_assembly, "Races"),
                )
                print(
                    f"deployed {EXAMPLE_STACK}, Behaviour, Resumable, EverythingOn, Documents, LostReplies and Races "
                    f"({time.monotonic() - started:.0f} s)\n"
                )
                run_scenarios(stacks, SCENARIOS, tally)
        except ServerFailed as problem:
            print(f"ministack failed: {problem}")
            tally.failed.append(f"ministack itself ({problem})")
    if RELEASE_TIMINGS:
        print(
            "\nrelease path, StopExecution to the key's release: "
            + ", ".join(f"{seconds:.1f} s after {reads} stale read(s)" for reads, seconds in sorted(RELEASE_TIMINGS.items()))
            + " (ministack waits 1 s, then 2 s, between asynchronous attempts; Lambda on AWS 1 min, then 2 min)"
        )
    print(f"\nfinished in {time.monotonic() - started:.0f} s; {tally.diverged} diverged (crosscheck/divergences.py)")
    print(tally.summary())
    return 1 if tally.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
