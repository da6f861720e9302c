"""The options model of the public constructs, and their one validation pass.

An ``Option`` is one keyword option as the constructs take it: its name, its ``Kind`` (what it takes),
one documentation text, its default as documented, and the constructs that take it (its takers). An
``Options`` model is what a construct's docstring (``documented``), its type checks and its value checks
(``Validation``) and the reference table of the site (docs/hooks.py) are all made from, so that an
option is written once. The models themselves live beside the classes their kinds name
(``guard.config.GUARD_MODEL``, ``state_machine.WORKFLOW_MODEL``, ...): this layer imports none of them.

A value of the wrong type (a string where an ``IdempotencyKey`` goes, ``30`` where a ``Duration``
goes) would otherwise surface as a Python error from deep inside the construct. Each ``Kind`` names
what an option takes, as a user writes it, and what to pass instead given the value received, so that
the mistake becomes one line of the construct's ``IdempotencyConfigurationError``; the value checks
then run on every option whose type is right, and every problem is raised at once.
"""

from __future__ import annotations

import dataclasses
import datetime
import inspect
import json
import re
import textwrap
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, TypeVar

from aws_cdk import Duration, RemovalPolicy, Size
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_stepfunctions as sfn
from constructs import IConstruct

from ..errors import Problems
from .definition import DefinitionLocation

# A dotted path of plain field names ("refund.id"), which from_paths takes as "$.refund.id".
_DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


def article(noun: str) -> str:
    """``"an InFlightPolicy"``, ``"a Duration"``: the noun with its indefinite article."""
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def implements(value: Any, interface: type) -> bool:
    """Whether a jsii object implements a jsii interface (``dynamodb.ITable``): interfaces are
    protocols that ``isinstance`` refuses. A class records the interfaces it implements; an object
    that a jsii call returned as an interface (``iam.Role.from_role_name``) is a proxy for it, or
    several delegates of which one is."""
    delegates = vars(value).get("_delegates") if hasattr(value, "__dict__") else None
    if type(value).__name__ == "InterfaceDynamicProxy" and isinstance(delegates, list):
        return any(implements(delegate, interface) for delegate in delegates)
    proxy = getattr(interface, "__jsii_proxy_class__", None)
    proxy_class = proxy() if callable(proxy) else None
    return any(
        cls is proxy_class or any(interface in declared.__mro__ for declared in getattr(cls, "__jsii_ifaces__", ()))
        for cls in type(value).__mro__
    )


@dataclass(frozen=True)
class Kind:
    """What an option takes: ``name`` as a user writes it, whether a value ``accepts``, and ``fix``,
    what to pass instead of a value received."""

    name: str
    accepts: Callable[[Any], bool]
    fix: Callable[[Any], str]


def described(value: Any) -> str:
    """A value received, short: a construct by its class and path, anything else by its repr."""
    node = getattr(value, "node", None)
    path = getattr(node, "path", None)
    if isinstance(path, str):
        return f"the {type(value).__name__} at {path}"
    text = repr(value)
    text = text if len(text) <= 80 else text[:77] + "..."
    return f"{text} ({article(type(value).__name__)})"


def wrong_types(kinds: Mapping[str, Kind], values: Mapping[str, Any], *, required: Sequence[str] = ()) -> dict[str, str]:
    """The options whose value is not of its kind, each with its message. Options left out (``None``)
    are not checked, unless ``required``."""
    found = {}
    for option, kind in kinds.items():
        value = values.get(option)
        if (value is None and option not in required) or kind.accepts(value):
            continue
        found[option] = f"{option}: {described(value)} is not {article(kind.name)}; pass {kind.fix(value)}"
    return found


def problems(kinds: Mapping[str, Kind], values: Mapping[str, Any], *, required: Sequence[str] = ()) -> list[str]:
    """One message per option whose value is not of its kind (``wrong_types``)."""
    return list(wrong_types(kinds, values, required=required).values())


