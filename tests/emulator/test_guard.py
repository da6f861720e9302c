"""Emulator end-to-end: guards composed with each other, with Map and Parallel, nested in an idempotent
workflow (contract B13, issue 4)."""

from __future__ import annotations


def stored_record(composition, record_id: str) -> dict:
    client = composition.emulator.client("dynamodb")
    return client.get_item(TableName=composition.table_name("Idempotency"), Key={"id": {"S": record_id}})["Item"]


def count(execution, state: str) -> int:
    return execution.entered_states().count(state)


def test_guards_in_sequence_in_a_map_in_a_parallel_and_around_a_complex_chain_run_once_per_key(composition, unique):
    payload = {"id": unique, "items": [{"sku": f"{unique}-1"}, {"sku": f"{unique}-2"}, {"sku": f"{unique}-1"}]}
    first = composition.run("Composed", payload)
    assert first.status == "SUCCEEDED", (first.error, first.cause)
    assert count(first, "FirstWork") == count(first, "SecondWork") == count(first, "LeftWork") == 1
    # Two distinct SKUs: the third item repeats the first and is served from its record.
    assert count(first, "ItemWork") == 2
    assert [item["item"]["sku"] for item in first.output["items_done"]] == [i["sku"] for i in payload["items"]]
    assert first.output["fork"] == ["left", "right"]
    # The guarded complex chain ran its Map, Parallel, Choice, Retry and Catch.
    assert count(first, "InnerItem") == 3 and count(first, "InnerLeft") == 1
    assert count(first, "Recovered") == 1 and count(first, "AfterRecovery") == 1

    # The workflow's own record, and the records of First, Second, LeftOnce, Whole and two SKUs.
    written = composition.records_of(first, "Idempotency")
    assert len(written) == 7

    replay = composition.run("Composed", payload)
    assert replay.output == first.output
    assert {record_id: stored_record(composition, record_id) for record_id in written} == written
    assert replay.entered_states()[-1] == "Idempotency.Replay"
    assert not {"FirstWork", "SecondWork", "ItemWork", "LeftWork", "InnerItem"} & set(replay.entered_states())


def test_a_new_whole_workflow_key_reuses_the_inner_guards_records(composition, unique):
    items = [{"sku": f"{unique}-sku"}]
    composition.run("Composed", {"id": unique, "items": items})
    # Another outer request (new id) with an item already handled: the item guard replays it.
    other = composition.run("Composed", {"id": f"{unique}-other", "items": items})
    assert other.status == "SUCCEEDED"
    assert count(other, "ItemWork") == 0 and count(other, "ItemOnce.Replay") == 1
    assert count(other, "FirstWork") == 1
