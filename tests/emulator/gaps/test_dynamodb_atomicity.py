"""testing.gaps.dynamodb_atomicity: concurrent conditional writes of one item succeed once, and reads
get a copy; moto alone writes without a lock and hands reads the stored item itself."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor


def test_of_many_concurrent_conditional_puts_of_one_item_exactly_one_succeeds(emulator, scratch_table):
    client = emulator.client("dynamodb")

    def put(n: int) -> bool:
        try:
            client.put_item(
                TableName=scratch_table,
                Item={"id": {"S": "one"}, "writer": {"N": str(n)}},
                ConditionExpression="attribute_not_exists(id)",
            )
            return True
        except client.exceptions.ConditionalCheckFailedException:
            return False

    with ThreadPoolExecutor(max_workers=16) as pool:
        assert sum(pool.map(put, range(64))) == 1


def stored_item_read_twice(emulator, table: str):
    from moto.dynamodb.models import dynamodb_backends

    from idempotent_constructs.testing import ACCOUNT

    emulator.client("dynamodb").put_item(TableName=table, Item={"id": {"S": "k"}})
    backend = dynamodb_backends[ACCOUNT][emulator.region]
    return [backend.get_item(table, {"id": {"S": "k"}}) for _ in range(2)]


def test_each_read_gets_its_own_copy_of_the_item(emulator, scratch_table):
    first, second = stored_item_read_twice(emulator, scratch_table)
    assert first is not second


def test_without_the_workaround_moto_hands_every_read_the_stored_item_an_update_changes_in_place(emulator, scratch_table):
    # The race of two conditional writes is timing-dependent; its cause is not.
    with emulator.without_workaround("dynamodb_atomicity"):
        first, second = stored_item_read_twice(emulator, scratch_table)
    assert first is second
