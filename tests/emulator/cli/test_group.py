"""Emulator end-to-end: the `idempotent-constructs` package as a whole (idempotent_constructs/cli/group.py, __init__.py)."""

from __future__ import annotations

import subprocess
import sys


def test_the_tool_imports_neither_the_cdk_nor_boto3_until_a_command_needs_them():
    probe = (
        "import sys, idempotent_constructs.cli, idempotent_constructs.runtime.operations; "
        "print(sorted(m for m in ('aws_cdk', 'jsii', 'boto3', 'rich') if m in sys.modules))"
    )
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"


def test_every_public_name_still_imports_from_the_package():
    probe = (
        "import sys, idempotent_constructs as package; before = 'aws_cdk' in sys.modules; "
        "from idempotent_constructs import *; from idempotent_constructs import IdempotencyTable; "
        "print(before, all(getattr(package, name) is globals()[name] for name in package.__all__), "
        "IdempotencyTable.__module__)"
    )
    shown = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert shown.split() == ["False", "True", "idempotent_constructs.table"]
