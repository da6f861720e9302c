"""Every state machine definition the tests read from a synthesized template
(``idempotent_constructs._readers.assembly.state_machine_definitions``), checked as Step Functions checks a
definition when it is created: the JSONata it refuses at once (``jsonata_check``, failing the test that
synthesized it), and ``asl-validator`` once, over all of them, when the session ends (one Node.js run:
a run per definition would cost minutes). Documents, fragments and guarded states are among them.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from idempotent_constructs._jsonata import check as jsonata_check
from idempotent_constructs._readers import assembly

_SEEN: dict[str, dict[str, Any]] = {}  # each distinct definition, by the digest of its text
_WHERE: dict[str, str] = {}  # the logical id and the test that first read it, by the same digest


def install() -> None:
    """Check what ``state_machine_definitions`` returns, wherever it is imported from later."""
    read: Callable[[dict[str, Any]], dict[str, dict[str, Any]]] = assembly.state_machine_definitions

    def checked(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
        definitions = read(template)
        for logical_id, definition in definitions.items():
            text = json.dumps(definition, sort_keys=True)
            digest = hashlib.sha256(text.encode()).hexdigest()
            if digest in _SEEN:
                continue
            refused = jsonata_check.definition_problems(definition)
            assert not refused, f"Step Functions would refuse the JSONata of {logical_id}: {refused}"
            _SEEN[digest] = json.loads(text)
            _WHERE[digest] = f"{logical_id} in {os.environ.get('PYTEST_CURRENT_TEST', 'a test').split(' ')[0]}"
        return definitions

    assembly.state_machine_definitions = checked


def asl_validator_problems(validator: Path) -> tuple[int, list[str]]:
    """``(definitions checked, asl-validator's report of each it finds invalid)``."""
    if not _SEEN:
        return 0, []
    with tempfile.TemporaryDirectory(prefix="every-definition-") as folder:
        paths = []
        for digest, definition in _SEEN.items():
            path = Path(folder) / f"{digest[:16]}.json"
            path.write_text(json.dumps(definition))
            paths.append(path)
        arguments = [part for path in paths for part in ("--json-path", str(path))]
        done = subprocess.run([str(validator), *arguments], capture_output=True, text=True, timeout=600)
    report = done.stdout + done.stderr
    for digest in _SEEN:
        report = report.replace(f'"{Path(folder) / digest[:16]}.json"', _WHERE.get(digest, digest))
    invalid = [line for line in report.splitlines() if line.strip() and not line.startswith("✓")]
    if done.returncode != 0 and not invalid:
        invalid = [f"asl-validator exited with {done.returncode}"]
    return len(paths), invalid
