"""The protocol explorer's counterexamples (issue 51, ``explore/``), each replayed on moto with holds, in the
order its trace gives, so that each fix stays proved where executions really run: ``RacesStack``."""

from __future__ import annotations

import time

from tests.stacks import side_effect_runs


def test_a_holder_that_extends_between_a_duplicates_read_and_its_takeover_keeps_its_key_and_acts_once(races, emulator, unique):
    """Issue 51, the explorer's counterexample replayed: the holder runs past its 2 s lease; a duplicate reads
    the lapsed record and goes to take it over; the holder's extension lands first. The takeover, fenced on
    the lease it read, is refused: the duplicate waits for the holder and replays its result, and the side
    effect runs once. (Fenced on owner and status alone, the takeover succeeded and both charged.)"""
    order = {"order": {"id": unique}}
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
        extension.release()
        assert charge.arrived() == [holder]  # the holder extended its lease and is about to act
        takeover.release()
        charge.release()
        first, second = races.wait(holder), races.wait(duplicate)
    assert side_effect_runs(races, f"Raced#{unique}", "Charge") == {"Charge": 1}
    assert (first.status, second.status) == ("SUCCEEDED", "SUCCEEDED")
    assert second.output == first.output == {**order, "Charge": "done"}
    entered = second.entered_states()
    assert entered.count("Raced.Takeover") == 1 and "RacedCharge" not in entered
    assert entered.index("Raced.Takeover") < len(entered) - 1 - entered[::-1].index("Raced.Inspect")  # refused: it read again
