"""How long a value CloudFormation resolves at deploy can be, for the quota checks that count characters
(``quota_checks``: IAM counts a policy's characters as deployed). A reference to a resource of the template is
its name or ARN at their longest: the name the template gives it, or the one CloudFormation generates
from the stack name and the logical id; a pseudo parameter is its longest value; anything else counts
``ESTIMATE`` characters.

CloudFormation's generated name is the stack name, the logical id and a random suffix of 12 to 13
characters, joined by hyphens and cut to the resource type's longest name (``AWS::DynamoDB::Table``'s
``TableName``: "If you don't specify a name, AWS CloudFormation generates a unique physical ID"; the names
seen are such as ``Orders-IdempotencyTable1A2B3C4D-ABCDEFGHIJKL``). A stack name is at most 128 characters.
"""

from __future__ import annotations

from typing import Any

ESTIMATE = 128  # characters of a value resolved at deploy that is none of the below
LONGEST_STACK_NAME = 128
_SUFFIX = 14  # a hyphen and the random suffix
PSEUDO = {
    "AWS::Partition": "aws-us-gov",
    "AWS::Region": "ap-southeast-2",
    "AWS::AccountId": "123456789012",
    "AWS::URLSuffix": "amazonaws.com.cn",
    "AWS::StackName": "x" * LONGEST_STACK_NAME,
}
_ARN = "arn:{AWS::Partition}:{service}:{AWS::Region}:{AWS::AccountId}:"
# By resource type: (what its ARN holds before the name, the property that names it, its longest name,
# what Ref gives: "name", "arn" or "url").
_TYPES = {
    "AWS::DynamoDB::Table": (_ARN + "table/", "dynamodb", "TableName", 255, "name"),
    "AWS::Lambda::Function": (_ARN + "function:", "lambda", "FunctionName", 64, "name"),
    "AWS::StepFunctions::StateMachine": (_ARN + "stateMachine:", "states", "StateMachineName", 80, "arn"),
    "AWS::SQS::Queue": (_ARN, "sqs", "QueueName", 80, "url"),
    "AWS::SNS::Topic": (_ARN, "sns", "TopicName", 256, "arn"),
    "AWS::S3::Bucket": ("arn:{AWS::Partition}:s3:::", "s3", "BucketName", 63, "name"),
    "AWS::IAM::Role": ("arn:{AWS::Partition}:iam::{AWS::AccountId}:role/", "iam", "RoleName", 64, "name"),
    "AWS::Logs::LogGroup": (_ARN + "log-group:", "logs", "LogGroupName", 512, "name"),
}


def longest(value: Any, resources: dict[str, Any], stack_name: str | None) -> Any:
    """``value`` (a template's JSON) with each deploy-time value made a string of its longest length."""
    if isinstance(value, list):
        return [longest(item, resources, stack_name) for item in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        ((function, argument),) = value.items()
        if function == "Ref":
            return PSEUDO.get(argument) or _reference(argument, None, resources, stack_name)
        if function == "Fn::GetAtt":
            return _reference(argument[0], argument[1], resources, stack_name) if isinstance(argument, list) else "x" * ESTIMATE
        if function == "Fn::Join":
            separator, parts = argument
            return separator.join(str(longest(part, resources, stack_name)) for part in parts)
        if function.startswith("Fn::"):
            return "x" * ESTIMATE
    return {key: longest(item, resources, stack_name) for key, item in value.items()}


def _reference(logical_id: str, attribute: str | None, resources: dict[str, Any], stack_name: str | None) -> str:
    """What ``Ref`` (``attribute`` None) or ``Fn::GetAtt`` of ``logical_id`` gives, at its longest."""
    resource = resources.get(logical_id)
    kind = resource.get("Type") if isinstance(resource, dict) else None
    if not isinstance(resource, dict) or kind not in _TYPES or attribute not in (None, "Arn"):
        return "x" * ESTIMATE
    arn, service, property_name, most, by_ref = _TYPES[kind]
    given = resource.get("Properties", {}).get(property_name)
    stack = LONGEST_STACK_NAME if stack_name is None else len(stack_name)
    name = "x" * (len(given) if isinstance(given, str) else min(most, stack + 1 + len(logical_id) + _SUFFIX))
    prefix = arn.replace("{service}", service)
    for pseudo, longest_value in PSEUDO.items():
        prefix = prefix.replace("{" + pseudo + "}", longest_value)
    if attribute == "Arn" or by_ref == "arn":
        return prefix + name + (":*" if kind == "AWS::Logs::LogGroup" else "")
    if by_ref == "url":
        return f"https://sqs.{PSEUDO['AWS::Region']}.{PSEUDO['AWS::URLSuffix']}/{PSEUDO['AWS::AccountId']}/{name}"
    return name
