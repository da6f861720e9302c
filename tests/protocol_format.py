"""The generated protocol as a reviewer reads it (tests/test_protocol.py): a JSONata pretty-printer, and
each state of a definition written as its JSON with every JSONata string in its formatted form.

Formatting changes whitespace between tokens only: every token is the source's own text, byte for byte
(a string with its escapes, a regular expression, a backquoted name). The tokens are jsonata-python's
(the tokenizer of the JSONata ``idempotent_constructs._jsonata.engine`` evaluates), told, as its parser
tells it, whether a ``/`` stands where an operand ended (a division) or where one starts (a regular
expression). Layout: a block ``( a; b )`` of more than one expression is one expression a line; an
entry wider than the line breaks before each ``?`` and ``:`` of its conditionals (else before its
``or``, else its ``and``); an object, array, call or block wider than the line is one entry a line.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from jsonata.tokenizer import Tokenizer

WIDTH = 100
STEP = 2
_OPERANDS = {"name", "variable", "number", "string", "value", "regex"}
_SPACED = {"=", "!=", "<", "<=", ">", ">=", "+", "-", "*", "/", "%", "&", "and", "or", "in", ":=", "~>", "??", "?:", "?", ":"}
_CLOSING = {"(": ")", "[": "]", "{": "}"}
_WORD = re.compile(r"[\w$`'\"]")


@dataclass(frozen=True)
class Token:
    text: str  # the source's text
    # "operand", "infix" (a binary operator), "prefix" (an operator where an operand starts), "key" (an
    # object's colon), "open", "close", ",", ";" or "comment"
    kind: str


@dataclass
class Group:
    """Brackets and what they hold: items, each a run of tokens and groups, between separators."""

    open: str
    close: str = ""
    items: list[list[Token | Group]] = field(default_factory=lambda: [[]])
    separators: list[str] = field(default_factory=list)


def tokens(expression: str) -> list[Token]:
    """The tokens of ``expression``, classified for layout; raises where jsonata's tokenizer does."""
    lexer = Tokenizer(expression)
    found: list[Token] = []
    after_operand = False  # what jsonata's parser passes its tokenizer: a "/" here divides, else starts a regex
    conditionals = [0]  # per open bracket: the conditionals whose ":" is still to come
    position = 0
    while True:
        while position < len(expression) and expression[position] in " \t\n\r":
            position += 1
        if position == len(expression):
            return found
        if expression.startswith("/*", position):
            end = expression.index("*/", position + 2) + 2
            found.append(Token(expression[position:end], "comment"))
            position = end
            continue
        lexer.position = position
        token = lexer.next(after_operand)
        text, position = expression[position : lexer.position], lexer.position
        value = token.value if token.type == "operator" else None
        if token.type in _OPERANDS or (value in ("*", "**", "%") and not after_operand):  # wildcards, parent
            kind = "operand"
        elif value in _CLOSING:
            kind = "open"
            conditionals.append(0)
        elif value in (")", "]", "}"):
            kind = "close"
            conditionals.pop()
        elif value in (",", ";"):
            kind = value
            conditionals[-1] = 0
        elif value == ":" and not conditionals[-1]:
            kind = "key"
        elif after_operand:
            kind = "infix"
            conditionals[-1] += 1 if value == "?" else -1 if value == ":" else 0
        else:
            kind = "prefix"
        found.append(Token(text, kind))
        after_operand = kind in ("operand", "close")


def tree(found: list[Token]) -> Group:
    """The tokens nested by their brackets, under a group without brackets (the whole expression)."""
    stack = [Group("")]
    for token in found:
        if token.kind == "open":
            group = Group(token.text)
            stack[-1].items[-1].append(group)
            stack.append(group)
        elif token.kind == "close":
            stack.pop().close = token.text
        elif token.kind in (",", ";"):
            stack[-1].separators.append(token.text)
            stack[-1].items.append([])
        else:
            stack[-1].items[-1].append(token)
    return stack[0]


def format_jsonata(expression: str, width: int = WIDTH) -> str:
    """``expression`` laid out in lines of at most ``width`` where its tokens allow."""
    return _Layout(width).item(tree(tokens(expression)).items[0], 0, 0)


def _edge(element: Token | Group, first: bool) -> Token:
    if isinstance(element, Token):
        return element
    return Token(element.open, "open") if first else Token(element.close, "close")


def _gap(before: Token | Group, after: Token | Group) -> str:
    left, right = _edge(before, first=False), _edge(after, first=True)
    if left.kind == "key" or "comment" in (left.kind, right.kind):
        return " "
    if left.kind == "infix" or right.kind == "infix":
        return " " if (left if left.kind == "infix" else right).text in _SPACED else ""
    if left.text == ")" and right.text == "{":  # a function's body
        return " "
    return " " if _WORD.match(left.text[-1]) and _WORD.match(right.text[0]) else ""


def _must_break(element: Token | Group) -> bool:
    """A block of more than one expression is always one expression a line."""
    if isinstance(element, Token):
        return False
    return ";" in element.separators or any(_must_break(e) for item in element.items for e in item)