def check(construct: IConstruct, kinds: Mapping[str, Kind], values: Mapping[str, Any], *, required: Sequence[str] = ()) -> None:
    """Raise ``construct``'s ``IdempotencyConfigurationError`` listing every option of the wrong type,
    for a method's arguments; a construct's options go through one ``Validation``."""
    found = Problems(construct)
    found.extend(problems(kinds, values, required=required))
    found.raise_if_any()


# --- the options model ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Option:
    """One keyword option: what it takes (``kind``), what it does (``doc``, one text wherever it is
    shown), what happens when it is left out (``default``, as documented; ``None`` for a required option,
    checked even when ``None``), and the constructs that take it (``takers``), with the default of those
    for which it differs (``defaults``)."""

    name: str
    kind: Kind
    doc: str
    default: str | None
    takers: tuple[str, ...]
    defaults: Mapping[str, str] = field(default_factory=dict)

    def default_for(self, taker: str) -> str | None:
        """The default as ``taker`` documents it."""
        return self.defaults.get(taker, self.default)

    def text(self, taker: str) -> str:
        """The whole documentation of the option in ``taker``: what it does, then its default."""
        default = self.default_for(taker)
        return self.doc if default is None else f"{self.doc} Default: {default}"


class Options:
    """A model of options: each ``Option`` once, in order, and for each construct (taker) the ones it takes."""

    def __init__(self, *options: Option) -> None:
        names = [option.name for option in options]
        if len(set(names)) != len(names):
            raise ValueError(f"an option is in the model twice: {sorted(name for name in names if names.count(name) > 1)}")
        self._options = {option.name: option for option in options}

    def __iter__(self) -> Iterator[Option]:
        return iter(self._options.values())

    def __add__(self, other: Options) -> Options:
        return Options(*self, *other)

    def of(self, taker: str) -> list[Option]:
        """The options ``taker`` takes, in the model's order."""
        return [option for option in self if taker in option.takers]

    def kinds(self, taker: str) -> dict[str, Kind]:
        """What each option of ``taker`` takes, by name."""
        return {option.name: option.kind for option in self.of(taker)}

    def required(self, taker: str) -> tuple[str, ...]:
        """The options ``taker`` cannot do without."""
        return tuple(option.name for option in self.of(taker) if option.default_for(taker) is None)

    def documented(self, taker: str) -> Callable[[_Documented], _Documented]:
        """A decorator of ``taker``'s ``__init__`` (or, for a dataclass, of the class) that writes the
        ``:param:`` entry of each of its keyword options (its fields) from the model, in the signature's
        order, where its docstring has the line ``:options:``; it refuses an ``__init__`` whose options are not the
        model's, so that an option cannot be added in one place only."""

        def document(target: _Documented) -> _Documented:
            names = taken_names(target)
            options = {option.name: option for option in self.of(taker)}
            if set(names) != set(options):
                raise TypeError(
                    f"{taker}: the signature's options and the model's differ: only in the signature "
                    f"{sorted(set(names) - set(options))}, only in the model {sorted(set(options) - set(names))}"
                )
            if target.__doc__ is not None:  # None under python -OO
                target.__doc__ = _filled(target.__doc__, [options[name].text(taker) for name in names], names)
            return target

        return document


_Documented = TypeVar("_Documented", bound=Callable[..., Any])
# The line of a docstring that ``Options.documented`` replaces with the ``:param:`` entries.
OPTIONS_LINE = re.compile(r"^(?P<indent>[ \t]*):options:.*$", re.MULTILINE)
# The width of a generated ``:param:`` entry's lines, as help() shows them (without the docstring's indentation).
_WIDTH = 100


def taken_names(target: Callable[..., Any]) -> list[str]:
    """The keyword options of a function, or the fields of a dataclass, in order."""
    if isinstance(target, type) and dataclasses.is_dataclass(target):
        return [each.name for each in dataclasses.fields(target)]
    parameters = inspect.signature(target).parameters.values()
    return [parameter.name for parameter in parameters if parameter.kind is inspect.Parameter.KEYWORD_ONLY]


