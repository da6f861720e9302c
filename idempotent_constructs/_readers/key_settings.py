"""A guard's key settings, written in its definition and read back from it: what makes its record ids.

Each guard's ``Acquire`` state carries them as its ``Comment`` (``comment``), so that whatever holds a
definition (a synthesized or a deployed template, an ASL file a guard wrapped, ``DescribeStateMachine``)
tells what ids its guards compute, guards in a user's own state machine included. ``in_definition`` reads
them; ``changes`` compares two sets of them as docs/explanation/canonical-key.md (section 8) says what
changes an id. The values are written as JSONata string literals, the texts the guard's own states hold
them in, so that a definition shared between workflows (``_synth/definition``) substitutes them with the
rest of the workflow's own texts. Reads definitions only: no CDK, no AWS.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from .._jsonata.key_expressions import literal
from ..lambda_src import key_selection, schema

_LITERAL = r"'(?:[^'\\]|\\.)*'"
_COMMENT = re.compile(
    rf"idempotency key: format (?P<format>\d+), namespace (?P<namespace>{_LITERAL}), "
    rf"key (?P<key>\w+)(?: (?P<key_expression>{_LITERAL}))?, payload (?P<payload>\w+)(?: (?P<payload_expression>{_LITERAL}))?"
)


@dataclass(frozen=True)
class KeySettings:
    """What a guard's record ids and validations are computed from (with the canonical key's ``key_format``)."""

    namespace: str
    key_kind: str
    key_expression: Any
    payload_kind: str
    payload_expression: Any
    key_format: int = schema.KEY_FORMAT

    def describe(self) -> str:
        return f"key {_spec(self.key_kind, self.key_expression)}, payload {_spec(self.payload_kind, self.payload_expression)}"


def comment(settings: KeySettings) -> str:
    """The ``Comment`` of a guard's ``Acquire`` state."""
    return (
        f"idempotency key: format {settings.key_format}, namespace {literal(settings.namespace)}, "
        f"key {settings.key_kind}{_expression(settings.key_expression)}, "
        f"payload {settings.payload_kind}{_expression(settings.payload_expression)}"
    )


def _expression(expression: Any) -> str:
    return "" if expression is None else " " + literal(json.dumps(expression))


def parse(text: Any) -> KeySettings | None:
    """The settings a ``comment`` wrote, or None for any other text."""
    match = _COMMENT.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        return None
    return KeySettings(
        namespace=_read(match["namespace"]),
        key_kind=match["key"],
        key_expression=_json(match["key_expression"]),
        payload_kind=match["payload"],
        payload_expression=_json(match["payload_expression"]),
        key_format=int(match["format"]),
    )


def _read(literal_text: str) -> str:
    """The string a ``literal`` wrote: JSON escapes between single quotes, a double quote left as it is."""
    return str(json.loads('"' + literal_text[1:-1].replace('"', '\\"') + '"'))


def _json(literal_text: str | None) -> Any:
    return None if literal_text is None else json.loads(_read(literal_text))


def in_definition(definition: dict[str, Any]) -> dict[str, KeySettings]:
    """Each guard's settings in a definition, at any depth, by its ``Acquire`` state's name."""
    found: dict[str, KeySettings] = {}

    def walk(states: dict[str, Any]) -> None:
        for name, state in states.items():
            settings = parse(state.get("Comment"))
            if settings is not None:
                found[name] = settings
            for branch in state.get("Branches", []):
                walk(branch.get("States", {}))
            for processor in ("ItemProcessor", "Iterator"):
                if processor in state:
                    walk(state[processor].get("States", {}))

    walk(definition.get("States", {}))
    return found


# --- what changed between two deploys ------------------------------------------------------------------
@dataclass(frozen=True)
class Change:
    """A difference between the settings of one namespace before and after: ``reruns`` where duplicates
    of earlier work run again, ``fails`` where they fail (``Idempotency.PayloadMismatch``)."""

    namespace: str
    where: str  # the guard's place after (or before, where it is gone)
    message: str
    reruns: bool = False
    fails: bool = False


