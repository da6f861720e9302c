"""`idempotent-constructs probe` on the emulator: every case run as a real execution of a JSONata Pass
state passes, and the telling probes show the emulator answering as AWS's JVM engine was measured to."""

from __future__ import annotations

from idempotent_constructs.cli.probe_command import on_emulator
from idempotent_constructs.runtime import probe


def test_the_probe_passes_every_case_on_the_emulator_which_answers_as_a_jvm_engine(emulator):
    lines = list(probe.run(on_emulator(emulator)))
    assert [str(line) for line in lines if line.verdict == "FAIL"] == []
    assert sum(line.verdict == "PASS" for line in lines) == 4 * len(probe.inputs())
    seen = {line.case: line.detail for line in lines if line.verdict == "SEEN"}
    assert seen["$replace('😀😀', /./, 'a')"] == '"aa" (as a JVM engine does)'
    assert seen["$string(1234567890123456)"] == '"1234567890123456" (as a JVM engine does)'
    assert seen["(?:a|b)* over 10,000 characters"].startswith("failed: States.QueryEvaluationError (as a JVM engine")
