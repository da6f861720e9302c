"""MkDocs hooks of the documentation site (mkdocs.yml): the tables that come from the code, so that the
site cannot drift from it. A page asks for one with a comment on a line of its own; the options come from the options model
(``idempotent_constructs._synth.options``), as the constructs' docstrings do:

- ``<!-- generated: shared-options -->``: the options more than one of ``IdempotencyGuard``,
  ``IdempotentStateMachine`` and ``GuardedState`` take, each with what it takes (the kind checked), what it
  does and its default, and a column per construct: whether it takes it, with its default there where
  it differs;
- ``<!-- generated: options NAME -->``: the options of the construct NAME that no other takes, each with
  what it takes and its documentation with its default;
- ``<!-- generated: emulator-gaps -->``: each gap of moto the local emulator closes, from its module's
  docstring (``idempotent_constructs/testing/gaps``).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from idempotent_constructs._synth.options import Options

MARKER = re.compile(r"^<!-- generated: ([\w-]+)(?: (\w+))? -->$", re.MULTILINE)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _models() -> dict[str, Options]:
    """Each construct's options model, by the construct's name."""
    from idempotent_constructs.asl_fragment import FRAGMENT, FRAGMENT_MODEL
    from idempotent_constructs.batch import BATCH_MODEL
    from idempotent_constructs.guard.guard_options import BATCH, GUARD, GUARD_MODEL, GUARDED_STATE, WORKFLOW
    from idempotent_constructs.state_machine import WORKFLOW_MODEL
    from idempotent_constructs.table import TABLE, TABLE_MODEL

    return {
        WORKFLOW: WORKFLOW_MODEL,
        GUARD: GUARD_MODEL,
        GUARDED_STATE: GUARD_MODEL,
        BATCH: BATCH_MODEL,
        FRAGMENT: FRAGMENT_MODEL,
        TABLE: TABLE_MODEL,
    }


def _shared_options() -> str:
    """The shared options: what each does and its default, and per construct whether it takes it
    (✓), and its own default where it differs."""
    from idempotent_constructs.guard.guard_options import BATCH, GUARD, GUARD_MODEL, GUARDED_STATE, WORKFLOW

    takers = (GUARD, WORKFLOW, GUARDED_STATE, BATCH)
    rows = [
        "| option | takes | what it does, and its default | " + " | ".join(f"`{taker}`" for taker in takers) + " |",
        "|---" * (3 + len(takers)) + "|",
    ]
    for option in GUARD_MODEL:
        if len(option.takers) < 2:
            continue
        cells = []
        for taker in takers:
            default = option.default_for(taker)
            if taker not in option.takers:
                cells.append("—")
            elif default is None:
                cells.append("✓ required")
            else:
                cells.append("✓" if default == option.default else f"✓ Default: {default}")
        general = "" if option.default is None else f" Default: {option.default}"
        rows.append(
            f"| `{option.name}` | {_cell(option.kind.name)} | {_cell(option.doc + general)} | "
            + " | ".join(map(_cell, cells))
            + " |"
        )
    return "\n".join(rows)


def _options(name: str) -> str:
    own = [option for option in _models()[name].of(name) if option.takers == (name,)]
    rows = ["| option | takes | what it does, and its default |", "|---|---|---|"]
    rows += [f"| `{option.name}` | {_cell(option.kind.name)} | {_cell(option.text(name))} |" for option in own]
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
        if what == "shared-options":
            return _shared_options()
        if what == "options" and name:
            return _options(name)
        if what == "emulator-gaps":
            return _emulator_gaps()
        raise ValueError(f"unknown generated table: {match.group(0)}")

    return MARKER.sub(generated, markdown)
