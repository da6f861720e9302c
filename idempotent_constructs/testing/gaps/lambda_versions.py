"""Gap: moto's CloudFormation gives an AWS::Lambda::Version no physical id, so a Ref to it (the
qualified function ARN, which the CDK's ``function.current_version`` produces) resolves to a Python
object's text.

AWS: Ref of an AWS::Lambda::Version returns the version's ARN, "arn:aws:lambda:...:function:NAME:N"
(CloudFormation's resource reference).

Evidence: tests/emulator/gaps/test_lambda_versions.py, a stack whose output is such a Ref.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..patches import Patch


def install(patch: Patch) -> None:
    from moto.awslambda import models

    def create_version(
        cls: Any, /, resource_name: str, cloudformation_json: dict[str, Any], account_id: str, region_name: str, **kwargs: Any
    ) -> Any:
        backend = models.lambda_backends[account_id][region_name]
        published = backend.publish_version(cloudformation_json["Properties"]["FunctionName"])
        version = models.LambdaVersion({"Version": published.version})
        version.physical_resource_id = (
            f"arn:aws:lambda:{region_name}:{account_id}:function:{published.function_name}:{published.version}"
        )
        return version

    patch(models.LambdaVersion, "create_from_cloudformation_json", classmethod(create_version))
