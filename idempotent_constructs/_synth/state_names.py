"""State names as Step Functions needs them in a whole state machine, checked at synth (B21).

Every state name of a state machine must differ, in its Parallel branches and Map processors too, and
be at most 80 characters; ``CreateStateMachine`` refuses the definition otherwise (``asl-validator``'s
``DUPLICATE_STATE_NAMES``). The CDK checks the names of its own states, but not those inside a
document (an ``AslFragment``, a ``definition_body``), which it sees as one state: two documents with a
``Notify`` each, or a document's state named as one of the user's, would synthesize and fail at deploy.

``IdempotentStateMachine`` checks its rendered definition (``checked_at_creation``) when it is created. Any other
state machine of the app that holds a document or a guard (``sfn.StateMachine`` around an
``AslFragment``) is checked once the app is built (``check_app``), from the definition the CDK writes.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Callable
from typing import Any

import aws_cdk as cdk
import jsii
from aws_cdk import aws_stepfunctions as sfn
from constructs import IConstruct, IValidation

from .._readers.asl import all_states

MAX_LENGTH = 80
LOST = ".LeaseLost"  # the name of an ExtendLease state's Fail state: the extend state's, then this


def problems(definition: dict[str, Any]) -> list[str]:
    """What Step Functions would refuse in the state names of a state machine's ``definition``: each name
    used twice, with both places, and each name over 80 characters."""
    seen: dict[str, str] = {}
    found = []
    for name, where, _ in all_states(definition, ""):
        if len(name) > MAX_LENGTH:
            found.append(
                f"the state name {name!r} at {where} is {len(name)} characters, more than Step Functions' "
                f"{MAX_LENGTH}; shorten it (a guard's states: pass a shorter state_name_prefix)"
            )
        if name in seen:
            found.append(
                f"the state name {name!r} is used at {seen[name]} and at {where}; Step Functions needs every "
                "state name of a state machine to differ, in its branches and Map processors too: rename one in its "
                "document, or pass AslFragment(state_name=...) or a guard's state_name_prefix=..."
            )
        else:
            seen[name] = where
    return found


def check_app(
    scope: IConstruct,
    also: Callable[[dict[str, Any]], list[str]] | None = None,
    notes: Callable[[dict[str, Any], bool], list[str]] | None = None,
) -> None:
    """Check, once the app of ``scope`` is built, the state names of each of its state machines (a
    document or a guard in a state machine the library does not create); and ``also``, a check of every
    definition of the app (the guards' ``placement``), as the CDK writes it; ``notes`` (of a definition, and
    whether its state machine is Express) are told as notes on the state machine (the guards' ``history``)."""
    app = cdk.Stage.of(scope) or scope.node.root
    if app not in _CHECKS:
        _CHECKS[app] = check = _AppCheck(app)
        app.node.add_validation(check)
    if also is not None and also not in _CHECKS[app].also:
        _CHECKS[app].also.append(also)
    if notes is not None and notes not in _CHECKS[app].notes:
        _CHECKS[app].notes.append(notes)


@jsii.implements(IValidation)
class _AppCheck:
    def __init__(self, app: IConstruct) -> None:
        self.app = app
        self.also: list[Callable[[dict[str, Any]], list[str]]] = []
        self.notes: list[Callable[[dict[str, Any], bool], list[str]]] = []

    def validate(self) -> list[str]:
        found: list[str] = []
        for node in self.app.node.find_all():
            # A workflow checked as it was created (its names and its guards' placement) is not read again.
            if (
                isinstance(node, sfn.CfnStateMachine)
                and not _checked_at_creation(node)
                and (definition := definition_of(node)) is not None
            ):
                machine = (node.node.scope or node).node.path
                found.extend(f"{machine}: {problem}" for check in (problems, *self.also) for problem in check(definition))
                express = node.state_machine_type == "EXPRESS"
                for note in (note for told in self.notes for note in told(definition, express)):
                    cdk.Annotations.of(node.node.scope or node).add_info(note)
        return found


_CHECKS: weakref.WeakKeyDictionary[IConstruct, _AppCheck] = weakref.WeakKeyDictionary()


# The workflows whose state machine was checked when it was created (checked_at_creation), which the
# app's check leaves out.
_CHECKED_AT_CREATION: weakref.WeakSet[IConstruct] = weakref.WeakSet()


def checked_at_creation(workflow: IConstruct, definition: dict[str, Any]) -> list[str]:
    """The ``problems`` of the definition ``workflow`` renders for its state machine, checked as it is
    created; the app's check then leaves that state machine out."""
    _CHECKED_AT_CREATION.add(workflow)
    return problems(definition)


def _checked_at_creation(node: sfn.CfnStateMachine) -> bool:
    scope = node.node.scope
    return scope is not None and scope.node.scope in _CHECKED_AT_CREATION


def definition_of(node: sfn.CfnStateMachine) -> dict[str, Any] | None:
    """The definition the CDK writes for ``node``, each reference (a function's ARN, ...) as a placeholder;
    ``None`` where it is not JSON text in the template (an S3 location, a token that is not text)."""
    resolved = cdk.Stack.of(node).resolve(node.definition_string)
    if isinstance(resolved, dict) and list(resolved) == ["Fn::Join"] and resolved["Fn::Join"][0] == "":
        resolved = "".join(part if isinstance(part, str) else "reference" for part in resolved["Fn::Join"][1])
    if not isinstance(resolved, str):
        return None
    try:
        definition = json.loads(resolved)
    except ValueError:
        return None
    return definition if isinstance(definition, dict) else None
