"""testing.gaps.aws_sdk_names: an AWS SDK task takes and returns the API's PascalCase names, with
timestamps as text; moto alone hands the parameters to boto3 as they are."""

from __future__ import annotations

import re


def describe_itself(emulator):
    definition = {
        "StartAt": "Describe",
        "States": {
            "Describe": {
                "Type": "Task",
                "Resource": "arn:aws:states:::aws-sdk:sfn:describeExecution",
                "Parameters": {"ExecutionArn.$": "$$.Execution.Id"},
                "End": True,
            }
        },
    }
    return emulator.run_definition(definition, {})


def test_the_parameters_and_the_response_use_the_apis_pascal_case_names(emulator):
    execution = describe_itself(emulator)
    assert execution.status == "SUCCEEDED", (execution.error, execution.cause)
    assert (execution.output["ExecutionArn"], execution.output["Status"]) == (execution.arn, "RUNNING")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", execution.output["StartDate"])


def test_without_the_workaround_moto_passes_pascal_case_parameters_to_boto3(emulator):
    with emulator.without_workaround("aws_sdk_names"):
        execution = describe_itself(emulator)
    assert not (execution.status == "SUCCEEDED" and execution.output.get("Status") == "RUNNING")