def changes(before: dict[str, KeySettings], after: dict[str, KeySettings]) -> list[Change]:
    """What a deploy that takes ``before`` to ``after`` does to the records of earlier work; each maps a
    guard's place (its state machine and ``Acquire`` state, which a deploy keeps) to its settings. A
    namespace's records are found by the guard that has that namespace after, wherever it is."""
    found: list[Change] = []
    for where, old, new in _pairs(before, after):
        if new is None:
            found.append(
                Change(old.namespace, where, "no guard has this namespace any more: its records are not found", reruns=True)
            )
        elif new.namespace != old.namespace:
            found.append(
                Change(
                    old.namespace,
                    where,
                    f"the namespace changes to {new.namespace!r}: duplicates of earlier work run again; pass "
                    f"namespace={old.namespace!r} to keep its records",
                    reruns=True,
                )
            )
        else:
            found.extend(_compared(old, new, where))
    return found


def migrations(before: dict[str, KeySettings], after: dict[str, KeySettings]) -> list[tuple[str, KeySettings, KeySettings]]:
    """``(place, old, new)`` for each guard whose record ids may change between ``before`` and ``after`` (its
    namespace, its key's selection or the canonical key's format): the records ``key-migrate`` copies."""
    return [
        (where, old, new)
        for where, old, new in _pairs(before, after)
        if new is not None
        and (
            new.namespace != old.namespace
            or new.key_format != old.key_format
            or not _same_selection(old.key_kind, old.key_expression, new.key_kind, new.key_expression)
        )
    ]


def _pairs(before: dict[str, KeySettings], after: dict[str, KeySettings]) -> list[tuple[str, KeySettings, KeySettings | None]]:
    """Each guard of ``before`` with its settings after, found by its namespace or else by its place."""
    by_namespace = {settings.namespace: where for where, settings in after.items()}
    pairs: list[tuple[str, KeySettings, KeySettings | None]] = []
    for where, old in before.items():
        if old.namespace in by_namespace:
            pairs.append((by_namespace[old.namespace], old, after[by_namespace[old.namespace]]))
        elif (moved := _same_place(where, after)) is not None:
            pairs.append((moved, old, after[moved]))
        else:
            pairs.append((where, old, None))
    return pairs


def _same_place(where: str, after: dict[str, KeySettings]) -> str | None:
    """The place in ``after`` of the guard at ``where`` (``{stack}/{path} {state}``): the same, or the one
    place at the same path in a stack of another name."""
    if where in after:
        return where
    below = where.partition("/")[2]
    moved = [place for place in after if place.partition("/")[2] == below]
    return moved[0] if len(moved) == 1 else None


def _compared(old: KeySettings, new: KeySettings, where: str) -> list[Change]:
    found = []
    if old.key_format != new.key_format:
        found.append(
            Change(
                old.namespace,
                where,
                f"the canonical key's format changes from {old.key_format} to {new.key_format}: every record id changes",
                reruns=True,
            )
        )
    elif not _same_selection(old.key_kind, old.key_expression, new.key_kind, new.key_expression):
        found.append(
            Change(
                old.namespace,
                where,
                f"the key changes from {_spec(old.key_kind, old.key_expression)} to {_spec(new.key_kind, new.key_expression)}: "
                "a record's id stays only where the new key selects the same value as the old one (check with "
                "idempotent-constructs key), so duplicates of earlier work may run again",
                reruns=True,
            )
        )
    if not _same_selection(old.payload_kind, old.payload_expression, new.payload_kind, new.payload_expression):
        found.append(
            Change(
                old.namespace,
                where,
                f"the payload changes from {_spec(old.payload_kind, old.payload_expression)} to "
                f"{_spec(new.payload_kind, new.payload_expression)}: a duplicate of earlier work whose new selection differs "
                f"from the old one fails with {schema.PAYLOAD_MISMATCH}",
                fails=new.payload_kind != schema.KIND_NONE,
            )
        )
    return found


def _same_selection(old_kind: str, old: Any, new_kind: str, new: Any) -> bool:
    """Whether two selections select the same value of every input, as far as their texts tell: the same
    strategy and text, or the same paths however spelled (``$.order.id`` and ``$['order']['id']``)."""
    if old_kind != new_kind:
        return False
    if old_kind == schema.KIND_PATHS:
        try:
            return [key_selection.parse_path(path) for path in old] == [key_selection.parse_path(path) for path in new]
        except ValueError:
            pass
    return bool(old == new)


def _spec(kind: str, expression: Any) -> str:
    return kind if expression is None else f"{kind} {json.dumps(expression, ensure_ascii=False)}"
