"""The options model of the public constructs, and their one validation pass.

An ``Option`` is one keyword option as the constructs take it: its name, its ``Kind`` (what it takes),
one documentation text, its default as documented, and the constructs that take it (its takers). An
``Options`` model is what a construct's docstring (``documented``), its type checks and its value checks
(``Validation``) and the reference table of the site (docs/hooks.py) are all made from, so that an
option is written once. The models themselves live beside the classes their kinds name
(``guard.guard_options.GUARD_MODEL``, ``workflow_options.WORKFLOW_MODEL``, ...): this layer imports none of them.

The kinds and the type check are ``option_kinds``; a ``Validation`` runs that check on every option, then
the construct's value checks on every option whose type is right, and raises every problem at once.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import textwrap
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from constructs import IConstruct

from ..errors import Problems
from .option_kinds import Kind, wrong_types


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
