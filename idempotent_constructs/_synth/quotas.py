"""The AWS quotas a template of this library can reach, each with its limit and where AWS documents it:
the numbers the checks compare with (CloudFormation, IAM, CloudWatch Logs, Step Functions), the rule each
is reported under (``QUOTAS``, listed in docs/reference/quotas.md), and a ``Finding`` of one, with its severity.

Only the numbers and their evidence live here: the checks that read a template are ``quota_checks``, the
validation plugin that runs them when the app synthesizes is ``quota_plugin``. This module imports nothing
of the library, so that any layer may read a quota from it (the guard's waiting margin, the emulator's
template size).
"""

from __future__ import annotations

from dataclasses import dataclass

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
BY_RULE = {quota.rule: quota for quota in QUOTAS}


@dataclass(frozen=True)
class Finding:
    rule: str
    description: str
    fix: str
    logical_id: str | None = None  # None: the stack as a whole
    severity: str | None = None  # None: the quota's


def severity(finding: Finding) -> str:
    """``error`` (AWS refuses or fails it) or ``warning``: the finding's own, else its quota's."""
    return finding.severity or BY_RULE[finding.rule].severity
