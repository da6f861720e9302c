"""The example app (app.py, example/): synthesizes cleanly, with no credentials, and passes cdk-nag."""

from __future__ import annotations

import json
import os
import subprocess

from aws_cdk import App, Validations
from cdk_nag import AwsSolutionsChecks

from example.stack import OrdersStack
from tests.conftest import ROOT


def test_the_example_passes_cdk_nag_aws_solutions_checks_with_only_acknowledged_findings(tmp_path):
    app = App(outdir=str(tmp_path))
    OrdersStack(app, "IdempotentOrders")
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()  # raises ValidationFailed on any unacknowledged finding
    report = json.loads((tmp_path / "validation-report.json").read_text())
    assert [plugin["conclusion"] for plugin in report["pluginReports"]] == ["success"]


def test_cdk_synth_works_without_aws_credentials_and_prints_nothing_but_the_result(node_bin, tmp_path):
    environment = {name: value for name, value in os.environ.items() if not name.startswith("AWS_") or name == "AWS_REGION"}
    environment["PATH"] = f"{ROOT / '.venv' / 'bin'}{os.pathsep}{node_bin}{os.pathsep}{environment['PATH']}"
    environment["HOME"] = str(tmp_path)  # no ~/.aws either
    result = subprocess.run(
        [str(node_bin / "cdk"), "synth", "--quiet", "--output", str(tmp_path / "cdk.out")],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert (result.stdout + result.stderr).strip() == ""
    assert (tmp_path / "cdk.out" / "IdempotentOrders.template.json").exists()
