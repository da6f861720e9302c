"""Emulator end-to-end: Amazon States Language files made idempotent as they are (issue 23, B19), on
the samples of others in tests/asl: the saga (JSONPath, substitutions, Lambda and SNS tasks,
compensations ending in Fail, a Succeed), the JSONata fallback, and a JSONata refund whole and as a
guarded step."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from idempotent_constructs import IdempotencyKey
from idempotent_constructs.lambda_src import schema

from ..stacks import COMPENSATIONS, SAGA_STEPS, side_effect_runs

TRIP = IdempotencyKey.from_paths("$.trip_id")


def trip(unique: str, run_type: str = "success") -> dict[str, str]:
    """A request as the saga sample's own trigger function builds it (its README)."""
    return {"trip_id": unique, "depart_city": "Detroit", "arrive_city": "Frankfurt", "rental": "BMW", "run_type": run_type}


def test_the_saga_sample_runs_once_through_its_succeed_and_a_duplicate_replays_it_without_a_lambda_call(documents, unique):
    first = documents.run("Saga", trip(unique))
    assert first.status == "SUCCEEDED", (first.error, first.cause)
    assert "MessageId" in first.output  # the Succeed passes on the SNS task's output, as the sample does
    assert "ReserveFlight" in first.entered_states() and "Reservation Successful!" in first.entered_states()
    assert side_effect_runs(documents, unique, *SAGA_STEPS, *COMPENSATIONS) == {
        **dict.fromkeys(SAGA_STEPS, 1),
        **dict.fromkeys(COMPENSATIONS, 0),
    }
    (record,) = documents.records_of(first, "Idempotency").values()
    assert record["id"]["S"] == TRIP.record_id(trip(unique), namespace="Documents/Saga")
    assert json.loads(record[schema.DATA]["S"]) == first.output

    replay = documents.run("Saga", trip(unique))
    assert (replay.status, replay.output) == ("SUCCEEDED", first.output)
    assert replay.lambda_invocations() == 0 and "ReserveFlight" not in replay.entered_states()
    assert side_effect_runs(documents, unique, *SAGA_STEPS) == dict.fromkeys(SAGA_STEPS, 1)


def test_a_saga_that_compensates_and_ends_in_its_fail_fails_with_its_error_and_releases_the_key_for_a_retry(documents, unique):
    failed = documents.run("Saga", trip(unique, "failProcessPaymentOnce"))
    assert (failed.status, failed.error) == ("FAILED", "Job Failed")
    assert "Reservation Failed" in failed.entered_states()
    assert side_effect_runs(documents, unique, *SAGA_STEPS, *COMPENSATIONS) == {
        "ReserveFlight": 1,
        "ReserveCarRental": 1,
        "ProcessPayment": 1,
        "ConfirmFlight": 0,
        "ConfirmCarRental": 0,
        "RefundPayment": 1,
        "CancelCarRental": 1,
        "CancelFlight": 1,
    }
    assert documents.records_of(failed, "Idempotency") == {}  # released

    retried = documents.run("Saga", trip(unique, "failProcessPaymentOnce"))
    assert retried.status == "SUCCEEDED", (retried.error, retried.cause)
    assert side_effect_runs(documents, unique, *SAGA_STEPS) == {
        **dict.fromkeys(SAGA_STEPS, 1),
        "ReserveFlight": 2,
        "ReserveCarRental": 2,
        "ProcessPayment": 2,
    }


def test_concurrent_duplicates_of_the_saga_run_each_of_its_lambda_functions_once(documents, unique):
    payload = trip(unique)
    with ThreadPoolExecutor(max_workers=5) as pool:
        arns = list(pool.map(lambda i: documents.start("Saga", payload, name=f"saga-{unique}-{i}"), range(5)))
        executions = list(pool.map(documents.wait, arns))
    assert [execution.status for execution in executions] == ["SUCCEEDED"] * 5
    assert len({json.dumps(execution.output, sort_keys=True) for execution in executions}) == 1
    assert side_effect_runs(documents, unique, *SAGA_STEPS) == dict.fromkeys(SAGA_STEPS, 1)


