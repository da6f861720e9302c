"""AWS quotas that CloudFormation and the services enforce only at deploy or run time, checked when the app
synthesizes: a CDK validation plugin (``Validations.of(app).add_plugins``) that reads each template as
written and reports an error (synth fails) or a warning, with the quota, its source and the fix.

``check_app`` registers it once per app, when one of the library's constructs is created; ``QUOTAS``
lists every quota a template of this library can reach and where it is checked (docs/reference/quotas.md).
A value CloudFormation resolves at deploy (a reference, a pseudo parameter) is counted at its longest
(``references``).
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import jsii
from constructs import IConstruct

from .._readers.asl import all_states
from .._readers.assembly import state_machine_definitions
from ..lambda_src import schema
from . import references
from .names import VENDED_LOGS_PREFIX

# CloudFormation: "CloudFormation quotas" (cloudformation-limits.html).
TEMPLATE_MAX_BYTES = 1_000_000  # a template body in an S3 object, as `cdk deploy` uploads it
MAX_RESOURCES = 500
MAX_MAPPINGS = 200
MAX_MAPPING_ATTRIBUTES = 200
MAX_PARAMETERS = 200
MAX_OUTPUTS = 200
# IAM: "IAM and AWS STS quotas" (reference_iam-quotas.html); whitespace is not counted.
ROLE_INLINE_POLICY_CHARACTERS = 10_240  # all of a role's inline policies together
MANAGED_POLICY_CHARACTERS = 6_144
MANAGED_POLICIES_PER_ROLE = 10  # adjustable up to 20: a warning
# CloudWatch Logs: "CloudWatch Logs quotas" (cloudwatch_limits_cwl.html); cfn-lint E3033.
FILTER_PATTERN_CHARACTERS = 1_024
# Step Functions: "Step Functions service quotas" (limits-overview.html).
DEFINITION_MAX_BYTES = 1_048_576
EXPRESS_MAX_SECONDS = 300  # the longest an Express execution runs ("Standard and Express workflows")
# The share of its execution's limit a waiting duplicate may spend waiting (IdempotentStateMachine's default).
WAIT_SHARE = 0.8


@dataclass(frozen=True)
class Quota:
    """A quota the check reports under ``rule`` (acknowledged as ``idempotent-constructs::{rule}``)."""

    rule: str
    what: str
    limit: str
    source: str
    severity: str  # "error" or "warning"


QUOTAS = [
    Quota("template-size", "template size", "1,000,000 bytes (through S3)", "CloudFormation quotas", "error"),
    Quota("resources", "resources in a stack", "500", "CloudFormation quotas (the CDK checks it first)", "error"),
    Quota("mappings", "mappings, and attributes of one", "200 each", "CloudFormation quotas", "error"),
    Quota("parameters-outputs", "parameters, outputs", "200 each", "CloudFormation quotas", "error"),
    Quota("role-inline-policy-size", "a role's inline policies, together", "10,240 characters", "IAM quotas", "error"),
    Quota("managed-policy-size", "a customer managed policy", "6,144 characters", "IAM quotas", "error"),
    Quota("managed-policies-per-role", "managed policies attached to a role", "10 (adjustable to 20)", "IAM quotas", "warning"),
    Quota("filter-pattern-length", "a metric filter's pattern", "1,024 characters", "CloudWatch Logs quotas", "error"),
    Quota(
        "log-resource-policy",
        "the account's CloudWatch Logs resource policy, which grows with each state machine log group outside /aws/vendedlogs/",
        "5,120 characters per account and Region",
        "Step Functions guide: Avoiding CloudWatch Logs resource policy size restrictions",
        "warning",
    ),
    Quota("definition-size", "a state machine's definition", "1 MB", "Step Functions quotas", "error"),
    Quota(
        "waiting-schedule",
        "a duplicate's waiting schedule against its execution's limit (Express 300 s, or the timeout)",
        f"{WAIT_SHARE:.0%} of the limit",
        "Step Functions quotas (Express duration); this library's margin",
        "error",  # past the limit itself; past the margin only, a warning (Finding.severity)
    ),
]
_BY_RULE = {quota.rule: quota for quota in QUOTAS}


@dataclass(frozen=True)
class Finding:
    rule: str
    description: str
    fix: str
    logical_id: str | None = None  # None: the stack as a whole
    severity: str | None = None  # None: the quota's


def check_template(
    template: dict[str, Any], size: int, directory: Path | None = None, stack_name: str | None = None
) -> list[Finding]:
    """What of ``template`` (``size`` bytes as written, in the cloud assembly ``directory``, where the
    definitions stored as assets are; deployed as ``stack_name``, or under any name) AWS would refuse or
    fail for a quota. A part the checks cannot read (written as an intrinsic function, such as ``Fn::If``)
    is left to AWS."""
    resources = template.get("Resources", {})
    found = list(_guarded(_template_findings, template, size))
    for logical_id, resource in resources.items() if isinstance(resources, dict) else ():
        found += _guarded(_resource_findings, template, logical_id, resource, directory, stack_name)
    found += _guarded(_inline_policy_findings, resources, stack_name)
    return found


def severity(finding: Finding) -> str:
    """``error`` (AWS refuses or fails it) or ``warning``: the finding's own, else its quota's."""
    return finding.severity or _BY_RULE[finding.rule].severity


def _guarded(check: Any, *arguments: Any) -> list[Finding]:
    try:
        return list(check(*arguments))
    except (AttributeError, IndexError, KeyError, TypeError, ValueError):
        return []


def _resource_findings(
    template: dict[str, Any], logical_id: str, resource: dict[str, Any], directory: Path | None, stack_name: str | None
) -> Iterator[Finding]:
    kind, properties = resource.get("Type"), resource.get("Properties", {})
    if kind == "AWS::IAM::Role":
        yield from _managed_policies_findings(logical_id, properties)
    elif kind == "AWS::IAM::ManagedPolicy":
        yield from _managed_policy_findings(logical_id, properties, template["Resources"], stack_name)
    elif kind == "AWS::Logs::MetricFilter":
        yield from _filter_findings(logical_id, properties)
    elif kind == "AWS::StepFunctions::StateMachine":
        yield from _log_group_findings(template["Resources"], logical_id, properties)
        yield from _definition_findings(template, logical_id, properties, directory)


def _template_findings(template: dict[str, Any], size: int) -> Iterator[Finding]:
    split = (
        "put the workflows' definitions in S3 (definition_location=DefinitionLocation.ASSET) or spread the workflows over stacks"
    )
    if size > TEMPLATE_MAX_BYTES:
        yield Finding(
            "template-size", f"the template is {size:,} bytes; CloudFormation takes at most {TEMPLATE_MAX_BYTES:,}", split
        )
    resources = len(template.get("Resources", {}))
    if resources > MAX_RESOURCES:
        yield Finding("resources", f"the stack has {resources} resources; CloudFormation takes at most {MAX_RESOURCES}", split)
    mappings = template.get("Mappings", {})
    if len(mappings) > MAX_MAPPINGS:
        yield Finding(
            "mappings", f"the template has {len(mappings)} mappings; CloudFormation takes at most {MAX_MAPPINGS}", split
        )
    for name, mapping in mappings.items():
        if len(mapping) > MAX_MAPPING_ATTRIBUTES:
            yield Finding(
                "mappings",
                f"the mapping {name} has {len(mapping)} attributes; CloudFormation takes at most {MAX_MAPPING_ATTRIBUTES}",
                split,
            )
    for section in ("Parameters", "Outputs"):
        count = len(template.get(section, {}))
        if count > MAX_PARAMETERS:
            yield Finding(
                "parameters-outputs",
                f"the template has {count} {section.lower()}; CloudFormation takes at most {MAX_PARAMETERS}",
                "spread the stack's resources over stacks",
            )


def policy_characters(document: Any, resources: dict[str, Any] | None = None, stack_name: str | None = None) -> int:
    """The characters IAM counts in a policy document (no whitespace), each deploy-time value at its
    longest (``references``: a reference to one of ``resources`` under ``stack_name``, or any name)."""
    resolved = references.longest(document, resources or {}, stack_name)
    return len("".join(json.dumps(resolved, separators=(",", ":")).split()))


def _managed_policies_findings(logical_id: str, properties: dict[str, Any]) -> Iterator[Finding]:
    attached = properties.get("ManagedPolicyArns", [])
    if isinstance(attached, list) and len(attached) > MANAGED_POLICIES_PER_ROLE:
        yield Finding(
            "managed-policies-per-role",
            f"the role has {len(attached)} managed policies; IAM attaches {MANAGED_POLICIES_PER_ROLE} unless the quota is raised (20 at most)",
            "raise the quota in Service Quotas, or merge policies",
            logical_id,
        )


def _managed_policy_findings(
    logical_id: str, properties: dict[str, Any], resources: dict[str, Any], stack_name: str | None
) -> Iterator[Finding]:
    characters = policy_characters(properties["PolicyDocument"], resources, stack_name)
    if characters > MANAGED_POLICY_CHARACTERS:
        yield Finding(
            "managed-policy-size",
            f"the managed policy takes about {characters:,} characters; IAM takes at most {MANAGED_POLICY_CHARACTERS:,}",
            "split it into several policies",
            logical_id,
        )


def _inline_policy_findings(resources: dict[str, Any], stack_name: str | None) -> Iterator[Finding]:
    """Each role's inline policies (its own ``Policies`` and the ``AWS::IAM::Policy`` attached to it by ``Ref``) together."""
    inline: dict[str, int] = {}
    for logical_id, resource in resources.items():
        properties = resource.get("Properties", {})
        if resource.get("Type") == "AWS::IAM::Role":
            inline[logical_id] = inline.get(logical_id, 0) + sum(
                _guarded_size(policy, resources, stack_name) for policy in _listed(properties.get("Policies"))
            )
        elif resource.get("Type") == "AWS::IAM::Policy":
            characters = _guarded_size(properties, resources, stack_name)
            for role in _listed(properties.get("Roles")):
                if isinstance(role, dict) and isinstance(role.get("Ref"), str):
                    inline[role["Ref"]] = inline.get(role["Ref"], 0) + characters
    for logical_id, characters in inline.items():
        if characters > ROLE_INLINE_POLICY_CHARACTERS and logical_id in resources:
            yield Finding(
                "role-inline-policy-size",
                f"the role's inline policies take about {characters:,} characters; IAM takes at most "
                f"{ROLE_INLINE_POLICY_CHARACTERS:,} a role (whitespace not counted, references at their longest)",
                "give the workflows shorter namespaces or fewer guarded states, or pass a role of your own with managed policies",
                logical_id,
            )


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _guarded_size(holder: Any, resources: dict[str, Any], stack_name: str | None) -> int:
    try:
        return policy_characters(holder["PolicyDocument"], resources, stack_name)
    except (KeyError, TypeError):
        return 0