def _filled(docstring: str, texts: list[str], names: list[str]) -> str:
    match = OPTIONS_LINE.search(docstring)
    if match is None:
        raise ValueError("the docstring has no ':options:' line to write the options' documentation at")
    lines = [
        line
        for name, text in zip(names, texts, strict=True)
        for line in textwrap.wrap(
            f":param {name}: {text}", width=_WIDTH, subsequent_indent="    ", break_long_words=False, break_on_hyphens=False
        )
    ]
    indent = match.group("indent")
    return docstring[: match.start()] + "\n".join(indent + line for line in lines) + docstring[match.end() :]


class Validation(Problems):
    """One validation pass of a construct's options: first every option whose value is not of its kind,
    then, added by the construct, the problems of the values (``values``: those given, with ``None``
    for an option of the wrong type, so that its value checks are skipped and no other check reads it;
    ``typed`` tells a check that reads several options whether it may run), raised at once."""

    def __init__(self, construct: IConstruct, model: Options, taker: str, given: Mapping[str, Any]) -> None:
        super().__init__(construct)
        kinds = model.kinds(taker)
        self.wrong = wrong_types(kinds, given, required=model.required(taker))
        self.extend(self.wrong.values())
        self.values: dict[str, Any] = {name: None if name in self.wrong else given.get(name) for name in kinds}

    def typed(self, *names: str) -> bool:
        """Whether every option named is of its kind (or left out)."""
        return not set(names) & set(self.wrong)


def instance_of(cls: type, fix: Callable[[Any], str], name: str | None = None) -> Kind:
    """An option that takes an instance of ``cls`` (written ``name``, default the class's name)."""
    return Kind(name or cls.__name__, lambda value: isinstance(value, cls), fix)


def _quoted(text: str) -> str:
    return json.dumps(text)


# --- kinds ----------------------------------------------------------------------------------------
def _duration_fix(value: Any) -> str:
    if isinstance(value, bool):
        return "Duration.seconds(n), Duration.minutes(n) or Duration.hours(n)"
    if isinstance(value, int | float) and float(value).is_integer():
        return f"Duration.seconds({int(value)})"
    if isinstance(value, datetime.timedelta) and value.total_seconds().is_integer():
        return f"Duration.seconds({int(value.total_seconds())})"
    return "Duration.seconds(n), Duration.minutes(n) or Duration.hours(n)"


DURATION = instance_of(Duration, _duration_fix)


