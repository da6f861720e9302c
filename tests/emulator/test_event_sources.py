"""Emulator end-to-end: a redelivery as each AWS event source makes it replays the first result, never
fails and never runs the body again (contract B20), with the key and payload its recipe names
(tests/recipes.py, docs/guides/event-sources.md); another request under the same key fails with
Idempotency.PayloadMismatch. The events are AWS's documented samples (idempotent_constructs.testing.sources).
"""

from __future__ import annotations

import json

import pytest

from idempotent_constructs.lambda_src import canonical, schema
from idempotent_constructs.testing import sources
from tests.emulator.cli.helpers import run_cli
from tests.recipes import RECIPES
from tests.stacks import side_effect_runs

# What the guard adds to a run (the states not of the recipe's body), at most: the quality bars (bench/bars.py).
NATIVE_FIRST_RUN = ["Idempotency.Acquire", "Idempotency.Body", "Idempotency.Complete"]
NATIVE_REPLAY = ["Idempotency.Acquire", "Idempotency.Inspect", "Idempotency.Replay"]


def guard_states(execution) -> list[str]:
    return [state for state in execution.entered_states() if state.startswith("Idempotency.")]


def runs(deployment, recipe: str, order: str) -> int:
    return side_effect_runs(deployment, recipe, order)[order]


@pytest.mark.parametrize("name", RECIPES)
def test_a_redelivery_replays_the_first_result_without_running_the_body_again(recipes, name, unique):
    recipe = RECIPES[name]
    delivery = recipe.deliver(unique)
    first = recipes.run(name, delivery.event)
    assert (first.status, first.output) == ("SUCCEEDED", {"charged": unique}), first.cause
    again = [delivery.redelivered(), delivery.redelivered().redelivered()]
    if recipe.business:
        again.append(delivery.duplicated())
    for duplicate in again:
        replay = recipes.run(name, duplicate.event)
        assert (replay.status, replay.output) == ("SUCCEEDED", first.output), replay.cause
        assert f"{name}Charge" not in replay.entered_states()
    assert runs(recipes, name, unique) == 1
    # The Python API computes what the states wrote (B17), for the payload as for the key.
    ((record_id, record),) = recipes.records_of(first, table="Idempotency").items()
    assert record_id == recipe.key.record_id(first.input, namespace=f"Sources/{name}")
    assert record[schema.VALIDATION]["S"] == recipe.payload.validation(first.input)
    assert record[schema.KEY_FORMAT_ATTRIBUTE] == {"N": str(schema.KEY_FORMAT)}  # natively or through the key function
    if recipe.key.kind != schema.KIND_JMESPATH and recipe.payload.kind != schema.KIND_JMESPATH:
        assert guard_states(first) == NATIVE_FIRST_RUN and guard_states(replay) == NATIVE_REPLAY
        assert first.lambda_invocations() == replay.lambda_invocations() == 0
    else:  # JMESPath: the key function, once a run
        assert first.lambda_invocations() == replay.lambda_invocations() == 1


@pytest.mark.parametrize("name", RECIPES)
def test_another_request_under_the_same_key_fails_as_a_payload_mismatch(recipes, name, unique):
    recipe = RECIPES[name]
    first = recipes.run(name, recipe.deliver(unique).event)
    other = recipes.run(name, recipe.other(first.input))
    assert (other.status, other.error) == ("FAILED", schema.PAYLOAD_MISMATCH)
    assert runs(recipes, name, unique) == 1


def test_with_no_payload_compared_another_request_under_the_same_key_gets_the_first_result(recipes, unique):
    first = recipes.run("NoPayload", sources.sqs_via_pipe(json.dumps({"orderId": unique})).event)
    other = recipes.run("NoPayload", _with_body(first.input, {"orderId": "someone else's"}))
    assert first.output == {"charged": unique}
    assert (other.status, other.output) == ("SUCCEEDED", first.output)
    assert runs(recipes, "NoPayload", unique) == 1