class _Layout:
    def __init__(self, width: int) -> None:
        self.width = width

    def flat(self, element: Token | Group) -> str:
        if isinstance(element, Token):
            return element.text
        entries = zip(element.items, [*element.separators, ""], strict=True)
        return element.open + "".join(f"{self.run(item)}{separator} " for item, separator in entries).rstrip() + element.close

    def run(self, elements: list[Token | Group]) -> str:
        text = ""
        for index, element in enumerate(elements):
            text += (_gap(elements[index - 1], element) if index else "") + self.flat(element)
        return text

    def fits(self, elements: list[Token | Group], column: int) -> bool:
        return column + len(self.run(elements)) <= self.width and not any(map(_must_break, elements))

    def item(self, elements: list[Token | Group], indent: int, column: int) -> str:
        """An entry of a group, starting at ``column`` of a line indented ``indent``: on one line if it fits,
        else broken before the "?" and ":" of its conditionals, or else before its "or", or its "and"."""
        if self.fits(elements, column):
            return self.run(elements)
        for operators in (("?", ":"), ("or",), ("and",)):
            segments: list[list[Token | Group]] = [[]]
            for index, element in enumerate(elements):
                if index and isinstance(element, Token) and element.kind == "infix" and element.text in operators:
                    segments.append([])
                segments[-1].append(element)
            if len(segments) > 1:  # the first segment where it starts, each further one a step in on a line of its own
                lines = [self.item(segments[0], indent, column)]
                lines += [" " * (indent + STEP) + self.item(s, indent + 2 * STEP, indent + STEP) for s in segments[1:]]
                return "\n".join(lines)
        return self.broken(elements, indent, column)

    def broken(self, elements: list[Token | Group], indent: int, column: int) -> str:
        """Elements on one line but for the groups among them that must break or do not fit."""
        text = ""
        for index, element in enumerate(elements):
            text += _gap(elements[index - 1], element) if index else ""
            at = len(text) - text.rfind("\n") - 1 if "\n" in text else column + len(text)
            text += self.group(element, indent, at) if isinstance(element, Group) else element.text
        return text

    def group(self, group: Group, indent: int, column: int) -> str:
        if self.fits([group], column) or not any(group.items):
            return self.flat(group)
        lines = [group.open]
        inner = indent + STEP
        for item, separator in zip(group.items, [*group.separators, ""], strict=True):
            if item or separator:
                lines.append(" " * inner + self.item(item, inner, inner) + separator)
        return "\n".join([*lines, " " * indent + group.close])


# --- states -----------------------------------------------------------------------------------------------
def is_jsonata(value: Any) -> bool:
    return isinstance(value, str) and value.startswith("{%") and value.endswith("%}")


def jsonata_expressions(value: Any) -> list[str]:
    """Every JSONata expression in a definition (or a state), without its ``{% %}``."""
    if is_jsonata(value):
        return [value[2:-2].strip()]
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    return [expression for child in children for expression in jsonata_expressions(child)]


def _json(value: Any, indent: int, column: int) -> str:
    """JSON starting at ``column`` of a line indented ``indent``: small containers on one line, the others
    one entry a line, each JSONata string as its formatted expression between ``{%`` and ``%}``."""
    if is_jsonata(value):
        expression = format_jsonata(value[2:-2].strip(), WIDTH - indent - STEP)
        if "\n" not in expression and column + len(expression) + 6 <= WIDTH:
            return "{% " + expression + " %}"
        indented = "\n".join(" " * (indent + STEP) + line if line else "" for line in expression.split("\n"))
        return "{%\n" + indented + "\n" + " " * indent + "%}"
    compact = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    if not isinstance(value, (dict, list)) or not value or (column + len(compact) <= WIDTH and not jsonata_expressions(value)):
        return compact
    inner = " " * (indent + STEP)
    if isinstance(value, list):
        lines = [inner + _json(item, indent + STEP, len(inner)) for item in value]
    else:
        keys = {key: f"{inner}{json.dumps(key, ensure_ascii=False)}: " for key in value}
        lines = [keys[key] + _json(item, indent + STEP, len(keys[key])) for key, item in value.items()]
    opening, closing = "{}" if isinstance(value, dict) else "[]"
    return opening + "\n" + ",\n".join(lines) + "\n" + " " * indent + closing


def _shallow(value: dict[str, Any]) -> dict[str, Any]:
    """A state or definition with the states it holds named, not written out: each has its own file."""
    shown = dict(value)
    if "States" in shown:
        shown["States"] = list(shown["States"])
    if "Branches" in shown:
        shown["Branches"] = [_shallow(branch) for branch in shown["Branches"]]
    for processor in ("ItemProcessor", "Iterator"):
        if processor in shown:
            shown[processor] = _shallow(shown[processor])
    return shown


def file_name(state_name: str) -> str:
    return quote(state_name, safe=" .-_") + ".jsonata"


def protocol_files(definition: dict[str, Any]) -> dict[str, str]:
    """One text a state (its name made a file name), at any depth, and ``_definition.jsonata``: the
    definition with its states named."""
    files = {"_definition.jsonata": _json(_shallow(definition), 0, 0) + "\n"}

    def add(states: dict[str, Any]) -> None:
        for name, state in states.items():
            assert file_name(name) not in files, f"two states named {name!r}"
            files[file_name(name)] = _json(_shallow(state), 0, 0) + "\n"
            for inner in [*state.get("Branches", []), state.get("ItemProcessor") or state.get("Iterator") or {}]:
                add(inner.get("States", {}))

    add(definition["States"])
    return files
