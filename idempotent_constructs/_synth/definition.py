"""Where a workflow's definition lives: in the template, shared between workflows alike; in the
template, whole, as the CDK writes it; or as an S3 asset the template points to.

A guarded definition is tens of kilobytes, and CloudFormation refuses a template over 1 MB (through S3,
as ``cdk deploy`` sends it). Most of it is the guard's protocol, the same for every workflow of the same
options. ``DefinitionLocation.TEMPLATE`` (the default) writes that text once per stack, in its
``Mappings`` (``IdempotentDefinitions``), and each state machine's ``DefinitionString`` is a
``Fn::FindInMap`` of it; what is the workflow's own (its body, its key and namespace, and each token: a
table's name, a function's ARN) is a ``DefinitionSubstitutions`` entry that CloudFormation puts back in
place of ``${name}`` when it creates the state machine. ``DefinitionLocation.ASSET`` writes the
definition to a file that the CDK publishes as an asset with the stack's other assets, its tokens as
``DefinitionSubstitutions``. Either way the state machine that runs is the one ``INLINE`` gives, once
substituted (``assembly.substitute``, as AWS's resource handler does it): for ``TEMPLATE`` this is
checked at synth, text for text (a workflow alike one checked before it, by what differs being written alike by
Python and the CDK), and a definition for which it would not hold is written whole.
"""

from __future__ import annotations

import hashlib
import json
import re
import tempfile
import weakref
from collections.abc import Callable, Sequence
from enum import Enum
from pathlib import Path
from typing import Any

import jsii
from aws_cdk import (
    CfnMapping,
    DefaultTokenResolver,
    IPostProcessor,
    IResolvable,
    IResolveContext,
    ITokenResolver,
    Stack,
    StringConcat,
    Token,
    Tokenization,
    TokenizedStringFragments,
)
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct, IConstruct

from .._readers.asl import JSONATA, JSONPATH, with_json_nulls
from .._readers.assembly import TOKEN, substitute
from . import read_once, renders


class DefinitionLocation(Enum):
    """Where ``IdempotentStateMachine`` keeps its definition."""

    TEMPLATE = "template"
    """In the template: the text workflows of the same options share, once per stack in its
    ``Mappings``, and each workflow's own parts (body, key, namespace, tokens) as its
    ``DefinitionSubstitutions``. Readable in the template and its diffs, deployable with nothing but
    the template; a few kilobytes of template per further workflow."""
    INLINE = "inline"
    """In the template, whole, as the CDK writes it (``DefinitionString``), for tools that read the
    definition there; each guarded workflow adds tens of kilobytes to the template."""
    ASSET = "asset"
    """In an S3 asset (``DefinitionS3Location``, tokens as ``DefinitionSubstitutions``): a few hundred
    bytes of template per workflow, for stacks of more workflows than one template holds."""


SUBSTITUTION_PREFIX = "IdempotencyToken"


def placeholders(text: str) -> tuple[str, dict[str, str]]:
    """``text`` with each distinct token written ``${IdempotencyToken<n>}``, and the substitutions that
    give each placeholder its token back (resolved by the CDK in the stack that holds the workflow)."""
    substitutions: dict[str, str] = {}
    names: dict[str, str] = {}

    def name(match: re.Match[str]) -> str:
        token = match.group(0)
        if token not in names:
            names[token] = f"{SUBSTITUTION_PREFIX}{len(names)}"
            substitutions[names[token]] = token
        return "${" + names[token] + "}"

    replaced = TOKEN.sub(name, text)
    assert all(read_once.unresolved(token) for token in substitutions.values())
    return replaced, substitutions


def render(graph: sfn.StateGraph, query_language: sfn.QueryLanguage | None) -> dict[str, Any]:
    """The definition of ``graph`` as ``DefinitionBody.from_chainable`` renders it (its states, and the
    state machine's query language when one is given), each guard's placement settled (``renders.settled``)."""
    definition = dict(renders.settled(graph.to_graph_json(query_language)))
    if query_language is not None:
        # As the CDK writes it: the enum's value in the CDK's own language ("JSONata"), not Python's name.
        definition["QueryLanguage"] = {sfn.QueryLanguage.JSONATA: JSONATA, sfn.QueryLanguage.JSON_PATH: JSONPATH}[query_language]
    return definition