def _filter_findings(logical_id: str, properties: dict[str, Any]) -> Iterator[Finding]:
    pattern = properties.get("FilterPattern")
    if isinstance(pattern, str) and len(pattern) > FILTER_PATTERN_CHARACTERS:
        yield Finding(
            "filter-pattern-length",
            f"the filter pattern is {len(pattern):,} characters; CloudWatch Logs takes at most {FILTER_PATTERN_CHARACTERS:,}",
            "split it over several metric filters",
            logical_id,
        )


def _log_group_findings(resources: dict[str, Any], logical_id: str, properties: dict[str, Any]) -> Iterator[Finding]:
    for destination in _listed(properties.get("LoggingConfiguration", {}).get("Destinations")):
        name = _log_group_name(resources, destination.get("CloudWatchLogsLogGroup", {}).get("LogGroupArn"))
        if name is not None and not name.startswith(VENDED_LOGS_PREFIX):
            yield Finding(
                "log-resource-policy",
                f"the state machine logs to {name!r}, outside {VENDED_LOGS_PREFIX}: Step Functions adds each such log group to "
                "the account's CloudWatch Logs resource policy (5,120 characters per account and Region), and once it is full "
                "CreateStateMachine fails with InvalidLoggingConfiguration",
                f"name the log group under {VENDED_LOGS_PREFIX}states/ (IdempotentStateMachine's default log group is)",
                logical_id,
            )