def _size_fix(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0 and value % 1024 == 0:
        return f"Size.kibibytes({value // 1024})"
    return "Size.kibibytes(n)"


SIZE = instance_of(Size, _size_fix)


def key_fix(value: Any) -> str:
    """What to pass as ``key`` instead of ``value``: a path given as a string is a key of that path."""
    paths = [value] if isinstance(value, str) else value if isinstance(value, list | tuple) else None
    if paths and all(isinstance(path, str) and path.startswith("$") for path in paths):
        return f"IdempotencyKey.from_paths({', '.join(_quoted(path) for path in paths)})"
    if isinstance(value, str) and _DOTTED.fullmatch(value):
        return f"IdempotencyKey.from_paths({_quoted('$.' + value)})"
    if isinstance(value, str) and value.strip():
        return f"IdempotencyKey.from_jmespath({_quoted(value)}) if it is a JMESPath expression"
    return 'one of IdempotencyKey.from_paths("$.order.id"), .from_jmespath(...), .from_jsonata(...) or .whole_input()'


def payload_fix(value: Any) -> str:
    """What to pass as ``payload`` instead of ``value``: a path given as a string is a payload of that path."""
    paths = [value] if isinstance(value, str) else value if isinstance(value, list | tuple) else None
    if paths and all(isinstance(path, str) and path.startswith("$") for path in paths):
        return f"IdempotencyPayload.from_paths({', '.join(_quoted(path) for path in paths)})"
    return 'one of IdempotencyPayload.from_paths("$.body"), .from_jsonata(...), .from_jmespath(...), .whole_input() or .none()'


def table_fix(value: Any) -> str:
    """What to pass as a workflow's ``table`` instead of ``value``: a table's name is adopted by name."""
    adopted = (
        f'IdempotencyTable(self, "Idempotency", table=dynamodb.Table.from_table_name(self, "Existing", {_quoted(value)}))'
        if isinstance(value, str)
        else "dynamodb.Table.from_table_name(...)"
    )
    return f'the IdempotencyTable(self, "Idempotency") you created, or an existing table: {adopted}'


EXISTING_TABLE = Kind(
    "table (dynamodb.ITable)",
    lambda value: implements(value, dynamodb.ITable),
    lambda value: (
        f'dynamodb.Table.from_table_name(self, "Existing", {_quoted(value)})'
        if isinstance(value, str)
        else "a table, such as dynamodb.Table.from_table_name(...), or leave it out to create one"
    ),
)
CHAINABLE = Kind(
    "state or chain of states (sfn.IChainable)",
    lambda value: implements(value, sfn.IChainable),
    lambda value: 'one such as sfn.Pass(self, "Work") or first.next(second)',
)
DEFINITION_BODY = Kind(
    "definition (sfn.DefinitionBody or a dict)",
    lambda value: isinstance(value, sfn.DefinitionBody | Mapping),
    lambda value: (
        f"sfn.DefinitionBody.from_file({_quoted(value)})"
        if isinstance(value, str) and value.endswith((".json", ".yaml", ".yml"))
        else "sfn.DefinitionBody.from_file(path), sfn.DefinitionBody.from_string(text) or the document as a dict"
    ),
)
SUBSTITUTIONS = Kind(
    "mapping of placeholder names to strings",
    lambda value: isinstance(value, Mapping) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()),
    lambda value: (
        "{"
        + ", ".join(f"{_quoted(str(k))}: {_quoted(str(v))}" for k, v in value.items())
        + "} (a number or boolean as its text, as CloudFormation takes it)"
        if isinstance(value, Mapping)
        else '{"ReserveFlightFunction": function.function_arn}'
    ),
)
ROLE = Kind(
    "role (iam.IRole)", lambda value: implements(value, iam.IRole), lambda value: "a role, such as iam.Role.from_role_arn(...)"
)
KMS_KEY = Kind("KMS key (kms.IKey)", lambda value: implements(value, kms.IKey), lambda value: "a key, such as kms.Key(...)")
BUCKET = Kind(
    "bucket (s3.IBucket)", lambda value: implements(value, s3.IBucket), lambda value: "a bucket, such as s3.Bucket(...)"
)
LOG_OPTIONS = instance_of(
    sfn.LogOptions, lambda value: "sfn.LogOptions(destination=log_group, level=sfn.LogLevel.ALL)", "sfn.LogOptions"
)
BOOL = instance_of(bool, lambda value: "True or False")
TEXT = instance_of(
    str, lambda value: f"a string, such as {_quoted(str(value))}" if isinstance(value, int | float) else "a string", "string"
)
ERROR_NAMES = Kind(
    "list of error names",
    lambda value: isinstance(value, list | tuple) and all(isinstance(name, str) for name in value),
    lambda value: f"[{_quoted(value)}]" if isinstance(value, str) else 'a list of strings, such as ["CardDeclined"]',
)


def enum_kind(enum: type[Enum], name: str | None = None) -> Kind:
    """A member of ``enum`` (a library policy, or a jsii enum such as ``sfn.StateMachineType``,
    written ``name``); a string naming a member is told which member to pass."""
    written = name or enum.__name__

    def fix(value: Any) -> str:
        named = next((m for m in enum if isinstance(value, str) and value.upper() in (m.name, str(m.value).upper())), None)
        if named is not None:
            return f"{written}.{named.name}"
        return "one of " + ", ".join(f"{written}.{member.name}" for member in enum)

    return Kind(written, lambda value: isinstance(value, enum), fix)


REMOVAL_POLICY = enum_kind(RemovalPolicy)
STATE_MACHINE_TYPE = enum_kind(sfn.StateMachineType, "sfn.StateMachineType")
QUERY_LANGUAGE = enum_kind(sfn.QueryLanguage, "sfn.QueryLanguage")
DEFINITION_LOCATION = enum_kind(DefinitionLocation)
