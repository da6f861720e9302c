"""What an option takes (a ``Kind``), the type check of a construct's options against their kinds, and
every kind the public constructs' options use.

A value of the wrong type (a string where an ``IdempotencyKey`` goes, ``30`` where a ``Duration``
goes) would otherwise surface as a Python error from deep inside the construct. Each ``Kind`` names
what an option takes, as a user writes it, and what to pass instead given the value received, so that
the mistake becomes one line of the construct's ``IdempotencyConfigurationError`` (``wrong_types``).

It imports of the library only the error it raises (``errors``) and ``DefinitionLocation``: a kind of a
class of the constructs (``IdempotencyKey``, a policy) is made beside that class with ``instance_of`` or
``enum_kind``. The options model that gives each option its kind is ``options``.
"""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

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
