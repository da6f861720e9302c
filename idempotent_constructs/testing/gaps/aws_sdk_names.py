"""Gap: moto's AWS SDK integrations ("arn:aws:states:::aws-sdk:...") pass the state's PascalCase
parameters to boto3 unchanged, which rejects them, and return boto3's response: camelCase members
and timestamps as Python datetimes.

AWS takes and returns the API's own member names (PascalCase) and writes timestamps as ISO-8601
text. Both directions are converted here with the service model, as moto's own helpers for this do.

Evidence: tests/emulator/gaps/test_aws_sdk_names.py, an aws-sdk DescribeExecution.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..timestamps import timestamps_to_text

if TYPE_CHECKING:
    from ..patches import Patch


def install(patch: Patch) -> None:
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_aws_sdk import (
        StateTaskServiceAwsSdk,
    )

    def operation(task: Any) -> Any:
        import botocore.session

        service = botocore.session.get_session().get_service_model(task._get_boto_service_name())
        action = task.resource.api_action
        return service.operation_model(action[0].upper() + action[1:])

    def normalise_parameters(task: Any, parameters: dict[str, Any], *args: Any, **kwargs: Any) -> None:
        task._to_boto_request(parameters, operation(task).input_shape)

    def normalise_response(task: Any, response: Any, *args: Any, **kwargs: Any) -> None:
        task._from_boto_response(response, operation(task).output_shape)
        timestamps_to_text(response)

    patch(StateTaskServiceAwsSdk, "_normalise_parameters", normalise_parameters)
    patch(StateTaskServiceAwsSdk, "_normalise_response", normalise_response)
