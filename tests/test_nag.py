"""cdk-nag's AWS Solutions, NIST 800-53 (rev. 5) and Serverless packs on the everything-on stack: every
finding is acknowledged in the constructs, with its reason (the example app's, AWS Solutions only, are in
tests/test_example_app.py); and only the library's own: a resource of yours keeps its findings."""

from __future__ import annotations

import json

import pytest
from aws_cdk import App, Duration, Stack, Validations
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from cdk_nag import AwsSolutionsChecks, NIST80053R5Checks, ServerlessChecks

from idempotent_constructs import IdempotencyKey, IdempotencyTable, IdempotentStateMachine
from tests.stacks import everything_on


def test_the_everything_on_stack_passes_three_cdk_nag_packs_with_only_the_findings_acknowledged_in_the_constructs(tmp_path):
    app = App(outdir=str(tmp_path))
    everything_on(app)
    Validations.of(app).add_plugins(AwsSolutionsChecks(app), NIST80053R5Checks(app), ServerlessChecks(app))
    app.synth()  # raises on any unacknowledged finding
    report = json.loads((tmp_path / "validation-report.json").read_text())
    assert {plugin["pluginName"]: plugin["conclusion"] for plugin in report["pluginReports"]} == {
        "AwsSolutions": "success",
        "NIST.800.53.R5": "success",
        "Serverless": "success",
    }


def test_a_resource_of_yours_made_in_a_workflows_scope_keeps_its_findings(tmp_path):
    # A rule that starts the workflow gets the CDK's role under its state machine; a log group of yours made in the
    # workflow's scope is yours too: the workflow acknowledges its own role's and log group's findings, not theirs.
    app = App(outdir=str(tmp_path))
    stack = Stack(app, "Stack")
    workflow = IdempotentStateMachine(
        stack,
        "Orders",
        table=IdempotencyTable(stack, "Table"),
        definition=sfn.Pass(stack, "Work"),
        key=IdempotencyKey.from_paths("$.id"),
    )
    events.Rule(
        stack,
        "Hourly",
        schedule=events.Schedule.rate(Duration.hours(1)),
        targets=[targets.SfnStateMachine(workflow.state_machine)],
    )
    logs.LogGroup(workflow, "Yours")
    Validations.of(app).add_plugins(NIST80053R5Checks(app))
    with pytest.raises(RuntimeError):
        app.synth()
    (report,) = json.loads((tmp_path / "validation-report.json").read_text())["pluginReports"]
    found = {
        (violation["ruleName"], construct["constructPath"])
        for violation in report["violations"]
        for construct in violation["violatingConstructs"]
    }
    assert found == {
        ("NIST.800.53.R5-IAMNoInlinePolicy", "Stack/Orders/StateMachine/EventsRole/DefaultPolicy/Resource"),
        ("NIST.800.53.R5-CloudWatchLogGroupEncrypted", "Stack/Orders/Yours/Resource"),
    }


def test_a_workflow_whose_role_the_cdk_makes_acknowledges_that_roles_findings_on_it(tmp_path):
    # A Distributed Map's permissions name the state machine itself, so its role is the CDK's (InlineRole.fits): the
    # wildcard and the owner check's DescribeExecution are acknowledged on that role; the CDK's own Distributed Map
    # policy beside it keeps its findings.
    app = App(outdir=str(tmp_path))
    stack = Stack(app, "Stack")
    items = sfn.DistributedMap(stack, "Each", items_path="$.items")
    items.item_processor(sfn.Pass(stack, "One"))
    IdempotentStateMachine(
        stack, "Orders", table=IdempotencyTable(stack, "Table"), definition=items, key=IdempotencyKey.from_paths("$.id")
    )
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    with pytest.raises(RuntimeError):
        app.synth()
    (report,) = json.loads((tmp_path / "validation-report.json").read_text())["pluginReports"]
    where = {construct["constructPath"] for violation in report["violations"] for construct in violation["violatingConstructs"]}
    assert where == {"Stack/Orders/StateMachine/DistributedMapPolicy/Resource"}
