"""What a synthesized template meets of AWS's quotas that no emulator enforces, for a test to assert on: the
library's synth-time check (``_synth/quota_checks``) reports its findings as a CDK validation report, which
prints and fails the synth but which a test cannot read; ``quota_findings`` runs the same checks on a template
and answers them as values (docs/reference/quotas.md names each rule)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._synth.quota_checks import check_template
from .._synth.quotas import severity


@dataclass(frozen=True)
class QuotaFinding:
    """One quota a template would meet: its rule (``idempotent-constructs:...``), ``error`` (AWS refuses or
    fails it) or ``warning``, what and why, the fix, and the resource (None: the stack as a whole)."""

    rule: str
    severity: str
    description: str
    fix: str
    logical_id: str | None


def quota_findings(template: Mapping[str, Any] | str | os.PathLike[str], *, stack_name: str | None = None) -> list[QuotaFinding]:
    """The quota findings of ``template``: a synthesized template file (``cdk.out/Orders.template.json``: sized
    as written, its definitions stored as assets read beside it), or a template itself
    (``Template.from_stack(stack).to_json()``: sized as the CDK writes it). ``stack_name``: the name it is
    deployed under, where a quota counts it (the names generated from it); by default any name."""
    if isinstance(template, Mapping):
        text, directory = json.dumps(template, indent=1, ensure_ascii=False), None
    else:
        path = Path(template)
        text, directory = path.read_text(), path.parent
    findings = check_template(json.loads(text), len(text.encode()), directory, stack_name)
    return [
        QuotaFinding(finding.rule, severity(finding), finding.description, finding.fix, finding.logical_id)
        for finding in findings
    ]
