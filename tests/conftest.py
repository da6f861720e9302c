"""Shared fixtures. The CDK's jsii runtime needs a supported Node.js: use the one npm installed."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NODE_BIN = ROOT / "node_modules" / ".bin"
if (NODE_BIN / "node").exists():
    # Before aws_cdk is imported: jsii starts the first `node` on PATH.
    os.environ["PATH"] = f"{NODE_BIN}{os.pathsep}{os.environ.get('PATH', '')}"


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
