"""Emulator end-to-end: guards fit every state machine (contract B15) and compute every key natively.

Guards in a JSONata state machine (the whole workflow, in a Map and in a Parallel), a JSONata chain
in a JSONPath state machine, and a key written in JSONata."""

from __future__ import annotations

from idempotent_constructs import IdempotencyKey


def test_a_jsonata_state_machine_runs_its_guards_in_a_map_and_a_parallel_once_and_replays_them(behaviour, unique):
    payload = {"id": unique, "items": [{"sku": f"{unique}-a"}, {"sku": f"{unique}-b"}]}
    first = behaviour.run("JsonataHost", payload)
    assert first.status == "SUCCEEDED", (first.error, first.cause)
    assert first.output == {
        "echo": {
            **payload,
            "items_done": [{"item": item, "handled": True} for item in payload["items"]],
            "fork": ["left", "right"],
        },
        "done": True,
    }
    assert first.entered_states().count("HostItemWork") == 2 and "HostLeftWork" in first.entered_states()
    replay = behaviour.run("JsonataHost", payload)
    assert replay.output == first.output and "HostItemWork" not in replay.entered_states()
    # Another request with the same items: the whole workflow runs, each item's step replays.
    other = behaviour.run("JsonataHost", {**payload, "id": f"{unique}-2"})
    assert other.status == "SUCCEEDED" and "HostItemWork" not in other.entered_states()
    assert other.entered_states().count("HostItemOnce.Replay") == 2


def test_a_guard_placed_in_an_inline_map_without_a_flag_runs_each_item_once(behaviour, unique):
    # Three iterations of one item, at once: each draws a token of its own in Begin (its place seen at synth).
    items = [{"sku": f"{unique}-same"}] * 3 + [{"sku": f"{unique}-other"}]
    run = behaviour.run("JsonataHost", {"id": unique, "items": items})
    assert run.status == "SUCCEEDED", (run.error, run.cause)
    states = run.entered_states()
    assert states.count("HostItemOnce.Begin") == 4 and states.count("HostItemWork") == 2
    # Two replays of the one run (a duplicate that found it in progress enters Replay again after each wait).
    assert states.count("HostItemOnce.Replay") - states.count("HostItemOnce.Route") == 2
    assert run.output["echo"]["items_done"] == [{"item": item, "handled": True} for item in items]


def test_a_jsonata_chain_in_a_jsonpath_state_machine_is_guarded_like_any_other(behaviour, unique):
    first = behaviour.run("JsonataChain", {"id": unique})
    replay = behaviour.run("JsonataChain", {"id": unique})
    assert first.output == replay.output == {"echo": {"id": unique}, "done": True}
    assert "JsonataChainWork" in first.entered_states() and "JsonataChainWork" not in replay.entered_states()


def test_a_jsonata_key_writes_the_record_id_the_python_api_computes(behaviour, unique):
    payload = {"order": {"id": unique}, "region": "eu", "note": "ignored by the key"}
    first = behaviour.run("JsonataKey", payload)
    (record_id,) = behaviour.records_of(first, "Idempotency")
    key = IdempotencyKey.from_jsonata("[$states.input.order.id, $states.input.region]")
    assert record_id == key.record_id(payload, namespace="Behaviour/JsonataKey")
    same_key = behaviour.run("JsonataKey", {**payload, "note": "another note"})
    assert same_key.error == "Idempotency.PayloadMismatch"


def test_a_jsonata_key_that_selects_nothing_fails_with_key_missing_before_anything_is_written(behaviour, unique):
    missing = behaviour.run("JsonataKey", {"nonce": unique})  # [] once JSONata drops the undefined parts
    assert (missing.status, missing.error) == ("FAILED", "Idempotency.KeyMissing")
    assert missing.cause == (
        "the key expression [$states.input.order.id, $states.input.region] selects nothing, null or an empty value"
    )
    assert not behaviour.records_of(missing, "Idempotency")
