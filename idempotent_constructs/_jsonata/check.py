"""What Step Functions refuses in a JSONata expression when a state machine is created (or updated, or
validated): the one check of the library's keys at synth time, of every generated definition in the
tests, and of the local emulator's CreateStateMachine (``testing.gaps.jsonata_bounds``).

AWS refuses, with ``InvalidDefinition``, measured by others with ValidateStateMachineDefinition and
CreateStateMachine (floci-io/floci issue #2670, pull requests #2699 and #2783):

- an expression that does not parse: ``INVALID_JSONATA_EXPRESSION: <jsonata's message, without its code>``;
- a reference to a field of the top-level context, which Step Functions never binds (``order.id``
  where ``$states.input.order.id`` is meant), and to ``$`` itself:
  ``UNSUPPORTED_JSONATA_EXPRESSION: Reference to 'order' at the top level is not supported.``; and
  ``$$``: ``Reference to '$$' is not supported.``

Only the first step of a path reads the top-level context: later steps, predicates, sort terms and
groupings read what the step before produced, and a transform's parts its own input. A lambda's body,
a function's arguments, an object constructor's keys and a binding's right-hand side keep the context
of the expression around them, and are checked.
"""

from __future__ import annotations

import functools
import re
from typing import Any

INVALID = "INVALID_JSONATA_EXPRESSION"
UNSUPPORTED = "UNSUPPORTED_JSONATA_EXPRESSION"
_CODE = re.compile(r"^[A-Z]\d{4}: ")
# What a field of a node holds that is read against the top-level context (see the docstring).
_CHILDREN = ("procedure", "arguments", "body", "condition", "then", "_else", "expressions", "lhs", "rhs", "expression")
# Nodes whose parts read some other input, or that read nothing.
_OPAQUE = {"transform", "descendant", "wildcard", "parent", "regex", "string", "number", "value", "sort", "filter"}


def problems(expression: str) -> list[tuple[str, str]]:
    """``(code, message)`` for each thing AWS refuses in ``expression`` (the text between ``{%`` and
    ``%}``), in writing order; empty where it accepts it."""
    return list(_problems(expression))


@functools.lru_cache(maxsize=4096)
def _problems(expression: str) -> tuple[tuple[str, str], ...]:
    """``problems``, parsed once a process for each text: the workflows of an app share most of theirs."""
    import jsonata  # imported lazily: synth of most apps does not need it

    try:
        tree = jsonata.Jsonata(expression).ast
    except Exception as error:  # jsonata-python reports syntax errors as JException
        return ((INVALID, _CODE.sub("", str(error))),)
    found: list[tuple[str, str]] = []
    _walk(tree, found)
    return tuple(dict.fromkeys(found))  # one per name, as AWS reports them


def _walk(node: Any, found: list[tuple[str, str]]) -> None:
    if node is None:
        return
    if isinstance(node, list):
        for item in node:
            _walk(item, found)
        return
    kind = node.type
    if kind == "path":
        _walk(node.steps[0], found)
    elif kind == "name":
        found.append((UNSUPPORTED, f"Reference to '{node.value}' at the top level is not supported."))
    elif kind == "variable":
        if node.value == "":
            found.append((UNSUPPORTED, "Reference to '$' at the top level is not supported."))
        elif node.value == "$":
            found.append((UNSUPPORTED, "Reference to '$$' is not supported."))
    elif kind == "bind":
        _walk(node.rhs, found)
    elif kind == "unary" and node.value == "{":
        for name, value in node.lhs_object or ():
            _walk([name, value], found)
    elif kind not in _OPAQUE:
        for field in _CHILDREN:
            _walk(getattr(node, field, None), found)


# Fields that Step Functions does not read as JSONata.
_NOT_JSONATA = {"Comment", "ErrorEquals", "CSVHeaders"}


def definition_problems(definition: dict[str, Any]) -> list[tuple[str, str, str]]:
    """``(location, code, message)`` for every refused expression of ``definition`` (Amazon States
    Language) in a state whose query language is JSONata, as AWS locates it (``/States/S/Output/v``)."""
    found: list[tuple[str, str, str]] = []
    _states(definition, "", definition.get("QueryLanguage", "JSONPath"), found)
    return found


def _states(machine: dict[str, Any], at: str, language: str, found: list[tuple[str, str, str]]) -> None:
    for name, state in machine.get("States", {}).items():
        where = f"{at}/States/{name}"
        state_language = state.get("QueryLanguage", language)
        for field, value in state.items():
            if field in ("Branches", "ItemProcessor", "Iterator"):
                for index, branch in enumerate(value if field == "Branches" else [value]):
                    _states(
                        branch, f"{where}/{field}[{index}]" if field == "Branches" else f"{where}/{field}", state_language, found
                    )
            elif state_language == "JSONata":
                _fields(value, f"{where}/{field}", field, found)


def _fields(value: Any, where: str, field: str, found: list[tuple[str, str, str]]) -> None:
    if field in _NOT_JSONATA:
        return
    if isinstance(value, dict):
        for key, item in value.items():
            _fields(item, f"{where}/{key}", key, found)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _fields(item, f"{where}[{index}]", field, found)
    elif isinstance(value, str) and value.startswith("{%") and value.endswith("%}"):
        found.extend((where, code, message) for code, message in problems(value[2:-2].strip()))
