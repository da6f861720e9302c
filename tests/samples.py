"""The documentation's code samples (docs/samples), imported from their files, for the tests that
synthesize or run them (tests/test_docs.py, tests/recipes.py, tests/emulator)."""

from __future__ import annotations

import importlib.util
from types import ModuleType

from tests.conftest import ROOT

SAMPLES = ROOT / "docs" / "samples"


def docs_sample(name: str) -> ModuleType:
    """The sample module ``docs/samples/{name}.py``."""
    spec = importlib.util.spec_from_file_location(f"docs_samples.{name}", SAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
