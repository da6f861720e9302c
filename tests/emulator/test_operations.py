"""Run-time operations (idempotent_constructs.runtime.operations) the command-line tool builds on, against the
emulator: listing, purging expired records (and never a record that changed meanwhile), plain JSON."""

from __future__ import annotations

import base64

import pytest

from idempotent_constructs.lambda_src import schema
from idempotent_constructs.runtime.operations import PURGE_GRACE_SECONDS, list_records, plain, purge_expired

NOW = 1_800_000_000
OWNER = "arn:aws:states:us-east-1:123456789012:execution:Orders:run-1#holder"


@pytest.fixture
def table(scratch_table):
    return scratch_table


def put(client, table: str, record_id: str, status: str, expiration: int, owner: str = OWNER) -> None:
    client.put_item(
        TableName=table,
        Item={
            schema.ID: {"S": record_id},
            schema.STATUS: {"S": status},
            schema.EXPIRATION: {"N": str(expiration)},
            schema.OWNER: {"S": owner},
        },
    )


class RacingWorkflow:
    """A DynamoDB client behind which a workflow writes the record again just before each delete."""

    def __init__(self, client, rewrite) -> None:
        self._client, self._rewrite = client, rewrite

    def __getattr__(self, name):
        return getattr(self._client, name)

    def delete_item(self, **request):
        self._rewrite(request["Key"][schema.ID]["S"])
        return self._client.delete_item(**request)


@pytest.mark.parametrize(
    "rewrite",
    [
        {"status": schema.INPROGRESS, "expiration": NOW + 86400, "owner": "arn:...:run-2#new"},
        {"status": schema.COMPLETED, "expiration": NOW + 86400, "owner": "arn:...:run-2#new"},
        {"status": schema.COMPLETED, "expiration": NOW - 3600, "owner": "arn:...:run-2#new"},
    ],
    ids=["acquired-again", "completed-again", "taken-over"],
)
def test_a_purge_never_deletes_a_record_that_changed_between_the_scan_and_the_delete(emulator, table, rewrite):
    client = emulator.client("dynamodb")
    put(client, table, "Orders#1", schema.COMPLETED, NOW - 3600)
    racing = RacingWorkflow(client, lambda record_id: put(client, table, record_id, **rewrite))
    summary = purge_expired(table, now=NOW, client=racing)
    assert (summary.deleted, summary.changed) == (0, 1)
    kept = client.get_item(TableName=table, Key={schema.ID: {"S": "Orders#1"}})["Item"]
    assert kept[schema.OWNER]["S"] == rewrite["owner"]


def test_a_record_is_purged_only_once_its_expiration_is_past_by_the_grace_period(emulator, table):
    # The grace covers a clock running ahead of the key function's, which decides what replays.
    client = emulator.client("dynamodb")
    put(client, table, "Orders#at-now", schema.COMPLETED, NOW)
    put(client, table, "Orders#within-grace", schema.COMPLETED, NOW - PURGE_GRACE_SECONDS)
    put(client, table, "Orders#before", schema.FAILED, NOW - PURGE_GRACE_SECONDS - 1)
    summary = purge_expired(table, now=NOW, client=client)
    assert (summary.scanned, summary.deleted) == (3, 1)
    kept = sorted(item[schema.ID]["S"] for item in list_records(table, client=client))
    assert kept == ["Orders#at-now", "Orders#within-grace"]
    assert purge_expired(table, now=NOW, grace_seconds=0, client=client).deleted == 1


def test_a_listing_resumes_after_a_record_that_no_longer_exists(emulator, table):
    client = emulator.client("dynamodb")
    for n in range(4):
        put(client, table, f"Orders#{n}", schema.COMPLETED, NOW)
    first_two = [item[schema.ID]["S"] for _, item in zip(range(2), list_records(table, client=client), strict=False)]
    client.delete_item(TableName=table, Key={schema.ID: {"S": first_two[-1]}})
    rest = [item[schema.ID]["S"] for item in list_records(table, after=first_two[-1], client=client)]
    everything_else = sorted({"Orders#0", "Orders#1", "Orders#2", "Orders#3"} - {first_two[-1]})
    assert sorted(first_two[:1] + rest) == everything_else and len(rest) == 2


def test_a_listing_reports_each_page_it_read(emulator, table):
    client = emulator.client("dynamodb")
    for n in range(3):
        put(client, table, f"Orders#{n}", schema.COMPLETED, NOW)
    pages: list[int] = []
    listed = list(list_records(table, namespace="Refunds", client=client, on_page=pages.append))
    assert listed == [] and pages == [3]


def test_plain_gives_numbers_as_numbers_and_binary_as_base64():
    record = {
        "id": {"S": "Orders#1"},
        "expiration": {"N": "1800000000"},
        "ratio": {"N": "0.25"},
        "data_gzip": {"B": b"\x1f\x8b"},
        "none": {"NULL": True},
        "flag": {"BOOL": False},
        "nested": {"M": {"list": {"L": [{"N": "1"}, {"S": "two"}]}}},
        "tags": {"SS": ["a", "b"]},
    }
    assert plain(record) == {
        "id": "Orders#1",
        "expiration": 1800000000,
        "ratio": 0.25,
        "data_gzip": base64.b64encode(b"\x1f\x8b").decode(),
        "none": None,
        "flag": False,
        "nested": {"list": [1, "two"]},
        "tags": ["a", "b"],
    }
