"""Shared fixtures. The CDK's jsii runtime needs a supported Node.js: use the one npm installed."""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
import venv
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
NODE_BIN = ROOT / "node_modules" / ".bin"
if (NODE_BIN / "node").exists():
    # Before aws_cdk is imported: jsii starts the first `node` on PATH.
    os.environ["PATH"] = f"{NODE_BIN}{os.pathsep}{os.environ.get('PATH', '')}"


# Before any test module imports it: every definition a test reads is checked (tests/every_definition.py).
from . import every_definition  # noqa: E402

every_definition.install()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if not (NODE_BIN / "asl-validator").exists() or not every_definition.owns_folder():
        return  # a pytest-xdist worker, or a pytest run by a test: the process that made the folder validates it
    checked, invalid = every_definition.asl_validator_problems(NODE_BIN)
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write("\n")
    if invalid:
        if reporter is not None:
            reporter.write_line(f"asl-validator refused definitions the tests synthesized ({checked} checked):", red=True)
            for line in invalid:
                reporter.write_line(f"  {line}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    elif checked and reporter is not None:
        reporter.write_line(f"asl-validator: the {checked} distinct definitions the tests synthesized are valid")


# The files that take a minute or more of one worker (measured with --durations on a 2-core machine):
# collected first, so that pytest-xdist (a file to a worker at a time, in collection order) starts them
# first, and no worker is left running one of them alone at the end of a run.
LONGEST_FIRST = (
    "tests/test_bench.py",
    "tests/test_packaging.py",
    "tests/test_scale.py",
    "tests/_synth/test_quotas.py",
    "tests/test_readme.py",
    "tests/emulator/cli/test_probe.py",
    "tests/explore/test_search_workflows.py",
    "tests/explore/test_search_guards.py",
    "tests/explore/test_search_policies.py",
    "tests/_jsonata/test_java_regex.py",
    "tests/test_example_app.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {path: index for index, path in enumerate(LONGEST_FIRST)}
    # A stable sort: each file's tests keep their order.
    items.sort(key=lambda item: rank.get(item.nodeid.partition("::")[0], len(rank)))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--aws",
        action="store_true",
        default=False,
        help="run the real-AWS suite (tests/aws): deploys the example stack to the account of your AWS "
        "credentials, runs the demo's scenarios, destroys it",
    )


@pytest.fixture(scope="session")
def node_bin() -> Path:
    if not (NODE_BIN / "node").exists() or shutil.which("node") is None:
        pytest.fail("Node.js tooling is missing: run `npm ci` in the repository root (./dev test does)")
    return NODE_BIN


@pytest.fixture(scope="session")
def test_stack(tmp_path_factory: pytest.TempPathFactory, node_bin: Path) -> Callable[[str], Any]:
    """``test_stack(name)``: the test stack of that name (tests/stacks.py), built once a session in an
    app of its own, so that the template tests and the emulator's deployment share one synth."""
    from aws_cdk import App

    from .stacks import BehaviourStack, CompositionStack, ControlStack, DocumentsStack, LostRepliesStack, RacesStack

    kinds = {
        "Behaviour": BehaviourStack,
        "Composition": CompositionStack,
        "Control": ControlStack,
        "Documents": DocumentsStack,
        "LostReplies": LostRepliesStack,
        "Races": RacesStack,
    }

    @functools.cache
    def build(name: str) -> Any:
        return kinds[name](App(outdir=str(tmp_path_factory.mktemp(f"{name.lower()}-assembly"))), name)

    return build


@pytest.fixture(scope="session")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``python -m build``: a wheel and an sdist, as a release is built (once a session: the packaging
    and README tests share them)."""
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return out


@dataclass(frozen=True)
class UserApp:
    """A user's app directory, ``app``, beside ``clone`` (a clone of this repository holding the built
    wheel in ``dist/``), with a virtual environment of its own in which the README's install command ran."""

    app: Path
    clone: Path
    python: Path
    environment: dict[str, str]  # the venv's bin and Node.js first on PATH; no PYTHONPATH into this repository

    def run(self, command: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        """A shell command, as the user types it in the app's directory with the venv activated."""
        return subprocess.run(
            ["bash", "-c", command], cwd=self.app, env=self.environment, capture_output=True, text=True, timeout=timeout
        )


def readme_blocks(language: str) -> list[str]:
    """The README's code blocks in ``language``, in order."""
    return re.findall(rf"^```{language}\n(.*?)^```$", (ROOT / "README.md").read_text(), flags=re.MULTILINE | re.DOTALL)


def readme_install_command() -> str:
    """The Quick start's command that installs the built wheel into the app's environment."""
    (command,) = [line for block in readme_blocks("bash") for line in block.splitlines() if line.startswith("pip install ")]
    return command


@pytest.fixture(scope="session")
def user_app(dist: Path, tmp_path_factory: pytest.TempPathFactory, node_bin: Path) -> UserApp:
    """The README's Quick start, followed in a fresh virtual environment from the built wheel, on the
    lowest versions pyproject.toml allows (a CDK app pins its own aws-cdk-lib: here the oldest we
    support, not the one we develop with); the other packages pinned as CI pins them, for speed and
    repeatability (PIP_CONSTRAINT, which pip reads as if given -c)."""
    root = tmp_path_factory.mktemp("user")
    (root / "idempotent_constructs" / "dist").mkdir(parents=True)
    for built in dist.glob("idempotent_constructs-*.whl"):
        shutil.copy(built, root / "idempotent_constructs" / "dist")
    app = root / "app"
    app.mkdir()
    venv.create(app / ".venv", with_pip=True)
    constraints = root / "constraints.txt"
    constraints.write_text(minimum_over_development())
    bin_dir = app / ".venv" / "bin"
    environment = {
        **{name: value for name, value in os.environ.items() if not name.startswith(("PYTHON", "PYTEST"))},
        "PATH": os.pathsep.join([str(bin_dir), str(node_bin), os.environ["PATH"]]),
        "VIRTUAL_ENV": str(app / ".venv"),
        "PIP_CONSTRAINT": str(constraints),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        # --no-compile, for speed: a module is compiled when first imported (about a minute less per install).
        # pip reads a `no-` option's variable as the value of the option it negates: "0" means no compile.
        "PIP_NO_COMPILE": "0",
    }
    user = UserApp(app, root / "idempotent_constructs", bin_dir / "python", environment)
    installed = user.run(readme_install_command())
    assert installed.returncode == 0, installed.stderr[-3000:]
    return user


def minimum_over_development() -> str:
    """constraints/development.txt with the pins of constraints/minimum.txt in place of its own, less
    the CDK's own packages (aws-cdk.*), whose versions go with the aws-cdk-lib chosen."""

    def pins(name: str) -> dict[str, str]:
        lines = (ROOT / "constraints" / name).read_text().splitlines()
        found = (line.split("==") for line in lines if "==" in line and not line.startswith("#"))
        return {re.sub(r"[-_.]+", "-", package).lower(): version for package, version in found}

    development = {package: version for package, version in pins("development.txt").items() if not package.startswith("aws-cdk")}
    merged = {**development, **pins("minimum.txt")}
    return "".join(f"{package}=={version}\n" for package, version in sorted(merged.items()))
