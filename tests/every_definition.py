"""Every state machine definition the tests read from a synthesized template
(``idempotent_constructs._readers.assembly.state_machine_definitions``), checked as Step Functions checks a
definition when it is created: the JSONata it refuses at once (``jsonata_check``), and every regular
expression of its JSONata against the rule java.util.regex needs (``java_regex``: AWS's engine runs on the
JVM), each failing the test that synthesized it; and ``asl-validator`` once, over all of them, when the session ends (one Node.js run
that compiles its schemas once: ``tests/asl_validator.js``). Documents, fragments and guarded states are among them.

Each process of a run (pytest-xdist's workers too) writes the definitions it reads to one folder
(``FOLDER``, named in the environment by the first process, which the workers inherit); the process
that ends the session validates them all.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from idempotent_constructs._jsonata import check as jsonata_check
from idempotent_constructs._jsonata import java_regex
from idempotent_constructs._readers import assembly

_SEEN: set[str] = set()  # the digests of the definitions this process has written
# Regular expressions a test writes itself, as a user would, to show what the library says of them: the
# only ones that may break java_regex's rule.
USERS_PATTERNS = {"(?:-|_)+"}
FOLDER_VARIABLE = "IDEMPOTENT_CONSTRUCTS_TEST_DEFINITIONS"


def folder() -> Path:
    """The folder of this run's definitions: ``{digest}.json`` each, and ``{digest}.where``, the logical id
    and the test that first read it. The environment names it with the process that made it, ``pid:path``."""
    if FOLDER_VARIABLE not in os.environ:
        os.environ[FOLDER_VARIABLE] = f"{os.getpid()}:{tempfile.mkdtemp(prefix='every-definition-')}"
    return Path(os.environ[FOLDER_VARIABLE].partition(":")[2])


def owns_folder() -> bool:
    """Whether this process made the folder: it validates and removes it (not a worker of it, nor a pytest
    that a test runs in a subprocess)."""
    return os.environ.get(FOLDER_VARIABLE, "").partition(":")[0] == str(os.getpid())


def install() -> None:
    """Check what ``state_machine_definitions`` returns, wherever it is imported from later; name the
    run's folder now, before pytest-xdist starts its workers."""
    folder()
    read: Callable[..., dict[str, dict[str, Any]]] = assembly.state_machine_definitions

    def checked(template: dict[str, Any], assets: Path | None = None) -> dict[str, dict[str, Any]]:
        definitions = read(template, assets)
        for logical_id, definition in definitions.items():
            text = json.dumps(definition, sort_keys=True)
            digest = hashlib.sha256(text.encode()).hexdigest()
            if digest in _SEEN:
                continue
            refused = jsonata_check.definition_problems(definition)
            assert not refused, f"Step Functions would refuse the JSONata of {logical_id}: {refused}"
            overflowing = [found for found in java_regex.definition_problems(definition) if found[0] not in USERS_PATTERNS]
            assert not overflowing, f"a regular expression of {logical_id} breaks the rule java.util.regex needs: {overflowing}"
            _SEEN.add(digest)
            where = f"{logical_id} in {os.environ.get('PYTEST_CURRENT_TEST', 'a test').split(' ')[0]}"
            (folder() / f"{digest[:16]}.where").write_text(where)
            (folder() / f"{digest[:16]}.json").write_text(text)
        return definitions

    assembly.state_machine_definitions = checked


def asl_validator_problems(node_bin: Path) -> tuple[int, list[str]]:
    """``(definitions checked, asl-validator's report of each it finds invalid)``, over every definition
    any process of the run wrote; the folder is removed after."""
    paths = sorted(folder().glob("*.json"))
    try:
        invalid = asl_validator_reports(node_bin, paths)
        for path in paths:
            invalid = [line.replace(str(path), path.with_suffix(".where").read_text()) for line in invalid]
    finally:
        shutil.rmtree(folder(), ignore_errors=True)
    return len(paths), invalid


def asl_validator_reports(node_bin: Path, paths: list[Path]) -> list[str]:
    """asl-validator's report of each definition of ``paths`` it finds invalid, in one Node.js run that
    compiles its schemas once (``tests/asl_validator.js``; its own command compiles them again for every
    definition, about 0.1 s each)."""
    if not paths:
        return []
    run = subprocess.run(
        [str(node_bin / "node"), str(Path(__file__).with_name("asl_validator.js")), *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    found = [line for line in (run.stdout + run.stderr).splitlines() if line.strip() and not line.startswith("✓")]
    return found or ([f"asl-validator exited with {run.returncode}"] if run.returncode != 0 else [])
