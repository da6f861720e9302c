"""What java.util.regex runs without overflowing its stack: AWS evaluates JSONata on the JVM (a seeded
``$random`` is ``java.util.Random``'s, large numbers are written with Java's digits: floci-io/floci issue
#2662, pull requests #2676 and #2683), and every Java port of JSONata hands a regular expression literal
to ``java.util.regex.Pattern``.

Java's matcher recurses once per repetition of a group whose body holds an alternation or is more than
one character wide (``(?:[^"\\\\]|\\\\.)*``, ``(?:ab)*``), and a 1 MB thread stack overflows after some
hundreds to a few thousand of them (docs/project/how-we-know.md has the figures). A greedy run of one
character class (``[^"]*``, ``[\\s\\S]{1,2500}``) is matched in a loop, however long.

The rule (docs/explanation/canonical-key.md, section 7), kept by every regular expression the library
generates and checked on every definition the tests synthesize: a group, or anything but a single
character or character class, may be repeated at most ``SMALL`` times. ``problems`` tells where a
pattern breaks it; the emulator fails an evaluation where a pattern that breaks it matches more than
``REPETITIONS`` characters at once (``_jsonata.engine``).
"""

from __future__ import annotations

import functools
import re
from typing import Any

SMALL = 64  # the most repetitions of a group the rule allows: recursion this deep is harmless
# The emulator's estimate of where a 1 MB JVM stack overflows: (?:a|b)* passed 600 repetitions and failed
# 2,000 on jsonata-java 0.9.9; the library's earlier patterns failed from about 1,150.
REPETITIONS = 1_000
_QUANTIFIER = re.compile(r"\*|\+|\?|\{(\d+)(,(\d*))?\}")
_UNBOUNDED = -1


class _Atom:
    def __init__(self, text: str, single: bool) -> None:
        self.text, self.single = text, single


def problems(pattern: str) -> list[str]:
    """Where ``pattern`` (JavaScript's syntax, as a JSONata literal holds it) breaks the rule: each
    repeated part that is not a single character or class, repeated more than ``SMALL`` times."""
    found: list[str] = []
    position = 0
    while position < len(pattern):
        atom, position = _atom(pattern, position)
        quantifier = _QUANTIFIER.match(pattern, position)
        if not quantifier:
            continue
        position = quantifier.end()
        if position < len(pattern) and pattern[position] in "?+":  # lazy or possessive
            position += 1
        most = _most(quantifier)
        if not atom.single and (most == _UNBOUNDED or most > SMALL):
            times = "any number of times" if most == _UNBOUNDED else f"up to {most} times"
            found.append(f"{atom.text} is repeated {times}: java.util.regex recurses once per repetition")
    return found


def _most(quantifier: re.Match[str]) -> int:
    text = quantifier.group()
    if text in ("*", "+"):
        return _UNBOUNDED
    if text == "?":
        return 1
    if quantifier.group(2) is None:
        return int(quantifier.group(1))
    return _UNBOUNDED if not quantifier.group(3) else int(quantifier.group(3))


def _atom(pattern: str, position: int) -> tuple[_Atom, int]:
    """The atom at ``position`` and where it ends; a group's own contents are checked as a pattern too."""
    character = pattern[position]
    if character == "\\":
        return _Atom(pattern[position : position + 2], True), _escape_end(pattern, position)
    if character == "[":
        end = _class_end(pattern, position)
        return _Atom(pattern[position:end], True), end
    if character == "(":
        end = _group_end(pattern, position)
        return _Atom(pattern[position:end], False), end
    return _Atom(character, character not in "|^$"), position + 1


def _escape_end(pattern: str, position: int) -> int:
    kind = pattern[position + 1 : position + 2]
    width = {"x": 4, "u": 6, "c": 3}.get(kind, 2)
    return position + width


def _class_end(pattern: str, position: int) -> int:
    position += 1
    if pattern[position : position + 1] == "^":
        position += 1
    if pattern[position : position + 1] == "]":  # a leading ] is a member (Java's reading; JavaScript's is empty)
        position += 1
    while position < len(pattern) and pattern[position] != "]":
        position = _escape_end(pattern, position) if pattern[position] == "\\" else position + 1
    return position + 1


def _group_end(pattern: str, position: int) -> int:
    depth = 0
    while position < len(pattern):
        character = pattern[position]
        if character == "\\":
            position = _escape_end(pattern, position)
            continue
        if character == "[":
            position = _class_end(pattern, position)
            continue
        depth += {"(": 1, ")": -1}.get(character, 0)
        position += 1
        if depth == 0:
            break
    return position


def nested_problems(pattern: str) -> list[str]:
    """``problems`` of the pattern and of every group in it."""
    found = problems(pattern)
    position = 0
    while position < len(pattern):
        character = pattern[position]
        if character == "\\":
            position = _escape_end(pattern, position)
        elif character == "[":
            position = _class_end(pattern, position)
        elif character == "(":
            end = _group_end(pattern, position)
            inner = re.sub(r"^\((\?(:|=|!|<=|<!|<[A-Za-z]\w*>))?", "", pattern[position : end - 1])
            found += nested_problems(inner)
            position = end
        else:
            position += 1
    return found


def expression_patterns(expression: str) -> list[str]:
    """The regular expression literals of the JSONata ``expression``, in writing order."""
    # A literal is written between slashes: an expression without one has none, and need not be parsed.
    return list(_patterns(expression)) if "/" in expression else []


@functools.lru_cache(maxsize=4096)
def _patterns(expression: str) -> tuple[str, ...]:
    """``expression_patterns``, parsed once a process for each text: the workflows of an app share most of theirs."""
    import jsonata  # imported lazily: synth of most apps does not need it

    try:
        tree = jsonata.Jsonata(expression).ast
    except Exception:  # what does not parse is refused elsewhere (check.problems)
        return ()
    found: list[str] = []
    seen: set[int] = set()

    def walk(node: Any) -> None:
        if id(node) in seen:
            return
        seen.add(id(node))
        if isinstance(node, (list, tuple)):
            for item in node:
                walk(item)
        elif hasattr(node, "__dict__"):
            if getattr(node, "type", None) == "regex":
                found.append(node.value.pattern)
            for name, value in vars(node).items():
                if name != "parent":
                    walk(value)

    walk(tree)
    return tuple(found)


def definition_problems(definition: dict[str, Any]) -> list[tuple[str, str]]:
    """``(pattern, problem)`` for every regular expression of ``definition``'s JSONata that breaks the rule."""
    found: list[tuple[str, str]] = []
    for expression in _expressions(definition):
        for pattern in dict.fromkeys(expression_patterns(expression)):
            found += [(pattern, problem) for problem in nested_problems(pattern)]
    return list(dict.fromkeys(found))


def _expressions(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [text for item in value.values() for text in _expressions(item)]
    if isinstance(value, list):
        return [text for item in value for text in _expressions(item)]
    if isinstance(value, str) and value.startswith("{%") and value.endswith("%}"):
        return [value[2:-2].strip()]
    return []
