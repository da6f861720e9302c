"""idempotent_constructs/testing/quota_findings.py: a test reads the synth-time quota check's findings as values,
from a template or a synthesized template file, as the validation report gives them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from aws_cdk import App, Stack, cx_api
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn

from idempotent_constructs import IdempotencyGuard, IdempotencyTable
from idempotent_constructs.testing import QuotaFinding, quota_findings


def jobs(app: App) -> Stack:
    """A guard in a state machine of one's own that logs to a log group outside /aws/vendedlogs/: a warning."""
    stack = Stack(app, "Jobs")
    guard = IdempotencyGuard(stack, "Once", table=IdempotencyTable(stack, "Table"), body=sfn.Pass(stack, "Work"))
    sfn.StateMachine(
        stack,
        "Machine",
        definition_body=sfn.DefinitionBody.from_chainable(guard),
        logs=sfn.LogOptions(destination=logs.LogGroup(stack, "Logs"), level=sfn.LogLevel.ALL),
    )
    return stack


@pytest.fixture(scope="module")
def assembly() -> cx_api.CloudAssembly:
    """An app of two stacks, synthesized once: ``Jobs`` (one warning) and ``Clean`` (none)."""
    app = App()
    jobs(app)
    clean = Stack(app, "Clean")
    sfn.StateMachine(clean, "Machine", definition_body=sfn.DefinitionBody.from_chainable(sfn.Pass(clean, "Work")))
    return app.synth()


def test_a_template_s_findings_are_those_of_the_validation_report_as_values(assembly):
    report = json.loads((Path(assembly.directory) / "validation-report.json").read_text())
    (plugin,) = [p for p in report["pluginReports"] if p["pluginName"] == "idempotent-constructs"]

    (finding,) = quota_findings(assembly.get_stack_by_name("Jobs").template)

    assert isinstance(finding, QuotaFinding)
    assert [(v["ruleName"], v["severity"]) for v in plugin["violations"]] == [(finding.rule, finding.severity)]
    assert finding.logical_id is not None and finding.logical_id.startswith("Machine")
    assert "/aws/vendedlogs/" in finding.fix


def test_a_synthesized_template_file_is_read_as_written_and_a_clean_one_has_none(assembly):
    found = {stack: quota_findings(assembly.get_stack_by_name(stack).template_full_path) for stack in ("Jobs", "Clean")}
    assert [f.rule for f in found["Jobs"]] == ["log-resource-policy"] and found["Clean"] == []
