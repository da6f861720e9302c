"""pyproject.toml: the wheel ships the library, its Lambda code and its type information."""

from __future__ import annotations

import subprocess
import sys
import zipfile

import idempotent_constructs
from tests.conftest import ROOT


def test_the_wheel_contains_the_lambda_code_and_py_typed(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(tmp_path), str(ROOT)],
        check=True, capture_output=True, timeout=300,
    )
    (wheel,) = tmp_path.glob("idempotent_constructs-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for required in (
        "idempotent_constructs/__init__.py",
        "idempotent_constructs/py.typed",
        "idempotent_constructs/testing/__init__.py",
        "idempotent_constructs/testing/assembly.py",
        "idempotent_constructs/jsonata_engine.py",
        "idempotent_constructs/jsonata_key.py",
        "idempotent_constructs/lambda_src/compute_key.py",
        "idempotent_constructs/lambda_src/canonical.py",
        "idempotent_constructs/lambda_src/schema.py",
    ):
        assert required in names
    assert not any(name.startswith(("tests/", "example/", "lambda_src/", "crosscheck/", "bench/")) for name in names)


def test_the_public_names_are_exported():
    assert set(idempotent_constructs.__all__) >= {
        "IdempotencyTable",
        "IdempotentStateMachine",
        "IdempotencyGuard",
        "IdempotencyKey",
        "InFlightPolicy",
        "FailurePolicy",
    }
    for name in idempotent_constructs.__all__:
        assert getattr(idempotent_constructs, name) is not None
