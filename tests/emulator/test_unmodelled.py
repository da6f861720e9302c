"""testing.unmodelled: the resource types moto's CloudFormation skips are recorded on the deployment,
and moto's notices about them reach no log handler (outside pytest, Python prints such a notice to
stderr when nothing is set up to log)."""

from __future__ import annotations

import io
import logging
import warnings

from aws_cdk import App, Stack
from aws_cdk import aws_sqs as sqs


def test_a_deployment_records_the_types_the_emulator_skips_and_shows_no_notice_about_them(emulator, tmp_path, unique):
    stack = Stack(App(outdir=str(tmp_path)), f"Unmodelled{unique}")
    sqs.Queue(stack, "Queue", enforce_ssl=True)  # its TLS-only AWS::SQS::QueuePolicy, which moto skips
    stack.node.root.synth()
    logged, moto = io.StringIO(), logging.getLogger("moto")
    handler = logging.StreamHandler(logged)
    moto.addHandler(handler)
    try:
        with warnings.catch_warnings(record=True) as warned:
            warnings.simplefilter("always")
            deployment = emulator.deploy_stack(stack)
    finally:
        moto.removeHandler(handler)
    assert "No Moto CloudFormation support" not in logged.getvalue()
    assert deployment.unmodelled == ("AWS::SQS::QueuePolicy",)
    assert not [w for w in warned if "Tried to parse" in str(w.message)]
    assert deployment.physical_id("AWS::SQS::Queue")  # the rest is deployed


def test_reading_a_deployed_stacks_resources_shows_no_warning_about_the_types_the_emulator_skips(emulator, tmp_path, unique):
    # moto parses the template again when a stack's resources are read (as the command line does), outside
    # any deploy; a full run printed its UserWarning there.
    stack = Stack(App(outdir=str(tmp_path)), f"Unmodelled{unique}")
    sqs.Queue(stack, "Queue", enforce_ssl=True)
    emulator.deploy_stack(stack)

    def warnings_reading() -> list[str]:
        with warnings.catch_warnings(record=True) as warned:
            warnings.simplefilter("always")
            emulator.client("cloudformation").list_stack_resources(StackName=stack.stack_name)
            emulator.client("cloudformation").describe_stack_resources(StackName=stack.stack_name)
        return [str(w.message) for w in warned if "Tried to parse" in str(w.message)]

    assert warnings_reading() == []
    with emulator._patches.suspended("harness.unmodelled"):  # a harness hook, not a gap: no public switch
        assert warnings_reading()  # moto as released warns again