def _text(definition: dict[str, Any]) -> str:
    # Non-ASCII characters as they are, as the CDK writes them.
    return json.dumps(definition, separators=(",", ":"), ensure_ascii=False)


def inline_body(scope: Construct, definition: dict[str, Any]) -> sfn.DefinitionBody:
    """The whole definition in ``DefinitionString``, written by the CDK as ``from_chainable`` writes
    it (each token escaped for JSON where it can be, list and number tokens included)."""
    return sfn.DefinitionBody.from_string(Stack.of(scope).to_json_string(with_json_nulls(definition)))


def _as_written(resolved: Any) -> str:
    """What CloudFormation makes of a text with tokens, ``resolved`` by the CDK (``Stack.resolve``), as a
    text, each reference it cannot know at synth (a ``Ref``, ``Fn::GetAtt``, ...) written as its JSON between
    two NULs."""
    if isinstance(resolved, str):
        return resolved
    if isinstance(resolved, dict) and list(resolved) == ["Fn::Join"] and resolved["Fn::Join"][0] == "":
        return "".join(_as_written(part) for part in resolved["Fn::Join"][1])
    return "\0" + json.dumps(resolved, sort_keys=True) + "\0"


MAPPING_ID = "IdempotentDefinitions"
_DEFINITIONS_PER_MAPPING = 100  # CloudFormation allows 200 attributes a mapping


class _SharedDefinitions(Construct):
    """The stack's shared definition texts, each once, by the hash of its text, in the mappings
    ``IdempotentDefinitions``, ``IdempotentDefinitions2``, ..."""

    def __init__(self, scope: Construct) -> None:
        super().__init__(scope, "IdempotentSharedDefinitions")
        self.mappings: dict[str, CfnMapping] = {}  # the mapping that holds each text, by its key

    def find(self, text: str) -> str:
        """A ``Fn::FindInMap`` of ``text``, which is written in the stack's Mappings once."""
        key = "Definition" + hashlib.sha256(text.encode()).hexdigest()[:20]
        if key not in self.mappings:
            number = len(self.mappings) // _DEFINITIONS_PER_MAPPING + 1
            mapping = self.node.try_find_child(f"Texts{number}")
            if not isinstance(mapping, CfnMapping):
                # lazy=False: always written, and found with Fn::FindInMap (never inlined, which would undo the sharing).
                mapping = CfnMapping(self, f"Texts{number}", lazy=False)
                mapping.override_logical_id(f"{MAPPING_ID}{number if number > 1 else ''}")
            mapping.set_value(key, "Text", text)
            self.mappings[key] = mapping
        return self.mappings[key].find_in_map(key, "Text")


def _shared_definitions(stack: Stack) -> _SharedDefinitions:
    """The stack's shared definition texts, made on the first workflow that shares one and kept here: looked for
    in the stack (a call into jsii) only where the stack is new here (made in Python, a stack is the same object
    each time; made by the CDK, a new one each time)."""
    found = _SHARED.get(stack)
    if found is None:
        child = stack.node.try_find_child("IdempotentSharedDefinitions")
        found = _SHARED[stack] = child if isinstance(child, _SharedDefinitions) else _SharedDefinitions(stack)
    return found


_SHARED: weakref.WeakKeyDictionary[Stack, _SharedDefinitions] = weakref.WeakKeyDictionary()


class Verbatim(str):
    """A part of a definition's text cut as it is written there (``shared_body``): a state's name with its
    quotes, say, which a state that runs bare in the definition's top level is known by."""


