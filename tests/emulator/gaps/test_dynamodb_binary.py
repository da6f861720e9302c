"""testing.gaps.dynamodb_binary: a binary attribute read by a DynamoDB task arrives base64-encoded;
moto alone hands over Python bytes, which its own DescribeExecution then cannot even write as JSON."""

from __future__ import annotations

import base64

import pytest


def read_binary(emulator, table: str):
    emulator.client("dynamodb").put_item(TableName=table, Item={"id": {"S": "k"}, "blob": {"B": b"\x00\xffgz"}})
    definition = {
        "StartAt": "Get",
        "States": {
            "Get": {
                "Type": "Task",
                "Resource": "arn:aws:states:::dynamodb:getItem",
                "Parameters": {"TableName": table, "Key": {"id": {"S": "k"}}},
                "End": True,
            }
        },
    }
    return emulator.run_definition(definition, {})


def test_a_binary_attribute_arrives_base64_encoded(emulator, scratch_table):
    execution = read_binary(emulator, scratch_table)
    assert execution.output["Item"]["blob"] == {"B": base64.b64encode(b"\x00\xffgz").decode()}


def test_without_the_workaround_moto_hands_over_python_bytes_that_describe_execution_cannot_write(emulator, scratch_table):
    with emulator.without_workaround("dynamodb_binary"), pytest.raises(TypeError, match="bytes is not JSON serializable"):
        read_binary(emulator, scratch_table)
