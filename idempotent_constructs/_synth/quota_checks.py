"""The quota checks: what of a template, as written, AWS would refuse or fail for a quota (``check_template``):
the template's size and sections, the IAM policies of each role, metric filters' patterns, state machines'
log groups, definitions and waiting schedules. Each finding names its rule, the fix and the resource.

It reads the quotas from ``quotas``, a definition through ``_readers`` (from the template or its asset file
in the cloud assembly), and counts a value CloudFormation resolves at deploy (a reference, a pseudo
parameter) at its longest (``references``). It touches no construct: ``quota_plugin`` runs it at synth,
``idempotent-constructs wrap`` on the template it writes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .._readers.asl import all_states
from .._readers.assembly import state_machine_definitions
from ..lambda_src import schema
from . import references
from .names import VENDED_LOGS_PREFIX
from .quotas import (
    DEFINITION_MAX_BYTES,
    EXPRESS_MAX_SECONDS,
    FILTER_PATTERN_CHARACTERS,
    MANAGED_POLICIES_PER_ROLE,
    MANAGED_POLICY_CHARACTERS,
    MAX_MAPPING_ATTRIBUTES,
    MAX_MAPPINGS,
    MAX_PARAMETERS,
    MAX_RESOURCES,
    ROLE_INLINE_POLICY_CHARACTERS,
    TEMPLATE_MAX_BYTES,
    WAIT_SHARE,
    Finding,
)

# Where a guard's first wait sets the deadline of its poll loop (``guard/wait.py``): its entry + {ms}.
_DEADLINE = re.compile(r"\.EnteredTime\) \+ (\d+)")


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
    single = {"Resources": {logical_id: {"Type": "AWS::StepFunctions::StateMachine", "Properties": properties}}}
    try:
        return next(iter(state_machine_definitions({**single, "Mappings": template.get("Mappings", {})}, directory).values()))
    except (AttributeError, LookupError, TypeError, ValueError):  # LookupError: DefinitionNotHere too
        return None


def waiting_schedules(definition: dict[str, Any]) -> list[tuple[str, int]]:
    """``(state, seconds)`` for each guard's poll loop in a definition: the state retried on
    ``Idempotency.StillInFlight``, and how long a duplicate waits there in all, at most, its first wait
    (the Wait state before it) included: the retrier's delays at their bounds, or where the first wait
    sets a deadline (its entry ``+ ms`` in its ``Assign``), that deadline and one more delay."""
    states = {name: state for name, _, state in all_states(definition, "")}
    found = []
    for name, state in states.items():
        for retry in state.get("Retry", []):
            if schema.STILL_IN_FLIGHT in retry.get("ErrorEquals", []):
                before = next((s for s in states.values() if s.get("Type") == "Wait" and s.get("Next") == name), {})
                first = before.get("Seconds", 0)
                interval, backoff = retry.get("IntervalSeconds", 1), retry.get("BackoffRate", 2.0)
                attempts, ceiling = retry.get("MaxAttempts", 3), retry.get("MaxDelaySeconds")
                numbers = (first, interval, backoff, attempts, ceiling or 0)
                if not all(isinstance(number, int | float) for number in numbers):
                    continue  # a JSONata expression ("{% ... %}"): known only when it runs
                delays = [interval * backoff**attempt for attempt in range(int(attempts))]
                waited = first + sum(min(delay, ceiling) if ceiling else delay for delay in delays)
                deadline = _DEADLINE.search(json.dumps(before.get("Assign", {})))
                if deadline and ceiling:
                    waited = min(waited, max(first, int(deadline.group(1)) / 1000 + ceiling))
                elif retry.get("JitterStrategy") == "FULL":
                    continue  # jittered delays bounded by a deadline this reader cannot find: no guess
                found.append((name, int(waited)))
    return found
