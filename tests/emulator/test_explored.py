"""The protocol explorer's counterexamples (issue 51, ``explore/``), each replayed on moto with holds, in the
order its trace gives, so that each fix stays proved where executions really run: ``RacesStack``."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from idempotent_constructs import IdempotencyKey
from tests.stacks import side_effect_runs


def until(reached: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not reached():
        assert time.monotonic() < deadline, f"not within {timeout:.0f} s: {what}"
        time.sleep(0.05)


def test_a_holder_that_extends_between_a_duplicates_read_and_its_takeover_keeps_its_key_and_acts_once(races, emulator, unique):
    """Issue 51, the explorer's counterexample replayed: the holder runs past its 2 s lease; a duplicate reads
    the lapsed record and goes to take it over; the holder's extension lands first. The takeover, fenced on
    the lease it read, is refused while the record's owner and status are still what the duplicate read: it
    reads the record again and replays the holder's result, and the side effect runs once. (Fenced on owner
    and status alone, the takeover succeeded and both charged.)"""
    order = {"order": {"id": unique}}
    record_id = IdempotencyKey.from_paths("$.order.id").record_id(order, namespace="Races/Raced")

    def record() -> dict[str, Any]:
        found = emulator.client("dynamodb").get_item(TableName=races.table_name("Idempotency"), Key={"id": {"S": record_id}})
        return dict(found["Item"])

    with (
        emulator.hold("Raced.RacedExtend") as extension,
        emulator.hold("Raced.Takeover") as takeover,
        emulator.hold("RacedCharge") as charge,
    ):
        holder = races.start("Racing", order, name=f"{unique}-holder")
        extension.arrived()  # the holder holds the key, its lease running out
        time.sleep(2.5)  # the lease has lapsed
        duplicate = races.start("Racing", order, name=f"{unique}-duplicate")
        takeover.arrived()  # the duplicate read the lapsed record and is about to take it over
        lapsed = record()
        with emulator.hold("Raced.Inspect") as inspect:  # where a refused takeover goes
            extension.release()
            assert charge.arrived() == [holder]  # the holder extended its lease and is about to act
            extended = record()
            takeover.release()
            until(lambda: inspect.waiting or len(charge.waiting) == 2, "the duplicate's takeover refused, or taken")
            refused_on = record()
            charge.release()
            first = races.wait(holder)
        second = races.wait(duplicate)
    assert side_effect_runs(races, f"Raced#{unique}", "Charge") == {"Charge": 1}
    # Refused on the record as the duplicate read it but for its lease: only the lease fence could refuse it.
    assert refused_on == extended and all(extended[name] == lapsed[name] for name in ("owner", "status", "validation"))
    assert int(extended["in_progress_expiration"]["N"]) > int(lapsed["in_progress_expiration"]["N"])
    assert (first.status, second.status) == ("SUCCEEDED", "SUCCEEDED")
    assert second.output == first.output == {**order, "Charge": "done"}
    entered = second.entered_states()
    assert entered.count("Raced.Takeover") == 1 and "RacedCharge" not in entered