def _log_group_name(resources: dict[str, Any], arn: Any) -> str | None:
    """The name of the log group an ARN points to, ``"(a generated name)"`` if CloudFormation makes it up,
    ``None`` if it cannot be told at synth."""
    if isinstance(arn, str):
        return arn.split(":log-group:", 1)[-1].removesuffix(":*")
    if isinstance(arn, dict) and "Fn::GetAtt" in arn:
        group = resources.get(arn["Fn::GetAtt"][0], {})
        if group.get("Type") == "AWS::Logs::LogGroup":
            name = group.get("Properties", {}).get("LogGroupName")
            if name is None:
                return "(a name CloudFormation generates)"
            if isinstance(name, dict) and "Fn::Join" in name:
                parts = name["Fn::Join"][1]
                return parts[0] if parts and isinstance(parts[0], str) else None
            return name if isinstance(name, str) else None
    return None


def _definition_findings(
    template: dict[str, Any], logical_id: str, properties: dict[str, Any], directory: Path | None
) -> Iterator[Finding]:
    definition = _definition(template, logical_id, properties, directory)
    if definition is None:
        return  # a definition built in ways the reader does not follow: checked by Step Functions only
    size = len(json.dumps(definition, separators=(",", ":")).encode())
    if size > DEFINITION_MAX_BYTES:
        yield Finding(
            "definition-size",
            f"the definition is about {size:,} bytes; Step Functions takes at most {DEFINITION_MAX_BYTES:,}",
            "move states into a state machine of their own (a nested workflow)",
            logical_id,
        )
    limit = definition.get("TimeoutSeconds")
    if properties.get("StateMachineType") == "EXPRESS":
        limit = min(limit, EXPRESS_MAX_SECONDS) if isinstance(limit, int) else EXPRESS_MAX_SECONDS
    if not isinstance(limit, int):
        return
    margin = int(limit * WAIT_SHARE)
    for guard, waited in waiting_schedules(definition):
        if waited > margin:
            ends = "ends in" if waited >= limit else "risks ending in"
            yield Finding(
                "waiting-schedule",
                f"a duplicate waiting in {guard} may wait {waited} s, and its execution may run {limit} s: it {ends} "
                f"States.Timeout, not {schema.IN_FLIGHT}",
                f"give that guard a max_wait of at most {margin} seconds ({WAIT_SHARE:.0%} of the run), or a longer timeout",
                logical_id,
                severity="error" if waited >= limit else "warning",
            )


