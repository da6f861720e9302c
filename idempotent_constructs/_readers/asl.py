"""An existing Amazon States Language document, read at synth time and checked before it is wrapped.

Teams that keep their workflows as ``statemachine.asl.json`` files (drawn in Workflow Studio, deployed
by SAM or by ``sfn.DefinitionBody.from_file``) hand the library the file as it is. It is read when the
app is synthesized, its ``${Name}`` placeholders are replaced as CloudFormation's
``DefinitionSubstitutions`` would replace them (``assembly.substitute``: textually, so a value may be a
token such as a function's ARN, which CDK then renders into the definition, and again on the result
until nothing changes), and it is checked for what Step Functions would refuse at deploy time or what
would clash with the guard around it: every problem at once.

The placeholders are replaced here rather than left to the state machine's ``DefinitionSubstitutions``
because a document may be one step of a state machine the library does not create (``AslFragment``),
and because the definition must be known whole at synth time to be checked.

The document is embedded as the only branch of a Parallel state. A branch has no top-level
``QueryLanguage``, so the document's (``JSONata`` or, by default, ``JSONPath``) is written onto each
of its JSONata states that does not declare one; nothing else of a state changes.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aws_cdk import JsonNull, Token
from aws_cdk import aws_stepfunctions as sfn

from .._jsonata.check import definition_problems
from .assembly import substitute, unfilled

JSONPATH = "JSONPath"
JSONATA = "JSONata"
# The fields of a state that name another state of its own scope.
_TRANSITIONS = ("Next", "Default")
# The fields of a state that hold states of a scope of their own.
_NESTED = ("Branches", "ItemProcessor", "Iterator")


@dataclass(frozen=True)
class Document:
    """A parsed document, its placeholders replaced. ``language`` is its top-level query language."""

    definition: dict[str, Any]
    source: str  # where it came from, for messages: "statemachine/saga.asl.json", "the text given"

    @property
    def language(self) -> str:
        return str(self.definition.get("QueryLanguage", JSONPATH))

    @property
    def comment(self) -> str | None:
        comment = self.definition.get("Comment")
        return comment if isinstance(comment, str) else None

    @property
    def timeout_seconds(self) -> int | None:
        timeout = self.definition.get("TimeoutSeconds")
        return timeout if isinstance(timeout, int) and not isinstance(timeout, bool) else None

    def state_names(self) -> list[str]:
        """Every state's name, those inside Parallel and Map states too."""
        return [name for name, _, _ in all_states(self.definition, "")]

    def branch(self) -> dict[str, Any]:
        """The document as a Parallel's branch, for the CDK: its ``StartAt`` and ``States``, each JSONata
        state declaring its language (the document's top level no longer says it), every null kept."""
        states = copy.deepcopy(self.definition["States"])
        _declare_jsonata(states, self.language)
        return {"StartAt": self.definition["StartAt"], "States": with_json_nulls(states)}


def with_json_nulls(value: Any) -> Any:
    """``value`` with each ``None`` made the CDK's ``JsonNull``, for a value handed to the CDK. A Python
    ``None`` reaches it as ``undefined``, which it drops: ``"ResultPath": null`` (discard the result)
    would vanish and the result replace the state's input, ``{"keep": null}`` lose its member."""
    if value is None:
        return JsonNull.INSTANCE
    if isinstance(value, dict):
        return {name: with_json_nulls(item) for name, item in value.items()}
    if isinstance(value, list):
        return [with_json_nulls(item) for item in value]
    return value


def read(
    definition_body: sfn.DefinitionBody | Mapping[str, Any], substitutions: Mapping[str, str] | None
) -> tuple[Document | None, list[str]]:
    """``(the document, [])``, or ``(None, problems)`` when it cannot be read, has placeholders
    without a value, or is not JSON (YAML too for a ``.yaml``/``.yml`` file, as Step Functions takes)."""
    text, source, problems = _text(definition_body)
    if text is None:
        return None, problems
    substitutions = substitutions or {}
    problems += [
        f"definition_substitutions: {source} uses ${{{name}}}, which has no value; "
        f'pass definition_substitutions={{"{name}": ...}}'
        for name in unfilled(text, substitutions)
    ]
    try:
        text = substitute(text, substitutions)
    except ValueError:
        problems.append(
            f"definition_substitutions: the values for {source} name each other's placeholders in a circle, "
            f"so replacing them never ends: {dict(substitutions)!r}; give each a value without a placeholder of another"
        )
        return None, problems
    yaml_file = source.endswith((".yaml", ".yml"))
    try:
        definition = _parse_yaml(text) if yaml_file else json.loads(text)
    except ValueError as error:
        problems.append(f"definition_body: {source} is not {'YAML' if yaml_file else 'JSON'}: {_parse_error(error)}")
        return None, problems
    if not isinstance(definition, dict):
        problems.append(f"definition_body: {source} is {type(definition).__name__}, not an object with StartAt and States")
        return None, problems
    if problems:
        return None, problems
    return Document(definition, source), []


