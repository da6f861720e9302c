"""Emulator gaps the harness closes beyond JSONata: concurrent parses (testing.parser_scopes) and the
order in which an ended execution is recorded (testing.execution_end)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace


def test_executions_that_parse_jsonata_and_jsonpath_states_at_once_all_run(emulator):
    """moto's parser shared one query-language stack between concurrent parses."""
    definition = {
        "StartAt": "Native",
        "States": {
            "Native": {"Type": "Pass", "QueryLanguage": "JSONata", "Output": "{% $states.input %}", "Next": "Classic"},
            "Classic": {"Type": "Pass", "Parameters": {"echo.$": "$"}, "End": True},
        },
    }
    with ThreadPoolExecutor(max_workers=8) as pool:
        executions = list(pool.map(lambda n: emulator.run_definition(definition, {"n": n}), range(16)))
    assert [e.output for e in executions] == [{"echo": {"n": n}} for n in range(16)]


def test_an_ended_execution_records_its_output_before_it_reads_as_succeeded(emulator):
    """moto set SUCCEEDED first and the output after: a describe in between saw no output."""
    from moto.stepfunctions.parser.api import ExecutionStatus
    from moto.stepfunctions.parser.asl.eval.program_state import ProgramEnded
    from moto.stepfunctions.parser.backend.execution import BaseExecutionWorkerCommunication

    statuses_while_reading_output = []
    execution = SimpleNamespace(exec_status=ExecutionStatus.RUNNING, output=None)

    def final_output():
        statuses_while_reading_output.append(execution.exec_status)
        return {"large": "output"}

    execution.exec_worker = SimpleNamespace(
        env=SimpleNamespace(
            program_state=lambda: ProgramEnded(),
            states=SimpleNamespace(get_input=final_output),
        )
    )
    communication = BaseExecutionWorkerCommunication.__new__(BaseExecutionWorkerCommunication)
    communication.execution = execution
    communication._reflect_execution_status()
    assert statuses_while_reading_output == [ExecutionStatus.RUNNING]
    assert (execution.exec_status, execution.output) == (ExecutionStatus.SUCCEEDED, {"large": "output"})


def test_express_executions_send_no_status_change_events_as_on_aws(behaviour, emulator, unique):
    """The harness delivered status-change events for every execution; AWS sends none for Express.
    A rule matching every Step Functions event, aimed at the release function (which logs each event
    it handles), hears a Standard execution end and not an Express one that ended before it."""
    import json
    import time

    events = emulator.client("events")
    function = behaviour.physical_id("AWS::Lambda::Function", "IdempotencyReleaseFunction")
    rule = f"every-execution-{unique}"
    events.put_rule(Name=rule, EventPattern=json.dumps({"source": ["aws.states"]}))
    events.put_targets(
        Rule=rule, Targets=[{"Id": "release", "Arn": f"arn:aws:lambda:{emulator.region}:123456789012:function:{function}"}]
    )
    try:
        express = behaviour.run("ExpressShortLease", {"no_id": unique})  # fails at once: KeyMissing
        standard = behaviour.run("Flaky", {"order": {"id": unique}, "fail": True})
        assert (express.status, standard.status) == ("FAILED", "FAILED")

        def logged(arn):
            return any(arn in line for lines in emulator.lambdas.logs.values() for line in lines)

        deadline = time.monotonic() + 20
        while not logged(standard.arn) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert logged(standard.arn) and not logged(express.arn)  # events are delivered in order
    finally:
        events.remove_targets(Rule=rule, Ids=["release"])
        events.delete_rule(Name=rule)