def _definition(template: dict[str, Any], logical_id: str, properties: dict[str, Any], directory: Path | None) -> Any:
    """The state machine's definition as Step Functions gets it: from ``DefinitionString``, or from its
    asset file in ``directory`` (``DefinitionS3Location``: its key, or a path relative to ``directory`` as
    ``aws cloudformation package`` reads it), with its substitutions made; None if unreadable."""
    if "DefinitionString" not in properties:
        location = properties.get("DefinitionS3Location", {})
        key = location if isinstance(location, str) else f"asset.{location.get('Key')}"
        asset = directory / key if directory is not None else None
        if asset is None or not asset.is_file():
            return None
        properties = {**properties, "DefinitionString": asset.read_text()}
    single = {"Resources": {logical_id: {"Type": "AWS::StepFunctions::StateMachine", "Properties": properties}}}
    try:
        return next(iter(state_machine_definitions({**single, "Mappings": template.get("Mappings", {})}).values()))
    except (AttributeError, KeyError, TypeError, ValueError):
        return None


def waiting_schedules(definition: dict[str, Any]) -> list[tuple[str, int]]:
    """``(state, seconds)`` for each guard's poll loop in a definition: the state retried on
    ``Idempotency.StillInFlight``, and how long a duplicate waits there in all, its first wait (the Wait
    state before it) included, as Step Functions runs the retrier."""
    states = {name: state for name, _, state in all_states(definition, "")}
    found = []
    for name, state in states.items():
        for retry in state.get("Retry", []):
            if schema.STILL_IN_FLIGHT in retry.get("ErrorEquals", []):
                first = next(
                    (s.get("Seconds", 0) for s in states.values() if s.get("Type") == "Wait" and s.get("Next") == name), 0
                )
                interval, backoff = retry.get("IntervalSeconds", 1), retry.get("BackoffRate", 2.0)
                attempts, ceiling = retry.get("MaxAttempts", 3), retry.get("MaxDelaySeconds")
                numbers = (first, interval, backoff, attempts, ceiling or 0)
                if not all(isinstance(number, int | float) for number in numbers):
                    continue  # a JSONata expression ("{% ... %}"): known only when it runs
                delays = [interval * backoff**attempt for attempt in range(int(attempts))]
                found.append((name, int(first + sum(min(delay, ceiling) if ceiling else delay for delay in delays))))
    return found


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
                    description=f"{named}{finding.description} ({_BY_RULE[finding.rule].source})",
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