def problems(document: Document, *, reserved: Collection[str] = (), clash: str = "") -> list[str]:
    """What Step Functions would refuse in ``document``, or what clashes with the states around it:
    a ``StartAt`` or transition naming no state, a state name used twice or among ``reserved`` (the
    names of the states around it; ``clash`` says whose, and what to do), a JSONata expression refused."""
    definition = document.definition
    found = _scope_problems(definition, "")
    if not all(isinstance(state, dict) for _, _, state in all_states(definition, "")):
        return found  # the rest reads states as objects
    seen: dict[str, str] = {}
    for name, where, _ in all_states(definition, ""):
        if name in seen:
            found.append(
                f"definition_body: the state name {name!r} is used twice ({seen[name]} and {where}); "
                "Step Functions needs every state name of a state machine to differ: rename one in the document"
            )
        seen.setdefault(name, where)
        if name in reserved:
            found.append(f"definition_body: the state {name!r} ({where}) {clash}")
    language = document.language
    if language not in (JSONPATH, JSONATA):
        found.append(f"definition_body: QueryLanguage {language!r} is neither {JSONPATH!r} nor {JSONATA!r}")
    found += [
        f"definition_body: {code} at {location}: {message} (Step Functions refuses it when the state machine is created)"
        for location, code, message in definition_problems(definition)
    ]
    return found


def _text(definition_body: sfn.DefinitionBody | Mapping[str, Any]) -> tuple[str | None, str, list[str]]:
    if isinstance(definition_body, Mapping):
        return json.dumps(definition_body), "the definition given", []
    if isinstance(definition_body, sfn.FileDefinitionBody):
        path = Path(definition_body.path)
        try:
            return path.read_text(encoding="utf-8"), definition_body.path, []
        except OSError as error:
            return None, definition_body.path, [f"definition_body: cannot read {definition_body.path}: {error.strerror or error}"]
    if isinstance(definition_body, sfn.StringDefinitionBody):
        if Token.is_unresolved(definition_body.body) and not definition_body.body.lstrip().startswith("{"):
            return (
                None,
                "the text given",
                [
                    "definition_body: the text is a token, known only at deploy time; pass the document itself "
                    "(DefinitionBody.from_file or from_string with its JSON)"
                ],
            )
        return definition_body.body, "the text given", []
    return (
        None,
        "",
        [
            f"definition_body: {type(definition_body).__name__} is not readable at synth time; pass "
            "sfn.DefinitionBody.from_file(path), sfn.DefinitionBody.from_string(text) or the document as a dict"
        ],
    )


def _parse_yaml(text: str) -> Any:
    try:
        import yaml  # type: ignore[import-untyped]  # only a YAML file needs it; not a dependency
    except ImportError as error:
        raise ValueError("reading a YAML document needs PyYAML: pip install pyyaml") from error
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ValueError(str(error).replace("\n", " ")) from error


def _parse_error(error: ValueError) -> str:
    if isinstance(error, json.JSONDecodeError):
        return f"{error.msg} (line {error.lineno}, column {error.colno})"
    return str(error)


def all_states(scope: dict[str, Any], at: str) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """``(name, location, state)`` of every state of ``scope`` and of the scopes inside it."""
    states = scope.get("States")
    if not isinstance(states, dict):
        return
    for name, state in states.items():
        where = f"{at}/States/{name}"
        yield name, where, state
        for inner, inner_at in _scopes(state, where):
            yield from all_states(inner, inner_at)


def _scopes(state: Any, where: str) -> Iterator[tuple[dict[str, Any], str]]:
    """The scopes a state holds: a Parallel's branches, a Map's item processor."""
    if not isinstance(state, dict):
        return
    for field in _NESTED:
        value = state.get(field)
        if field == "Branches" and isinstance(value, list):
            for index, branch in enumerate(value):
                if isinstance(branch, dict):
                    yield branch, f"{where}/Branches[{index}]"
        elif isinstance(value, dict):
            yield value, f"{where}/{field}"


def _scope_problems(scope: dict[str, Any], at: str) -> list[str]:
    """Whether ``scope`` (the document, a branch, an item processor) has states, starts at one of them,
    and every transition of its states names one of them."""
    where = at or "the document"
    states = scope.get("States")
    if not isinstance(states, dict) or not states:
        return [f"definition_body: {where} has no States"]
    found = []
    start = scope.get("StartAt")
    if start not in states:
        found.append(f"definition_body: {at}/StartAt {start!r} names no state of {where}; its states: {_listed(states)}")
    for name, state in states.items():
        here = f"{at}/States/{name}"
        if not isinstance(state, dict) or not isinstance(state.get("Type"), str):
            found.append(f"definition_body: {here} has no Type")
            continue
        targets = [(f"{here}/{field}", state.get(field)) for field in _TRANSITIONS if field in state]
        targets += [(f"{here}/Choices[{i}]/Next", rule.get("Next")) for i, rule in enumerate(_objects(state.get("Choices")))]
        targets += [(f"{here}/Catch[{i}]/Next", catch.get("Next")) for i, catch in enumerate(_objects(state.get("Catch")))]
        found += [
            f"definition_body: {location} {target!r} names no state of {where}; its states: {_listed(states)}"
            for location, target in targets
            if target not in states
        ]
        for inner, inner_at in _scopes(state, here):
            found += _scope_problems(inner, inner_at)
    return found


def _objects(value: Any) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _listed(states: dict[str, Any]) -> str:
    names = list(states)
    return ", ".join(repr(name) for name in names[:10]) + (", ..." if len(names) > 10 else "")


def _declare_jsonata(states: dict[str, Any], language: str) -> None:
    """Write ``QueryLanguage: JSONata`` onto each JSONata state that inherits it, in place."""
    for name, state in states.items():
        own = state.get("QueryLanguage", language)
        if own == JSONATA and "QueryLanguage" not in state:
            states[name] = state = {"QueryLanguage": JSONATA, **state}
        for inner, _ in _scopes(state, ""):
            _declare_jsonata(inner["States"], own)
