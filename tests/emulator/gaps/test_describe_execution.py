"""testing.gaps.describe_execution: DescribeExecution honours includedData=METADATA_ONLY; moto alone
always returns the input and output."""

from __future__ import annotations


def described(emulator):
    definition = {"StartAt": "Done", "States": {"Done": {"Type": "Pass", "End": True}}}
    execution = emulator.run_definition(definition, {"big": "x" * 1000})
    client = emulator.client("stepfunctions")
    return (
        client.describe_execution(executionArn=execution.arn, includedData="METADATA_ONLY"),
        client.describe_execution(executionArn=execution.arn),
    )


def test_describe_execution_with_metadata_only_leaves_out_the_input_and_output(emulator):
    # The guard's owner check asks for metadata only.
    metadata, everything = described(emulator)
    assert "input" not in metadata and "output" not in metadata and metadata["status"] == "SUCCEEDED"
    assert "input" in everything and "output" in everything


def test_without_the_workaround_moto_returns_the_input_and_output_anyway(emulator):
    with emulator.without_workaround("describe_execution"):
        metadata, _ = described(emulator)
    assert "input" in metadata and "output" in metadata
