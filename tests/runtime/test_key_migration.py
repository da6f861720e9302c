"""idempotent_constructs/runtime/key_migration.py: finished records copied to the ids a changed key computes."""

from __future__ import annotations

import contextlib

import boto3
import pytest
from moto import mock_aws

from idempotent_constructs._readers.key_settings import KeySettings
from idempotent_constructs.lambda_src import schema
from idempotent_constructs.runtime import key_migration

OLD = KeySettings("orders", schema.KIND_PATHS, ["$.order.id"], schema.KIND_NONE, None)
NEW = KeySettings("orders", schema.KIND_PATHS, ["$.order.id", "$.customer"], schema.KIND_NONE, None)
HOLDER = "arn:aws:states:us-east-1:123456789012:execution:Orders:run-1"


@pytest.fixture
def dynamodb(monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws():
        client = boto3.client("dynamodb")
        with contextlib.suppress(client.exceptions.ResourceNotFoundException):  # kept by an outer mock (the emulator)
            client.delete_table(TableName="records")
        client.create_table(
            TableName="records",
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        yield client


def finished(client, document, status=schema.COMPLETED, settings=OLD, **extra):
    record_id, validation = key_migration.record_id(settings, document)
    item = {
        schema.ID: {"S": record_id},
        schema.STATUS: {"S": status},
        schema.OWNER: {"S": f"{HOLDER}#a"},
        schema.VALIDATION: {"S": validation},
        schema.EXPIRATION: {"N": "4102444800"},
        **extra,
    }
    client.put_item(TableName="records", Item=item)
    return record_id


def test_a_finished_record_is_copied_to_the_new_id_with_its_outcome_and_expiration_and_the_old_one_kept(dynamodb):
    order = {"order": {"id": "o-1"}, "customer": "c-7"}
    old_id = finished(dynamodb, order, **{schema.DATA: {"S": '{"charged":true}'}})
    done = key_migration.migrate("records", OLD, NEW, dynamodb=dynamodb, inputs=[order])
    new_id = key_migration.record_id(NEW, order)[0]
    assert done.copied == [(old_id, new_id)] and new_id != old_id
    copy = dynamodb.get_item(TableName="records", Key={schema.ID: {"S": new_id}})["Item"]
    assert copy[schema.DATA] == {"S": '{"charged":true}'} and copy[schema.EXPIRATION] == {"N": "4102444800"}
    assert copy[schema.SHARD] == {"S": schema.shard_of(new_id)} and copy[schema.KEY_FORMAT_ATTRIBUTE] == {"N": "4"}
    assert dynamodb.get_item(TableName="records", Key={schema.ID: {"S": old_id}})["Item"][schema.STATUS]["S"] == "COMPLETED"


def test_a_cached_failure_is_copied_as_a_failure(dynamodb):
    order = {"order": {"id": "o-2"}, "customer": "c-7"}
    finished(dynamodb, order, schema.FAILED, **{schema.ERROR: {"S": "CardDeclined"}, schema.CAUSE: {"S": "no"}})
    key_migration.migrate("records", OLD, NEW, dynamodb=dynamodb, inputs=[order])
    copy = dynamodb.get_item(TableName="records", Key={schema.ID: {"S": key_migration.record_id(NEW, order)[0]}})["Item"]
    assert (copy[schema.STATUS]["S"], copy[schema.ERROR]["S"]) == (schema.FAILED, "CardDeclined")


def test_a_record_in_progress_or_without_an_input_is_left_and_reported(dynamodb):
    running = finished(dynamodb, {"order": {"id": "o-3"}, "customer": "c"}, schema.INPROGRESS)
    unknown = finished(dynamodb, {"order": {"id": "o-4"}, "customer": "c"})
    done = key_migration.migrate("records", OLD, NEW, dynamodb=dynamodb, inputs=[{"order": {"id": "o-3"}, "customer": "c"}])
    assert (done.in_progress, done.unmatched, done.copied) == ([running], [unknown], [])
    assert len(dynamodb.scan(TableName="records")["Items"]) == 2


def test_a_copy_never_overwrites_a_record_at_the_new_id_and_a_dry_run_writes_nothing(dynamodb):
    order = {"order": {"id": "o-5"}, "customer": "c-7"}
    finished(dynamodb, order)
    planned = key_migration.migrate("records", OLD, NEW, dynamodb=dynamodb, inputs=[order], dry_run=True)
    assert len(planned.copied) == 1 and len(dynamodb.scan(TableName="records")["Items"]) == 1
    newer = {schema.ID: {"S": key_migration.record_id(NEW, order)[0]}, schema.STATUS: {"S": schema.INPROGRESS}}
    dynamodb.put_item(TableName="records", Item=newer)  # new work under the new key since
    done = key_migration.migrate("records", OLD, NEW, dynamodb=dynamodb, inputs=[order])
    assert done.present == [newer[schema.ID]["S"]] and done.copied == []
    kept = dynamodb.get_item(TableName="records", Key={schema.ID: newer[schema.ID]})["Item"]
    assert kept == newer


def test_an_input_counts_only_where_the_old_key_computes_the_records_id_and_validation_from_it(dynamodb):
    real = {"order": {"id": "o-7"}, "customer": "c-real"}
    other = {"order": {"id": "o-7"}, "customer": "c-other"}  # the same old id, another request
    whole = KeySettings("orders", schema.KIND_PATHS, ["$.order.id"], schema.KIND_WHOLE_INPUT, None)
    finished(dynamodb, real, settings=whole)
    done = key_migration.migrate("records", whole, NEW, dynamodb=dynamodb, inputs=[other, real])
    assert done.copied == [(key_migration.record_id(whole, real)[0], key_migration.record_id(NEW, real)[0])]


def test_inputs_the_record_cannot_tell_apart_that_the_new_key_does_leave_it_unmatched(dynamodb):
    real = {"order": {"id": "o-7"}, "customer": "c-real"}
    other = {"order": {"id": "o-7"}, "customer": "c-other"}  # no payload compared: the record fits both
    finished(dynamodb, real)
    done = key_migration.migrate("records", OLD, NEW, dynamodb=dynamodb, inputs=[other, real])
    assert (len(done.unmatched), done.copied) == (1, [])


def test_an_input_the_new_key_cannot_key_is_counted_and_nothing_is_copied(dynamodb):
    order = {"order": {"id": "o-8"}}  # no customer: the new key's field is missing
    finished(dynamodb, order)
    done = key_migration.migrate("records", OLD, NEW, dynamodb=dynamodb, inputs=[order])
    assert len(done.unkeyable) == 1 and done.copied == [] and done.complete


def test_a_second_run_finds_its_copies_and_copies_nothing_again(dynamodb):
    orders = [{"order": {"id": f"o-{n}"}, "customer": "c"} for n in range(20)]
    for order in orders:
        finished(dynamodb, order)
    first = key_migration.migrate("records", OLD, NEW, dynamodb=dynamodb, inputs=orders)
    assert len(first.copied) == 20 and first.complete
    second = key_migration.migrate("records", OLD, NEW, dynamodb=dynamodb, inputs=orders)
    assert (len(second.present), second.copied, second.complete) == (40, [], True)  # each old record's copy is there


def test_a_result_in_s3_under_a_namespace_that_changes_is_left_and_reported(dynamodb):
    order = {"order": {"id": "o-9"}, "customer": "c"}
    finished(dynamodb, order, **{schema.DATA_LOCATION: {"S": "s3://results/orders/x/y.json.gz"}})
    renamed = KeySettings("shop/orders", schema.KIND_PATHS, ["$.order.id"], schema.KIND_NONE, None)
    done = key_migration.migrate("records", OLD, renamed, dynamodb=dynamodb, inputs=[order])
    assert len(done.in_s3) == 1 and not done.complete


def test_another_canonical_key_format_is_refused():
    older = KeySettings("orders", schema.KIND_PATHS, ["$.order.id"], schema.KIND_NONE, None, key_format=3)
    with pytest.raises(ValueError, match="format 3 -> 4"):
        key_migration.migrate("records", older, NEW, dynamodb=None)


def test_a_respelled_key_selecting_the_same_value_needs_no_copy(dynamodb):
    order = {"order": {"id": "o-6"}}
    finished(dynamodb, order)
    respelled = KeySettings("orders", schema.KIND_PATHS, ["$['order']['id']"], schema.KIND_NONE, None)
    done = key_migration.migrate("records", OLD, respelled, dynamodb=dynamodb, inputs=[order])
    assert len(done.same) == 1 and done.copied == []