def test_the_jsonata_sample_runs_once_and_replays_and_a_failure_its_fallback_catches_is_a_result(documents, unique):
    payload = {"trip_id": unique}
    first = documents.run("Fallback", payload)
    assert (first.status, first.output) == ("SUCCEEDED", {**payload, "First": "done", "Second": "done", "Third": "done"})
    replay = documents.run("Fallback", payload)
    assert (replay.output, replay.lambda_invocations()) == (first.output, 0)
    assert side_effect_runs(documents, unique, "First", "Second", "Third") == {"First": 1, "Second": 1, "Third": 1}

    # The sample catches every failure into its FallbackState, a Pass that ends it: the workflow
    # succeeds, so its output is the result that duplicates get back.
    other = f"{unique}-fallback"
    caught = documents.run("Fallback", {"trip_id": other, "run_type": "failSecond"})
    assert (caught.status, caught.output) == ("SUCCEEDED", {"FailedStateName": "SecondLambdaState"})
    again = documents.run("Fallback", {"trip_id": other, "run_type": "failSecond"})
    assert (again.output, again.lambda_invocations()) == (caught.output, 0)


def test_a_jsonata_document_succeeds_through_its_succeed_output_and_replays(documents, unique):
    payload = {"trip_id": unique, "amount": 30}
    first = documents.run("Refund", payload)
    assert (first.status, first.output) == ("SUCCEEDED", {"trip_id": unique, "refunded": 30, "by": "done"})
    replay = documents.run("Refund", payload)
    assert (replay.output, replay.lambda_invocations()) == (first.output, 0)
    nothing = documents.run("Refund", {"trip_id": f"{unique}-zero", "amount": 0})
    assert (nothing.status, nothing.output) == ("SUCCEEDED", {"trip_id": f"{unique}-zero", "amount": 0})


def test_a_jsonata_document_that_ends_in_its_fail_is_released_and_its_retry_runs_it_again(documents, unique):
    payload = {"trip_id": unique, "amount": 30, "run_type": "failRefundOnce"}
    failed = documents.run("Refund", payload)
    assert (failed.status, failed.error, failed.cause) == ("FAILED", "RefundFailed", "the refund service failed")
    retried = documents.run("Refund", payload)
    assert (retried.status, retried.output) == ("SUCCEEDED", {"trip_id": unique, "refunded": 30, "by": "done"})
    assert side_effect_runs(documents, unique, "Refund") == {"Refund": 2}


def test_a_document_as_a_guarded_step_after_another_state_runs_once_and_replays(documents, unique):
    payload = {"trip_id": unique, "amount": 5}
    first = documents.run("GuardedRefund", payload)
    assert (first.status, first.output) == ("SUCCEEDED", {"trip_id": unique, "refunded": 5, "by": "done"})
    assert {"RefundReceived", "RefundStep", "Refund", "Refunded"} <= set(first.entered_states())
    replay = documents.run("GuardedRefund", payload)
    assert (replay.output, replay.lambda_invocations()) == (first.output, 0)
    assert "RefundOnce.Replay" in replay.entered_states()
    failed = documents.run("GuardedRefund", {"trip_id": f"{unique}-f", "amount": 5, "run_type": "failRefund"})
    assert (failed.status, failed.error) == ("FAILED", "RefundFailed")


def test_a_jsonata_document_that_ends_in_its_fail_under_cache_replays_its_error_without_running(documents, unique):
    payload = {"trip_id": unique, "amount": 30, "run_type": "failRefundOnce"}
    failed = documents.run("RefundCached", payload)
    assert (failed.status, failed.error, failed.cause) == ("FAILED", "RefundFailed", "the refund service failed")
    duplicate = documents.run("RefundCached", payload)
    assert (duplicate.status, duplicate.error, duplicate.cause) == ("FAILED", "RefundFailed", "the refund service failed")
    assert duplicate.lambda_invocations() == 0 and "Idempotency.ReplayFailure" in duplicate.entered_states()
    assert side_effect_runs(documents, unique, "Refund") == {"Refund": 1}


