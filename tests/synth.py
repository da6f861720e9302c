"""Helpers for construct tests: build a stack, get its template and state machine definitions."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable
from typing import Any

from aws_cdk import App, Stack
from aws_cdk.assertions import Template

from idempotent_constructs.testing import state_machine_definitions


def stack() -> Stack:
    return Stack(App(), "Test")


def template(build: Callable[[Stack], Any]) -> Template:
    target = stack()
    build(target)
    return Template.from_stack(target)


def definitions(tpl: Template) -> list[dict[str, Any]]:
    return list(state_machine_definitions(dict(tpl.to_json())).values())


def only_definition(tpl: Template) -> dict[str, Any]:
    (definition,) = definitions(tpl)
    return definition


def resources(tpl: Template, resource_type: str) -> dict[str, Any]:
    return dict(tpl.find_resources(resource_type))


def allows(statements: list[dict[str, Any]], action: str, resource: Any, leading_key: str) -> bool:
    """Whether IAM would allow ``action`` on ``resource`` for an item whose partition key is
    ``leading_key``, given a role's synthesized policy statements (Allow/Deny, Action, Resource and
    ``StringLike``/``StringEquals`` conditions on ``dynamodb:LeadingKeys``: what these policies use).
    Any other condition key makes the statement count as not matching, so the answer errs on "denied"
    for Allow statements and is checked explicitly for Deny ones."""

    def listed(value: Any) -> list[Any]:
        return value if isinstance(value, list) else [value]

    def conditions_hold(conditions: dict[str, Any]) -> bool:
        for operator, tests in conditions.items():
            for key, patterns in tests.items():
                if key != "dynamodb:LeadingKeys":
                    return False
                if operator.endswith("StringLike"):
                    matched = any(fnmatch.fnmatchcase(leading_key, pattern) for pattern in listed(patterns))
                elif operator.endswith("StringEquals"):
                    matched = leading_key in listed(patterns)
                else:
                    return False
                if not matched:
                    return False
        return True

    def matches(statement: dict[str, Any]) -> bool:
        actions = listed(statement.get("Action", []))
        return (
            any(fnmatch.fnmatchcase(action, pattern) for pattern in actions)
            and any(candidate in ("*", resource) for candidate in listed(statement.get("Resource", [])))
            and conditions_hold(statement.get("Condition", {}))
        )

    applicable = [statement for statement in statements if matches(statement)]
    return any(s["Effect"] == "Allow" for s in applicable) and not any(s["Effect"] == "Deny" for s in applicable)


def role_statements(tpl: Template | dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """The policy statements of the roles whose logical id starts with ``prefix``: their inline policies
    (the library's roles hold theirs there) and the ``AWS::IAM::Policy`` resources attached to them."""
    found = tpl if isinstance(tpl, dict) else dict(tpl.to_json())
    roles = {lid for lid, r in found["Resources"].items() if r["Type"] == "AWS::IAM::Role" and lid.startswith(prefix)}
    statements = []
    for logical_id, resource in found["Resources"].items():
        properties = resource.get("Properties", {})
        if logical_id in roles:
            statements += [s for policy in properties.get("Policies", []) for s in policy["PolicyDocument"]["Statement"]]
        elif resource["Type"] == "AWS::IAM::Policy" and any(role.get("Ref") in roles for role in properties["Roles"]):
            statements += properties["PolicyDocument"]["Statement"]
    return statements


def filter_pattern_entries(pattern: str) -> set[tuple[str, str]]:
    """The ``(event type, state name)`` pairs an outcome metric filter pattern matches: its groups, one per
    event type, ``($.type = "TaskStateEntered" && ($.details.name = "A" || $.details.name = "B"))``."""
    found = set()
    group = r'\(\$\.type = "(\w+)" && \(?((?:\$\.details\.name = "[^"]+"(?: \|\| )?)+)\)?\)'
    for event, names in re.findall(group, pattern):
        found |= {(event, name) for name in re.findall(r'"([^"]+)"', names)}
    return found


def matches(pattern: str, event: str, state: str) -> bool:
    """Whether a filter pattern of ``filter_pattern_entries``' form matches the entry of ``state`` logged as
    ``event``: a name in it that ends in ``*`` matches every name that starts with what precedes it, as
    CloudWatch Logs matches a quoted JSON value with a wildcard."""
    return any(
        kind == event and (name == state or (name.endswith("*") and state.startswith(name[:-1])))
        for kind, name in filter_pattern_entries(pattern)
    )
