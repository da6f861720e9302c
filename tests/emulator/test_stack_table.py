"""Finding a deployed stack's idempotency table (idempotent_constructs.runtime.stack_table), against the emulator."""

from __future__ import annotations

import json
import uuid

import pytest

from idempotent_constructs import TableNotFoundError
from idempotent_constructs.runtime.stack_table import table_of_stack


def _stack(emulator, resources: dict, outputs: dict) -> str:
    name = f"Ops{uuid.uuid4().hex[:8]}"
    emulator.client("cloudformation").create_stack(
        StackName=name, TemplateBody=json.dumps({"Resources": resources, "Outputs": outputs})
    )
    return name


TABLE = {
    "Type": "AWS::DynamoDB::Table",
    "Properties": {
        "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
        "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}],
        "BillingMode": "PAY_PER_REQUEST",
    },
}


def test_a_stack_output_may_give_the_table_as_an_arn(emulator):
    name = _stack(emulator, {"Records": TABLE}, {"IdempotencyTableArn": {"Value": {"Fn::GetAtt": ["Records", "Arn"]}}})
    resources = emulator.client("cloudformation").list_stack_resources(StackName=name)["StackResourceSummaries"]
    assert (
        table_of_stack(name, cloudformation=emulator.client("cloudformation"), dynamodb=emulator.client("dynamodb"))
        == resources[0]["PhysicalResourceId"]
    )


def test_an_output_of_the_tables_stream_names_the_same_table(emulator):
    stream = {"Fn::Join": ["", [{"Fn::GetAtt": ["Records", "Arn"]}, "/stream/2026-11-23T00:00:00.000"]]}
    name = _stack(
        emulator,
        {"Records": TABLE},
        {"IdempotencyTableName": {"Value": {"Ref": "Records"}}, "IdempotencyTableStreamArn": {"Value": stream}},
    )
    resources = emulator.client("cloudformation").list_stack_resources(StackName=name)["StackResourceSummaries"]
    assert (
        table_of_stack(name, cloudformation=emulator.client("cloudformation"), dynamodb=emulator.client("dynamodb"))
        == resources[0]["PhysicalResourceId"]
    )


def test_two_outputs_naming_different_idempotency_tables_are_refused(emulator):
    name = _stack(
        emulator,
        {"First": TABLE, "Second": TABLE},
        {"OrdersIdempotencyTable": {"Value": {"Ref": "First"}}, "RefundsIdempotencyTable": {"Value": {"Ref": "Second"}}},
    )
    with pytest.raises(TableNotFoundError, match=r"several outputs naming an idempotency table .*OrdersIdempotencyTable="):
        table_of_stack(name, cloudformation=emulator.client("cloudformation"), dynamodb=emulator.client("dynamodb"))
