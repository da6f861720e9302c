"""Helpers for construct tests: build a stack, get its template and state machine definitions."""

from __future__ import annotations

from typing import Any, Callable

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
    return list(state_machine_definitions(tpl.to_json()).values())


def only_definition(tpl: Template) -> dict[str, Any]:
    (definition,) = definitions(tpl)
    return definition


def resources(tpl: Template, resource_type: str) -> dict[str, Any]:
    return tpl.find_resources(resource_type)
