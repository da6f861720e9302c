"""Gap: moto's CloudFormation ignores a table's ``TimeToLiveSpecification``: DescribeTimeToLive then
says DISABLED.

AWS enables TTL on the attribute named. Here it is set after the stack is created (moto never deletes
expired items either way; what reads the setting, such as the CLI, sees AWS's answer).

Evidence: tests/emulator/gaps/test_time_to_live.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..runs import Deployment


def after_deploy(deployment: Deployment, *, account: str, region: str, update: bool = False) -> None:
    import boto3

    dynamodb = boto3.client("dynamodb", region_name=region)
    for logical_id, resource in deployment.template.get("Resources", {}).items():
        specification = resource.get("Properties", {}).get("TimeToLiveSpecification")
        if resource.get("Type") == "AWS::DynamoDB::Table" and specification and specification.get("Enabled"):
            dynamodb.update_time_to_live(
                TableName=deployment.resources[logical_id],
                TimeToLiveSpecification={"Enabled": True, "AttributeName": specification["AttributeName"]},
            )
