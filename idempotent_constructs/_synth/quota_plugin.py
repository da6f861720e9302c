"""The quota check at synth: a CDK validation plugin (``Validations.of(app).add_plugins``) that reads each
template of the app as written, nested stacks' too, and reports each ``quota_checks`` finding as a policy
violation (an error fails the synth, a warning is printed), with the quota, its source and the fix.

``check_app`` registers it once per app, when one of the library's constructs is created. It reads the
quotas (``quotas``) and runs the checks (``quota_checks``); of the app it touches only its stacks.
"""

from __future__ import annotations

import json
import weakref
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import jsii
from constructs import IConstruct

from .quota_checks import check_template
from .quotas import BY_RULE, QUOTAS, severity


@jsii.implements(cdk.IPolicyValidationPlugin)
class QuotaCheck:
    """The validation plugin: each template's ``check_template`` findings, errors failing the synth."""

    @property
    def name(self) -> str:
        return "idempotent-constructs"

    @property
    def rule_ids(self) -> list[str]:
        return [quota.rule for quota in QUOTAS]

    @property
    def version(self) -> str:
        return "1.0.0"

    def __init__(self, app: IConstruct) -> None:
        self._app = app

    def validate(self, context: cdk.IPolicyValidationContext) -> cdk.PolicyValidationPluginReport:
        stacks = {stack.template_file: stack for stack in _stacks(self._app)}
        violations = []
        for template_path in context.template_paths:
            directory = Path(template_path).parent
            violations += self._violations(Path(template_path), stacks.get(Path(template_path).name), directory, nested=False)
        # The CDK hands the plugin the top-level templates only: a nested stack's is beside them.
        for stack in stacks.values():
            path = directory / stack.template_file if context.template_paths else None
            if stack.nested and path is not None and path.is_file():
                violations += self._violations(path, stack, directory, nested=True)
        errors = any(violation.severity == "error" for violation in violations)
        return cdk.PolicyValidationPluginReport(success=not errors, violations=violations)

    def _violations(self, path: Path, stack: Any, directory: Path, *, nested: bool) -> list[cdk.PolicyViolation]:
        violations = []
        name = stack.stack_name if stack is not None and not cdk.Token.is_unresolved(stack.stack_name) else None
        for finding in check_template(json.loads(path.read_text()), path.stat().st_size, directory, name):
            if finding.logical_id is not None and not nested:
                where = cdk.PolicyViolatingResource(
                    locations=["Properties"], resource_logical_id=finding.logical_id, template_path=str(path)
                )
            else:  # the stack as a whole, or a resource of a nested stack (named in the description)
                at = f"{stack.node.path if stack else path.stem}"
                where = cdk.PolicyViolatingResource(locations=[finding.logical_id or "/"], construct_path=at)
            named = f"{finding.logical_id}: " if nested and finding.logical_id else ""
            violations.append(
                cdk.PolicyViolation(
                    rule_name=finding.rule,
                    description=f"{named}{finding.description} ({BY_RULE[finding.rule].source})",
                    fix=finding.fix,
                    severity=severity(finding),
                    violating_resources=[where],
                )
            )
        return violations


def _stacks(app: IConstruct) -> list[Any]:
    return [node for node in app.node.find_all() if isinstance(node, cdk.Stack)]


_REGISTERED: weakref.WeakSet[IConstruct] = weakref.WeakSet()


def check_app(scope: IConstruct) -> None:
    """Check the quotas of every template of the app of ``scope`` when it synthesizes (once per app)."""
    app = cdk.Stage.of(scope) or scope.node.root
    if app not in _REGISTERED:
        _REGISTERED.add(app)
        cdk.Validations.of(app).add_plugins(QuotaCheck(app))
