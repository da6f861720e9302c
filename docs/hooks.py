"""MkDocs hooks of the documentation site (mkdocs.yml): the tables that come from the code, so that the
site cannot drift from it. A page asks for one with a comment on a line of its own:

- ``<!-- generated: options NAME -->``: the keyword options of the construct NAME, each with what it
  takes (the kind its constructor checks) and its documentation (its docstring's ``:param:``);
- ``<!-- generated: emulator-gaps -->``: each gap of moto the local emulator closes, from its module's
  docstring (``idempotent_constructs/testing/gaps``).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from typing import Any

MARKER = re.compile(r"^<!-- generated: ([\w-]+)(?: (\w+))? -->$", re.MULTILINE)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _options(name: str) -> str:
    import idempotent_constructs
    from idempotent_constructs.asl_fragment import FRAGMENT_OPTIONS
    from idempotent_constructs.guard.config import GUARD_OPTIONS
    from idempotent_constructs.state_machine import STATE_MACHINE_OPTIONS
    from idempotent_constructs.table import TABLE_OPTIONS

    kinds = {
        "IdempotentStateMachine": STATE_MACHINE_OPTIONS,
        "IdempotencyGuard": GUARD_OPTIONS,
        "IdempotencyTable": TABLE_OPTIONS,
        "AslFragment": FRAGMENT_OPTIONS,
    }[name]
    init = getattr(idempotent_constructs, name).__init__
    documented = dict(re.findall(r":param (\w+): (.*?)(?=\n\s*:param |\Z)", inspect.getdoc(init) or "", flags=re.DOTALL))
    keywords = [p.name for p in inspect.signature(init).parameters.values() if p.kind is inspect.Parameter.KEYWORD_ONLY]
    rows = ["| option | takes | what it does, and its default |", "|---|---|---|"]
    for option in keywords:
        kind = kinds.get(option)
        rows.append(f"| `{option}` | {_cell(kind.name) if kind else ''} | {_cell(documented.get(option, ''))} |")
    return "\n".join(rows)


def _emulator_gaps() -> str:
    from idempotent_constructs.testing import gaps

    sections = []
    for module in pkgutil.iter_modules(gaps.__path__):
        doc = inspect.getdoc(importlib.import_module(f"{gaps.__name__}.{module.name}")) or ""
        title, _, body = doc.partition("\n")
        sections.append(f"## `{module.name}`\n\n{title.removeprefix('Gap: ')}\n\n{body.strip()}\n")
    return "\n".join(sections)


def on_page_markdown(markdown: str, **_: Any) -> str:
    def generated(match: re.Match[str]) -> str:
        what, name = match.groups()
        if what == "options" and name:
            return _options(name)
        if what == "emulator-gaps":
            return _emulator_gaps()
        raise ValueError(f"unknown generated table: {match.group(0)}")

    return MARKER.sub(generated, markdown)
