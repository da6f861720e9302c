"""cdk-nag's AWS Solutions, NIST 800-53 (rev. 5) and Serverless packs on the everything-on stack: every
finding is acknowledged in the constructs, with its reason (the example app's, AWS Solutions only, are in
tests/test_example_app.py)."""

from __future__ import annotations

import json

from aws_cdk import App, Validations
from cdk_nag import AwsSolutionsChecks, NIST80053R5Checks, ServerlessChecks

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
