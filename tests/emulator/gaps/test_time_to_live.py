"""testing.gaps.time_to_live: a table's TimeToLiveSpecification is in force after deployment; moto's
CloudFormation alone ignores it."""

from __future__ import annotations

from .conftest import deploy_without


def time_to_live(emulator, deployment) -> dict:
    table = deployment.table_name("Table")
    return dict(emulator.client("dynamodb").describe_time_to_live(TableName=table)["TimeToLiveDescription"])


def test_time_to_live_is_enabled_on_the_attribute_named(emulator, gaps_deployed):
    described = time_to_live(emulator, gaps_deployed)
    assert described == {"TimeToLiveStatus": "ENABLED", "AttributeName": "expiration"}


def test_without_the_workaround_moto_leaves_it_disabled(emulator, deployment_gaps):
    described = time_to_live(emulator, deploy_without(emulator, deployment_gaps, "time_to_live"))
    assert described["TimeToLiveStatus"] == "DISABLED"
