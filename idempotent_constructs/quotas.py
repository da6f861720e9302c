"""AWS quotas that CloudFormation and the services enforce only at deploy or run time, checked when the app
synthesizes: a CDK validation plugin (``Validations.of(app).add_plugins``) that reads each template as
written and reports an error (synth fails) or a warning, with the quota, its source and the fix.

``check_app`` registers it once per app, when one of the library's constructs is created; ``QUOTAS``
lists every quota a template of this library can reach and where it is checked (the README's table).
A value CloudFormation resolves at deploy (a reference, a pseudo parameter) is counted at an estimate:
``ESTIMATE`` characters, or a pseudo parameter's longest value.
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

from .asl import all_states
from .assembly import state_machine_definitions
from .lambda_src import schema
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
EXPRESS_MAX_SECONDS = 300
# The share of its execution's limit a waiting duplicate may spend waiting (IdempotentStateMachine's default).
WAIT_SHARE = 0.8

ESTIMATE = 128  # characters of a value CloudFormation resolves at deploy (an ARN with a generated name)
PSEUDO = {
    "AWS::Partition": "aws-us-gov",
    "AWS::Region": "ap-southeast-2",
    "AWS::AccountId": "123456789012",
    "AWS::URLSuffix": "amazonaws.com.cn",
}


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
        "error",
    ),
]
_BY_RULE = {quota.rule: quota for quota in QUOTAS}


@dataclass(frozen=True)
class Finding:
    rule: str
    description: str
    fix: str
    logical_id: str | None = None  # None: the stack as a whole


def check_template(template: dict[str, Any], size: int) -> list[Finding]:
    """What of ``template`` (``size`` bytes as written) AWS would refuse or fail for a quota."""
    resources: dict[str, Any] = template.get("Resources", {})
    return [
        *_template_findings(template, size),
        *_policy_findings(resources),
        *_filter_findings(resources),
        *_log_group_findings(resources),
        *_definition_findings(template),
    ]


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


def policy_characters(document: Any) -> int:
    """The characters IAM counts in a policy document (no whitespace), each deploy-time value at its estimate."""
    return len("".join(json.dumps(_estimated(document), separators=(",", ":")).split()))


def _estimated(value: Any) -> Any:
    if isinstance(value, list):
        return [_estimated(item) for item in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        ((function, argument),) = value.items()
        if function == "Ref":
            return PSEUDO.get(argument, "x" * ESTIMATE)
        if function == "Fn::Join":
            separator, parts = argument
            return separator.join(str(_estimated(part)) for part in parts)
        if function.startswith("Fn::"):
            return "x" * ESTIMATE
    return {key: _estimated(item) for key, item in value.items()}


def _policy_findings(resources: dict[str, Any]) -> Iterator[Finding]:
    inline: dict[str, int] = {}
    for logical_id, resource in resources.items():
        properties = resource.get("Properties", {})
        if resource["Type"] == "AWS::IAM::Role":
            inline[logical_id] = inline.get(logical_id, 0) + sum(
                policy_characters(policy["PolicyDocument"]) for policy in properties.get("Policies", [])
            )
            attached = properties.get("ManagedPolicyArns", [])
            if len(attached) > MANAGED_POLICIES_PER_ROLE:
                yield Finding(
                    "managed-policies-per-role",
                    f"the role has {len(attached)} managed policies; IAM attaches {MANAGED_POLICIES_PER_ROLE} unless the quota is raised (20 at most)",
                    "raise the quota in Service Quotas, or merge policies",
                    logical_id,
                )
        elif resource["Type"] == "AWS::IAM::Policy":
            characters = policy_characters(properties.get("PolicyDocument"))
            for role in properties.get("Roles", []):
                if isinstance(role, dict) and "Ref" in role:
                    inline[role["Ref"]] = inline.get(role["Ref"], 0) + characters
        elif resource["Type"] == "AWS::IAM::ManagedPolicy":
            characters = policy_characters(properties.get("PolicyDocument"))
            if characters > MANAGED_POLICY_CHARACTERS:
                yield Finding(
                    "managed-policy-size",
                    f"the managed policy takes about {characters:,} characters; IAM takes at most {MANAGED_POLICY_CHARACTERS:,}",
                    "split it into several policies",
                    logical_id,
                )
    for logical_id, characters in inline.items():
        if characters > ROLE_INLINE_POLICY_CHARACTERS and logical_id in resources:
            yield Finding(
                "role-inline-policy-size",
                f"the role's inline policies take about {characters:,} characters; IAM takes at most "
                f"{ROLE_INLINE_POLICY_CHARACTERS:,} a role (whitespace not counted, references at {ESTIMATE} each)",
                "give the workflows shorter namespaces or fewer guarded states, or pass a role of your own with managed policies",
                logical_id,
            )


def _filter_findings(resources: dict[str, Any]) -> Iterator[Finding]:
    for logical_id, resource in resources.items():
        pattern = resource.get("Properties", {}).get("FilterPattern")
        if (
            resource["Type"] == "AWS::Logs::MetricFilter"
            and isinstance(pattern, str)
            and len(pattern) > FILTER_PATTERN_CHARACTERS
        ):
            yield Finding(
                "filter-pattern-length",
                f"the filter pattern is {len(pattern):,} characters; CloudWatch Logs takes at most {FILTER_PATTERN_CHARACTERS:,}",
                "split it over several metric filters",
                logical_id,
            )


def _log_group_findings(resources: dict[str, Any]) -> Iterator[Finding]:
    for logical_id, resource in resources.items():
        if resource["Type"] != "AWS::StepFunctions::StateMachine":
            continue
        logging = resource.get("Properties", {}).get("LoggingConfiguration", {})
        for destination in logging.get("Destinations", []):
            arn = destination.get("CloudWatchLogsLogGroup", {}).get("LogGroupArn")
            name = _log_group_name(resources, arn)
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


def _definition_findings(template: dict[str, Any]) -> Iterator[Finding]:
    resources = template.get("Resources", {})
    readable = {
        logical_id: {"Resources": {logical_id: resource}, "Mappings": template.get("Mappings", {})}
        for logical_id, resource in resources.items()
        if resource["Type"] == "AWS::StepFunctions::StateMachine" and "DefinitionString" in resource.get("Properties", {})
    }
    for logical_id, single in readable.items():
        try:
            (definition,) = state_machine_definitions(single).values()
        except (ValueError, KeyError, TypeError):
            continue  # a definition built in ways the reader does not follow: checked by Step Functions only
        size = len(json.dumps(definition, separators=(",", ":")).encode())
        if size > DEFINITION_MAX_BYTES:
            yield Finding(
                "definition-size",
                f"the definition is about {size:,} bytes; Step Functions takes at most {DEFINITION_MAX_BYTES:,}",
                "move states into a state machine of their own (a nested workflow)",
                logical_id,
            )
        properties = resources[logical_id]["Properties"]
        express = properties.get("StateMachineType") == "EXPRESS"
        limit = definition.get("TimeoutSeconds", EXPRESS_MAX_SECONDS if express else None)
        if not isinstance(limit, int):
            continue
        for guard, waited in waiting_schedules(definition):
            if waited > limit * WAIT_SHARE:
                yield Finding(
                    "waiting-schedule",
                    f"a duplicate waiting in {guard} may wait {waited} s, and its execution may run {limit} s: past "
                    f"{int(limit * WAIT_SHARE)} s ({WAIT_SHARE:.0%}) it risks ending in States.Timeout, not {schema.IN_FLIGHT}",
                    f"give that guard a max_wait of at most {int(limit * WAIT_SHARE)} seconds, or a longer timeout",
                    logical_id,
                )


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
                delays = [interval * backoff**attempt for attempt in range(attempts)]
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
            path = Path(template_path)
            stack = stacks.get(path.name)
            for finding in check_template(json.loads(path.read_text()), path.stat().st_size):
                where = (
                    cdk.PolicyViolatingResource(
                        locations=["Properties"], resource_logical_id=finding.logical_id, template_path=template_path
                    )
                    if finding.logical_id is not None
                    else cdk.PolicyViolatingResource(locations=["/"], construct_path=stack.node.path if stack else path.stem)
                )
                quota = _BY_RULE[finding.rule]
                violations.append(
                    cdk.PolicyViolation(
                        rule_name=finding.rule,
                        description=f"{finding.description} ({quota.source})",
                        fix=finding.fix,
                        severity=quota.severity,
                        violating_resources=[where],
                    )
                )
        errors = any(_BY_RULE[violation.rule_name].severity == "error" for violation in violations)
        return cdk.PolicyValidationPluginReport(success=not errors, violations=violations)


def _stacks(app: IConstruct) -> list[Any]:
    return [node for node in app.node.find_all() if isinstance(node, cdk.Stack)]


_REGISTERED: weakref.WeakSet[IConstruct] = weakref.WeakSet()


def check_app(scope: IConstruct) -> None:
    """Check the quotas of every template of the app of ``scope`` when it synthesizes (once per app)."""
    app = cdk.Stage.of(scope) or scope.node.root
    if app not in _REGISTERED:
        _REGISTERED.add(app)
        cdk.Validations.of(app).add_plugins(QuotaCheck(app))