def test_a_document_with_a_map_and_a_parallel_and_a_number_placeholder_runs_once_and_replays(documents, unique):
    payload = {"trip_id": unique, "items": ["tent", "stove"]}
    first = documents.run("FanOut", payload)
    assert (first.status, first.output) == (
        "SUCCEEDED",
        {**payload, "packed": [{"packed": "tent"}, {"packed": "stove"}], "shipping": {"carrier": "express-air"}},
    )
    assert {"Each item", "Pack", "Both", "Label", "Settle", "Shipped"} <= set(first.entered_states())
    replay = documents.run("FanOut", payload)
    assert replay.output == first.output and "Pack" not in replay.entered_states()


def test_a_document_runs_as_its_file_says_a_discarded_result_discarded_and_its_nulls_kept(documents, unique):
    first = documents.run("Nulls", {"trip_id": unique})
    # "ResultPath": null discards the Pass's result, so Shape still finds $.trip_id; its nulls stay.
    assert (first.status, first.output) == ("SUCCEEDED", {"trip_id": unique, "coupon": None, "lines": [1, None]}), first.cause
    replay = documents.run("Nulls", {"trip_id": unique})
    assert (replay.status, replay.output) == ("SUCCEEDED", first.output)
    assert "Shape" not in replay.entered_states()


# --- issue 31: one state of a document guarded by name (guard_states), the file unchanged -------------
SHOP = ("Charge", "Ship")


def order(unique: str, run_type: str = "success") -> dict[str, str]:
    return {"trip_id": unique, "run_type": run_type}


@pytest.mark.parametrize("workflow", ["ChargeAndShip", "ChargeAndShipOnce"])
def test_a_rerun_after_a_later_step_failed_replays_the_guarded_state_and_runs_the_rest(documents, unique, workflow):
    payload = order(unique, "failShipOnce")
    failed = documents.run(workflow, payload)
    assert (failed.status, failed.error) == ("FAILED", "StepFailed")
    assert side_effect_runs(documents, unique, *SHOP) == {"Charge": 1, "Ship": 1}

    again = documents.run(workflow, payload)
    assert again.status == "SUCCEEDED", (again.error, again.cause)
    assert again.output == {**payload, "charge": {"charged": "done"}, "ship": {"shipped": "done"}}
    assert "Charge.Replay" in again.entered_states() and "Charge" not in again.entered_states()
    assert side_effect_runs(documents, unique, *SHOP) == {"Charge": 1, "Ship": 2}


def test_concurrent_duplicates_run_the_guarded_state_once_and_the_rest_each(documents, unique):
    payload = order(unique)
    with ThreadPoolExecutor(max_workers=5) as pool:
        arns = list(pool.map(lambda i: documents.start("ChargeAndShip", payload, name=f"shop-{unique}-{i}"), range(5)))
        executions = list(pool.map(documents.wait, arns))
    assert [execution.status for execution in executions] == ["SUCCEEDED"] * 5, [e.cause for e in executions]
    assert len({json.dumps(execution.output, sort_keys=True) for execution in executions}) == 1
    assert side_effect_runs(documents, unique, *SHOP) == {"Charge": 1, "Ship": 5}


def test_a_document_placed_in_an_inline_map_of_yours_charges_each_trip_once_without_being_told(documents, unique):
    # Three iterations of one trip at once: the guard of Charge draws a token of its own (its place seen at synth).
    run = documents.run("ChargeEachTrip", {"trips": [order(unique)] * 3})
    assert run.status == "SUCCEEDED", (run.error, run.cause)
    assert run.entered_states().count("Charge.Begin") == 3
    assert side_effect_runs(documents, unique, *SHOP) == {"Charge": 1, "Ship": 3}


def test_a_failure_of_the_guarded_state_goes_to_its_catch_and_releases_its_key_so_a_rerun_runs_it_again(documents, unique):
    payload = order(unique, "failChargeOnce")
    failed = documents.run("ChargeAndShip", payload)
    # The file's Catch sends the failure to its Fail state, as without the guard.
    assert (failed.status, failed.error, failed.cause) == ("FAILED", "ChargeFailed", "the payment service failed")
    assert {"Charge.Release", "Charge failed"} <= set(failed.entered_states())
    assert documents.records_of(failed, "Idempotency") == {}  # released
    again = documents.run("ChargeAndShip", payload)
    assert again.status == "SUCCEEDED", (again.error, again.cause)
    assert side_effect_runs(documents, unique, *SHOP) == {"Charge": 2, "Ship": 1}
