"""The cross-check: the example app and two test stacks, as synthesized, deployed through the
CloudFormation of ministack, a second AWS emulator written apart from moto, and the behaviour
scenarios run against them (crosscheck/scenarios.py). What ministack does differently from AWS is in
crosscheck/divergences.py.

    ./dev crosscheck                  sets up, `cdk synth`, then runs `python -m crosscheck cdk.out`
    ./dev crosscheck --as-released    ministack without the launcher's corrections (divergences.py)
"""

from pathlib import Path


def launcher_path() -> Path:
    """The script that starts ministack in its own virtual environment (it imports nothing of ours)."""
    return Path(__file__).with_name("launcher.py")
