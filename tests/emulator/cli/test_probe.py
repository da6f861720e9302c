"""`idempotent-constructs probe` on the emulator: every case run as a real execution of a JSONata Pass
state passes, and the telling probes show the emulator answering as AWS's JVM engine was measured to."""

from __future__ import annotations

from idempotent_constructs.cli.probe_command import EMULATOR_ROLE, on_emulator
from idempotent_constructs.runtime import probe, redrive_probe


def test_the_probe_passes_every_case_on_the_emulator_which_answers_as_a_jvm_engine(emulator):
    lines = list(probe.run(on_emulator(emulator)))
    assert [str(line) for line in lines if line.verdict == "FAIL"] == []
    assert sum(line.verdict == "PASS" for line in lines) == 4 * len(probe.inputs())
    seen = {line.case: line.detail for line in lines if line.verdict == "SEEN"}
    assert seen["$replace('😀😀', /./, 'a')"] == '"aa" (as a JVM engine does)'
    assert seen["$string(1234567890123456)"] == '"1234567890123456" (as a JVM engine does)'
    assert seen["(?:a|b)* over 10,000 characters"].startswith("failed: States.QueryEvaluationError (as a JVM engine")


def test_the_redrive_probe_finds_the_emulators_redrive_as_the_harness_decided_it(emulator):
    # What AWS leaves undocumented of a redrive, asked by a real run; on the emulator, the harness's decisions.
    lines = list(redrive_probe.run(emulator.client("stepfunctions"), EMULATOR_ROLE, timeout=30))
    assert [line.case for line in lines] == [
        "the redrive resumes at the failed state",
        "RedriveCount and RedriveTime",
        "variables assigned before the failed state are kept",
        "a state entered again has a new EnteredTime",
        "Execution.StartTime stays the first attempt's",
    ]
    assert [str(line) for line in lines if line.verdict != "PASS"] == []
    machines = emulator.client("stepfunctions").list_state_machines()["stateMachines"]
    assert not [machine for machine in machines if machine["name"].startswith("idempotent-constructs-redrive-probe-")]
