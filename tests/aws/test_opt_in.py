"""The real-AWS suite deploys only when asked for, and says why it did not run (these tests run in
every ``./dev test``, without AWS: they run the suite in a child pytest and read its report)."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.aws.conftest import NO_CREDENTIALS, OPT_IN
from tests.conftest import ROOT

SUITE = "tests/aws/test_example_on_aws.py"


def run_suite(*options: str, **environment: str) -> str:
    clean = {name: value for name, value in os.environ.items() if not name.startswith("AWS_")}
    clean.update(
        AWS_CONFIG_FILE=os.devnull,
        AWS_SHARED_CREDENTIALS_FILE=os.devnull,
        AWS_EC2_METADATA_DISABLED="true",
        **environment,
    )
    report = subprocess.run(
        [sys.executable, "-m", "pytest", SUITE, "-q", "-rs", "-p", "no:cacheprovider", *options],
        cwd=ROOT,
        env=clean,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert report.returncode == 0, report.stdout + report.stderr
    return report.stdout


def test_without_the_aws_option_the_suite_is_skipped_even_when_credentials_are_present():
    report = run_suite(AWS_ACCESS_KEY_ID="AKIAEXAMPLE", AWS_SECRET_ACCESS_KEY="secret", AWS_REGION="eu-west-1")
    assert "3 skipped" in report and OPT_IN in report


def test_with_the_aws_option_but_no_credentials_the_suite_is_skipped_with_that_reason():
    report = run_suite("--aws", AWS_REGION="eu-west-1")
    assert "3 skipped" in report and NO_CREDENTIALS in report
