"""testing.gaps.execution_end: an ended execution records its output (or error) before its status
says it ended; moto alone sets the status first, so a describe in between sees no output."""

from __future__ import annotations

from types import SimpleNamespace


def reflect_an_ending_execution():
    """moto's step that records how an execution ended, on a stand-in execution: the statuses seen
    while the output was read, and the execution's status and output after."""
    from moto.stepfunctions.parser.api import ExecutionStatus
    from moto.stepfunctions.parser.asl.eval.program_state import ProgramEnded
    from moto.stepfunctions.parser.backend.execution import BaseExecutionWorkerCommunication

    statuses_while_reading_output = []
    execution = SimpleNamespace(exec_status=ExecutionStatus.RUNNING, output=None)

    def final_output():
        statuses_while_reading_output.append(execution.exec_status)
        return {"large": "output"}

    execution.exec_worker = SimpleNamespace(
        env=SimpleNamespace(program_state=lambda: ProgramEnded(), states=SimpleNamespace(get_input=final_output))
    )
    communication = BaseExecutionWorkerCommunication.__new__(BaseExecutionWorkerCommunication)
    communication.execution = execution
    communication._reflect_execution_status()
    return statuses_while_reading_output, (execution.exec_status, execution.output)


def test_an_ended_execution_records_its_output_before_it_reads_as_succeeded(emulator):
    assert reflect_an_ending_execution() == (["RUNNING"], ("SUCCEEDED", {"large": "output"}))


def test_without_the_workaround_moto_reads_as_succeeded_while_the_output_is_missing(emulator):
    with emulator.without_workaround("execution_end"):
        assert reflect_an_ending_execution()[0] == ["SUCCEEDED"]
