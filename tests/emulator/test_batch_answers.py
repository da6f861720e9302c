"""Emulator end-to-end: an IdempotentBatch answers within Step Functions' payload quota whatever its records'
causes (issue 55): each failed record's error and cause are cut to its share of the Map's output, and the
execution succeeds with every failed record named, where the whole causes would have passed 262,144 bytes
and failed it with States.DataLimitExceeded, which no Catch catches (idempotent_constructs/batch.py).
The workflow is SourcesStack's ``BatchCauses`` (tests/recipes.py): each record fails as "Refused" with a
cause of ``causeLength`` times ``causeCharacter``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from idempotent_constructs.testing import sources
from idempotent_constructs.testing.gaps.payload_limit import PAYLOAD_LIMIT_BYTES, payload_size

# Pipes sends a Step Functions target at most 262,144 characters, the batch as a whole (EventBridge user guide,
# "Amazon EventBridge Pipes batching and concurrency").
PIPE_BATCH_CHARACTERS = 262_144
MARKER = re.compile(r"\u2026 \[cut: ([0-9,]+) characters\]$")


def refusals(unique: str, count: int, length: int, character: str = "x") -> sources.Delivery:
    """A pipe's batch of ``count`` SQS messages, each refused with a cause of ``length`` ``character``s."""
    bodies = [json.dumps({"orderId": f"{unique}-{n}", "causeLength": length, "causeCharacter": character}) for n in range(count)]
    return sources.sqs_batch_via_pipe(bodies)


def map_output(execution) -> list[Any]:
    """The output the batch's Map exited with, from the execution's history."""
    (details,) = [
        event["stateExitedEventDetails"]
        for event in execution.history
        if event.get("stateExitedEventDetails", {}).get("name") == "LongCauses.Records"
    ]
    output: list[Any] = json.loads(details["output"])
    return output


def cut_from(cause: str, character: str, length: int) -> bool:
    """Whether ``cause`` is the first characters of ``length`` ``character``s followed by the marker that
    counts the ones left out."""
    marker = MARKER.search(cause)
    if marker is None:
        return False
    kept = cause[: marker.start()]
    return kept == character * len(kept) and len(kept) + int(marker.group(1).replace(",", "")) == length


def test_ten_records_failing_with_100_kib_causes_are_each_answered_their_causes_cut_and_marked(recipes, unique):
    batch = refusals(unique, 10, 102_400)
    answered = recipes.run("BatchCauses", batch.event)
    assert answered.status == "SUCCEEDED", (answered.error, answered.cause)
    assert answered.output == {"batchItemFailures": [{"itemIdentifier": record["messageId"]} for record in batch.event]}
    outcomes = map_output(answered)
    assert [outcome["itemIdentifier"] for outcome in outcomes] == [record["messageId"] for record in batch.event]
    assert {outcome["error"] for outcome in outcomes} == {"Refused"}
    assert all(cut_from(outcome["cause"], "x", 102_400) for outcome in outcomes)
    # Each kept about a tenth of the quota, and the whole within it.
    assert all(len(outcome["cause"]) > 25_000 for outcome in outcomes)
    assert payload_size(outcomes) <= PAYLOAD_LIMIT_BYTES


def test_causes_of_three_byte_characters_are_cut_by_their_bytes_and_whole_characters(recipes, unique):
    # 10 x 12,000 euro signs: 360,000 bytes of UTF-8, 120,000 characters.
    batch = refusals(unique, 10, 12_000, "\u20ac")
    answered = recipes.run("BatchCauses", batch.event)
    assert answered.status == "SUCCEEDED", (answered.error, answered.cause)
    assert len(answered.output["batchItemFailures"]) == 10
    outcomes = map_output(answered)
    assert all(cut_from(outcome["cause"], "\u20ac", 12_000) for outcome in outcomes)
    # Each kept about a tenth of the quota in bytes (some 8,600 characters), and the whole within it.
    assert all(len(outcome["cause"].encode()) > 24_000 for outcome in outcomes)
    assert payload_size(outcomes) <= PAYLOAD_LIMIT_BYTES


def test_a_cause_that_fits_its_share_is_kept_whole(recipes, unique):
    answered = recipes.run("BatchCauses", refusals(unique, 2, 1_000).event)
    assert [outcome["cause"] for outcome in map_output(answered)] == ["x" * 1_000] * 2


def test_a_hundred_records_all_failing_with_the_longest_causes_answer_within_the_quota(recipes, unique):
    # Each fails with a cause of 32,768 characters, the longest the execution history keeps ("cause ... Maximum
    # length of 32768", ExecutionFailedEventDetails, Step Functions API reference): 3.2 MB of causes. A pipe's
    # 262,144 characters hold up to 380 such records; tests/test_batch.py shows in jsonata-js that 380 fit too
    # (a hundred here keep the emulator's run short).
    batch = refusals(unique, 100, 32_768)
    assert len(json.dumps(batch.event, separators=(",", ":"))) <= PIPE_BATCH_CHARACTERS
    answered = recipes.run("BatchCauses", batch.event, timeout=600)
    assert answered.status == "SUCCEEDED", (answered.error, answered.cause)
    assert [failure["itemIdentifier"] for failure in answered.output["batchItemFailures"]] == [
        record["messageId"] for record in batch.event
    ]
    outcomes = map_output(answered)
    assert all(cut_from(outcome["cause"], "x", 32_768) for outcome in outcomes)
    assert payload_size(outcomes) <= PAYLOAD_LIMIT_BYTES
    assert payload_size(answered.output) <= PAYLOAD_LIMIT_BYTES
