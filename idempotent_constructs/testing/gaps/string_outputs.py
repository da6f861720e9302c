"""Gap: moto's DescribeExecution returns an execution whose output is a JSON string ("just text") as
the bare text, not as JSON.

Its response code (``StepFunctionResponse.describe_execution``) passes an output that is a Python
``str`` through unencoded, since its plain backend keeps outputs as JSON text; its interpreter keeps
them as values, so a string value arrives as ``just text``. AWS returns the output as a JSON text
always: ``"just text"``, quotes included (API reference, DescribeExecution: "The JSON output data of
the execution"). Here the interpreter's executions are described with a string output JSON-encoded.

Evidence: tests/emulator/gaps/test_string_outputs.py.
"""

from __future__ import annotations

import copy
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..patches import Patch


def install(patch: Patch) -> None:
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend

    describe = StepFunctionsParserBackend.describe_execution

    def describe_execution(backend: Any, execution_arn: str) -> Any:
        execution = describe(backend, execution_arn)
        if not isinstance(getattr(execution, "output", None), str):
            return execution
        described = copy.copy(execution)  # the response reads it; the execution keeps its value
        described.output = json.dumps(execution.output)
        return described

    patch(StepFunctionsParserBackend, "describe_execution", describe_execution)