def shared_body(scope: Construct, definition: dict[str, Any], own: dict[str, Any]) -> tuple[sfn.DefinitionBody, dict[str, str]]:
    """``(a DefinitionBody that finds the shared text in the stack's Mappings, its
    DefinitionSubstitutions)`` for ``definition``. ``own`` names the parts of the definition that are
    this workflow's own: a JSON value (the body's branches), a text as a JSON string holds it (a
    namespace, a key's JSONata), or a text as the definition's text holds it (``Verbatim``); each is cut out of the shared text where it occurs and given back by a
    substitution, as are the tokens. Where the cut text would not give the definition back exactly
    (a part that holds a ``${...}`` of ours, a token the CDK would write otherwise), the definition is
    kept whole (``inline_body``)."""
    text = _text(definition)
    cuts: dict[str, str] = {}
    for name, value in own.items():
        if isinstance(value, Verbatim):
            written: Any = str(value)
        else:
            written = value if not isinstance(value, str) else json.dumps(value, ensure_ascii=False)[1:-1]
        written = written if isinstance(written, str) else _text(written)
        if written and written in text:
            cuts[written] = name
    shared = text
    if cuts:
        # One pass, the longest first, so that a part inside another, or a placeholder, is not cut again;
        # a token is matched whole first, so that no part is cut out of one.
        parts = "|".join(re.escape(written) for written in sorted(cuts, key=len, reverse=True))
        pattern = re.compile(f"({TOKEN.pattern})|{parts}")
        shared = pattern.sub(lambda match: match.group(1) or "${" + cuts[match.group(0)] + "}", text)
    shared, substitutions = placeholders(shared)
    substitutions.update({name: written for written, name in cuts.items()})
    # Shared only where CloudFormation then gives Step Functions exactly what the CDK would have
    # written whole (inline_body): a token the CDK escapes, or a list or number token, keeps it whole.
    stack = read_once.stack(scope)
    checked = _CHECKED.setdefault(stack, set())
    # A text already found exact, with the same tokens, is exact again where what differs is written alike by
    # Python and the CDK (_written_alike): then no call into jsii (the whole definition, sent and resolved).
    known = (shared, tuple((name, value) for name, value in substitutions.items() if read_once.may_hold_token(value)))
    if known in checked and _written_alike(definition, text) and _reconstructs(shared, substitutions, text):
        return sfn.DefinitionBody.from_string(_shared_definitions(stack).find(shared)), substitutions
    whole = stack.to_json_string(with_json_nulls(definition))
    try:
        # Resolved at once: each resolve is a call into jsii.
        *values, text_whole = stack.resolve([*substitutions.values(), whole])
        exact = substitute(shared, dict(zip(substitutions, map(_as_written, values), strict=True))) == _as_written(text_whole)
    except Exception:  # a substitution that refers to itself, a list token in a text: as the CDK writes it
        exact = False
    if not exact:
        return sfn.DefinitionBody.from_string(whole), {}
    checked.add(known)
    return sfn.DefinitionBody.from_string(_shared_definitions(stack).find(shared)), substitutions


# The shared texts found exact in each stack, with the substitutions that hold tokens (shared_body).
_CHECKED: weakref.WeakKeyDictionary[Stack, set[tuple[str, tuple[tuple[str, str], ...]]]] = weakref.WeakKeyDictionary()
_ARRAY_INDEX = re.compile(r"0|[1-9][0-9]{0,9}")  # a key JavaScript may order first in an object (those below 2^32 - 1)
_INTRINSIC_KEY = "$IntrinsicKey$"  # a key the CDK's resolve rewrites: {"$IntrinsicKey$x": ["k", "v"]} is {"k": "v"}
_SURROGATE = re.compile("[\ud800-\udfff]")  # a lone one: Python writes it as it is, JavaScript escapes it


def _written_alike(value: Any, text: str) -> bool:
    """Whether Python's ``_text`` and the CDK's JSON (``Stack.to_json_string``, resolved) write ``value`` (whose
    ``_text`` is ``text``) alike, known without asking, a token aside (``shared_body`` compares those): texts without
    lone surrogates (Python writes them as they are, so ``text`` shows each), integers JavaScript holds exactly,
    objects whose keys JavaScript keeps in their order (no array index among them) and the CDK's resolve keeps as
    they are (none starting ``$IntrinsicKey$``); not a float (each writes exponents its own way)."""
    return not _SURROGATE.search(text) and _numbers_and_keys_alike(value)