def test_an_s3_object_uploaded_again_with_the_same_bytes_replays_and_new_bytes_under_its_key_run(recipes, unique):
    first = recipes.run("S3EventBridge", sources.s3_via_eventbridge("uploads", unique).event)
    assert (first.status, first.output) == ("SUCCEEDED", {"charged": unique}), first.cause
    etag = first.input["detail"]["object"]["etag"]
    again = sources.s3_via_eventbridge("uploads", unique, etag=etag, seed=1).event  # another object event, same bytes
    assert again["detail"]["object"]["sequencer"] != first.input["detail"]["object"]["sequencer"]
    replay = recipes.run("S3EventBridge", again)
    assert (replay.status, replay.output) == ("SUCCEEDED", first.output), replay.cause
    changed = recipes.run("S3EventBridge", sources.s3_via_eventbridge("uploads", unique, seed=2).event)  # new bytes
    assert (changed.status, changed.output) == ("SUCCEEDED", first.output)
    assert runs(recipes, "S3EventBridge", unique) == 2


def test_a_body_beyond_the_native_bounds_is_keyed_by_the_key_function_from_its_selections_alone(recipes, unique):
    # 2,100 values: beyond the native bounds; 140 KB: the input and its parsed body together would not fit
    # the key function's request, the selections alone do.
    body = json.dumps({"orderId": unique, "lines": [{"sku": f"s-{n}", "note": "x" * 40} for n in range(2_100)]})
    delivery = sources.sqs_via_pipe(body)
    first = recipes.run("SqsPipeBusiness", delivery.event)
    assert (first.status, first.output) == ("SUCCEEDED", {"charged": unique}), first.cause
    replay = recipes.run("SqsPipeBusiness", delivery.redelivered().event)
    assert (replay.status, replay.output) == ("SUCCEEDED", first.output), replay.cause
    assert first.lambda_invocations() == replay.lambda_invocations() == 1
    assert runs(recipes, "SqsPipeBusiness", unique) == 1


def test_a_payload_expression_that_raises_fails_as_a_missing_payload_as_the_python_api_says(recipes, unique):
    event = [{**sources.sqs_via_pipe(json.dumps({"orderId": unique})).event[0], "body": "not JSON"}]
    with pytest.raises(canonical.PayloadMissing):
        RECIPES["SqsPipeBusiness"].payload.validation(event)
    failed = recipes.run("ParsedBody", event)
    assert (failed.status, failed.error) == ("FAILED", schema.PAYLOAD_MISSING)
    assert failed.cause.startswith("the payload expression $parse($states.input[0].body) raised: ")
    assert recipes.records_of(failed, table="Idempotency") == {}


def _with_body(event, body):
    return [{**event[0], "body": json.dumps(body)}]


def test_a_message_whose_payload_selection_is_missing_fails_before_anything_is_written(recipes, unique):
    event = sources.sqs_via_pipe(json.dumps({"orderId": unique})).event
    del event[0]["body"]
    missing = recipes.run("SqsPipe", event)
    assert (missing.status, missing.error) == ("FAILED", schema.PAYLOAD_MISSING)
    assert "$[0].body" in missing.cause and unique not in missing.cause
    assert recipes.records_of(missing, table="Idempotency") == {}


def state_output(execution, name: str):
    """The output the state ``name`` exited with, from the execution's history."""
    (details,) = [
        event["stateExitedEventDetails"]
        for event in execution.history
        if event.get("stateExitedEventDetails", {}).get("name") == name
    ]
    return json.loads(details["output"])


def failed_ids(execution) -> list[str]:
    assert execution.status == "SUCCEEDED", (execution.error, execution.cause)
    assert set(execution.output) == {"batchItemFailures"}
    return [failure["itemIdentifier"] for failure in execution.output["batchItemFailures"]]


