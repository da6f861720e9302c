"""Gap: moto's DescribeExecution ignores ``includedData`` and always returns the input and output.

AWS: ``includedData`` takes ``ALL_DATA`` (the default) or ``METADATA_ONLY``; with ``METADATA_ONLY`` the
response leaves out the execution's data, its ``input`` and ``output`` (API reference,
DescribeExecution; the same parameter of DescribeStateMachine leaves out the definition). The
guard's owner check asks for metadata only, so that a holder's large input never makes the response,
which carries it JSON-escaped once more, exceed the 256 KiB a task may receive.

The redrive fields (``redriveCount``, ``redriveStatus``, ...) are added here too, as ``gaps.redrive_execution``
describes them: the patcher allows one workaround per method.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import redrive_execution

if TYPE_CHECKING:
    from ..patches import Patch


def install(patch: Patch) -> None:
    from moto.stepfunctions.responses import StepFunctionResponse

    describe = StepFunctionResponse.describe_execution

    def describe_execution(response: Any) -> Any:
        result = describe(response)
        execution = response.stepfunction_backend.describe_execution(response._get_param("executionArn"))
        result.result.update(redrive_execution.described(execution))
        if response._get_param("includedData") != "METADATA_ONLY":
            return result
        for name in ("input", "output"):
            result.result.pop(name, None)  # an ActionResult of the response's fields
        return result

    patch(StepFunctionResponse, "describe_execution", describe_execution)