def _numbers_and_keys_alike(value: Any) -> bool:
    if isinstance(value, str):
        return True
    if isinstance(value, dict):
        return all(
            isinstance(key, str)
            # Most keys start with neither a digit nor "$": no regular expression for them.
            and not (key[:1].isdigit() and _ARRAY_INDEX.fullmatch(key))
            and not key.startswith(_INTRINSIC_KEY)
            and _numbers_and_keys_alike(item)
            for key, item in value.items()
        )
    if isinstance(value, list):
        return all(_numbers_and_keys_alike(item) for item in value)
    if isinstance(value, bool) or value is None:
        return True
    return isinstance(value, int) and abs(value) <= 2**53


def _reconstructs(shared: str, substitutions: dict[str, str], text: str) -> bool:
    """Whether ``shared``, its substitutions put back, is ``text``, the definition's (no ``${...}`` of it taken for ours)."""
    try:
        return substitute(shared, substitutions) == text
    except Exception:  # a substitution that refers to itself
        return False


def asset_body(definition: dict[str, Any]) -> tuple[sfn.DefinitionBody, dict[str, str]]:
    """``(a DefinitionBody read from an asset file, its DefinitionSubstitutions)`` for ``definition``. A
    number known only at synth (a nested guard's retrier's ``MaxAttempts``: ``AtSynth``) is written as a
    placeholder outside quotes, which CloudFormation replaces with its digits before it reads the JSON."""
    numbers: list[float] = []

    def marked(value: Any) -> Any:
        if isinstance(value, dict):
            return {name: marked(item) for name, item in value.items()}
        if isinstance(value, list):
            return [marked(item) for item in value]
        if isinstance(value, float) and Token.is_unresolved(value):
            numbers.append(value)
            return f"\0number{len(numbers) - 1}\0"
        return value

    text, substitutions = placeholders(_text(marked(definition)))
    for index, number in enumerate(numbers):
        name = f"{SUBSTITUTION_PREFIX}{len(substitutions)}"
        text = text.replace(json.dumps(f"\0number{index}\0"), "${" + name + "}")
        substitutions[name] = Tokenization.stringify_number(number)
    # The CDK copies the file into the cloud assembly, named by its content's hash, when it synthesizes.
    path = Path(tempfile.mkdtemp(prefix="idempotent-definition-")) / "definition.asl.json"
    path.write_text(text, encoding="utf-8")
    return sfn.DefinitionBody.from_file(str(path)), substitutions


def machines_meeting(scope: Construct, meets: Callable[[Any], bool]) -> list[sfn.CfnStateMachine]:
    """The state machines of ``scope``'s app whose definition (its string and substitutions), resolved, meets
    a token for which ``meets`` is true: a guard's own numbers (``guard.advice.machines_holding``). Call it
    at synth. Each definition is resolved once an app (and again if its definition is set anew)."""
    root = scope.node.root
    met = _MET.setdefault(root, {})
    found = []
    for machine in root.node.find_all():
        if isinstance(machine, sfn.CfnStateMachine):
            key = (machine.node.path, str(machine.definition_string), str(machine.definition_substitutions))
            if key not in met:
                collecting = _Collecting()
                Tokenization.resolve(
                    [machine.definition_string, machine.definition_substitutions], scope=machine, resolver=collecting
                )
                met[key] = collecting.tokens
            if any(meets(token) for token in met[key]):
                found.append(machine)
    return found


# The tokens each state machine's definition holds (by its path and its definition as set), for each app
# (machines_meeting).
_MET: weakref.WeakKeyDictionary[IConstruct, dict[tuple[str, str, str], list[Any]]] = weakref.WeakKeyDictionary()


@jsii.implements(ITokenResolver)
class _Collecting:
    """Resolves as the default resolver does, noting each token it meets."""

    def __init__(self) -> None:
        self.tokens: list[Any] = []
        self.default = DefaultTokenResolver(StringConcat())

    def resolve_token(self, t: IResolvable, context: IResolveContext, post_processor: IPostProcessor) -> Any:
        self.tokens.append(t)
        return self.default.resolve_token(t, context, post_processor)

    def resolve_string(self, s: TokenizedStringFragments, context: IResolveContext) -> Any:
        return self.default.resolve_string(s, context)

    def resolve_list(self, l: Sequence[str], context: IResolveContext) -> Any:  # noqa: E741 (ITokenResolver's name)
        return self.default.resolve_list(l, context)