def test_a_batch_answers_with_its_failed_records_which_delivered_again_run_once(recipes, unique):
    orders = [f"{unique}-{n}" for n in range(5)]
    batch = sources.sqs_batch_via_pipe([json.dumps({"orderId": order}) for order in orders])
    counters = recipes.table_name("SideEffects")
    client = recipes.emulator.client("dynamodb")
    client.put_item(TableName=counters, Item={"id": {"S": f"Blocked#{orders[2]}"}})
    first = recipes.run("Batch", batch.event)
    assert failed_ids(first) == [batch.event[2]["messageId"]]
    assert side_effect_runs(recipes, "Batch", *orders) == {order: int(order != orders[2]) for order in orders}
    client.delete_item(TableName=counters, Key={"id": {"S": f"Blocked#{orders[2]}"}})
    # The pipe delivers again only the failed record; a lost acknowledgement delivers the whole batch again.
    again = recipes.run("Batch", [batch.redelivered().event[2]])
    assert failed_ids(again) == []
    whole = recipes.run("Batch", batch.redelivered().event)
    assert failed_ids(whole) == []
    assert side_effect_runs(recipes, "Batch", *orders) == dict.fromkeys(orders, 1)
    assert whole.entered_states().count("Payments.Record.Replay") == 5


def test_a_body_that_is_not_json_is_reported_a_resent_copy_replays_and_the_others_run(recipes, unique):
    # The batch keys each record on its body (its default): a message sent again (a producer's retry, a redrive
    # from the dead-letter queue: a new messageId) replays. (A key that conflicts with its payload is the
    # payments scenario's, keyed on the payment id: tests/emulator/test_delivery.py.)
    orders = [f"{unique}-{n}" for n in range(3)]
    batch = sources.sqs_batch_via_pipe([json.dumps({"orderId": order}) for order in orders])
    recipes.run("Batch", batch.event[:1])
    resent = batch.duplicated().event[0]
    assert resent["messageId"] != batch.event[0]["messageId"] and resent["body"] == batch.event[0]["body"]
    not_json = {**batch.event[2], "body": "{not json"}
    mixed = recipes.run("Batch", [resent, batch.event[1], not_json])
    assert failed_ids(mixed) == [not_json["messageId"]]
    assert side_effect_runs(recipes, "Batch", *orders) == {orders[0]: 1, orders[1]: 1, orders[2]: 0}
    assert mixed.entered_states().count("Payments.Record.Replay") == 1
    (reason,) = [failure for failure in state_output(mixed, "Payments.Records") if failure is not None]
    assert reason["error"] == schema.BODY_FAILED
    # A step's own States.* error, which no Fail state may raise again, is in the cause (contract B6).
    assert json.loads(reason["cause"])["Error"] == "States.QueryEvaluationError"


@pytest.mark.parametrize(
    ("name", "spec"),
    [
        ("SqsPipe", ["--path", "$[0].messageId", "--payload-path", "$[0].body"]),
        (
            "SqsPipeBusiness",
            ["--jsonata", "$parse($states.input[0].body).orderId", "--payload-jsonata", "$parse($states.input[0].body)"],
        ),
        (
            "SqsPipePowertools",
            ["--jmespath", "[0].powertools_json(body).orderId", "--payload-jmespath", "[0].powertools_json(body)"],
        ),
    ],
)
def test_the_key_command_prints_the_id_and_validation_the_workflow_wrote(recipes, name, spec, unique):
    first = recipes.run(name, RECIPES[name].deliver(unique).event)
    ((record_id, record),) = recipes.records_of(first, table="Idempotency").items()
    result = run_cli("key", "--namespace", f"Sources/{name}", *spec, "--json", input=json.dumps(first.input))
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    assert (printed["id"], printed["validation"]) == (record_id, record[schema.VALIDATION]["S"])


def test_the_key_command_names_a_payload_selection_that_selects_nothing():
    result = run_cli("key", "--namespace", "Sources/SqsPipe", "--payload-path", "$[0].body", input='[{"messageId": "m-1"}]')
    assert result.exit_code != 0 and f"{schema.PAYLOAD_MISSING}: the payload path $[0].body is missing" in result.output


def test_records_of_a_stack_with_two_tables_names_the_candidates_and_the_fix(recipes, unique):
    first = recipes.run("SqsPipe", RECIPES["SqsPipe"].deliver(unique).event)
    with pytest.raises(LookupError) as raised:
        recipes.records_of(first)
    message = str(raised.value)
    assert "Sources has 2 AWS::DynamoDB::Table (Sources/Idempotency/Table/Resource, Sources/SideEffects/Resource)" in message
    assert "name the one you mean by a construct id in its path, one of 'Idempotency', 'SideEffects'" in message
