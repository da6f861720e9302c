"""idempotent_constructs/_synth/functions/assets.py: the shared functions' code asset and its staging."""

from __future__ import annotations

import tempfile
import zipfile
from pathlib import Path

from aws_cdk import App, Stack
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk.assertions import Template

from idempotent_constructs import IdempotencyTable, IdempotentStateMachine
from idempotent_constructs._synth.functions import lambda_code
from tests.synth import stack


def test_with_asset_staging_disabled_the_functions_code_is_kept_beside_the_cloud_assembly(tmp_path):
    # What `cdk synth --no-staging` sets (the CLI always enables asset metadata, which SAM reads).
    app = App(
        outdir=str(tmp_path / "cdk.out"), context={"aws:cdk:disable-asset-staging": True, "aws:cdk:enable-asset-metadata": True}
    )
    target = Stack(app, "Test")
    IdempotentStateMachine(target, "Orders", table=IdempotencyTable(target, "Table"), definition=sfn.Pass(target, "Work"))
    functions = Template.from_stack(target).find_resources("AWS::Lambda::Function")
    paths = {Path(function["Metadata"]["aws:asset:path"]) for function in functions.values()}
    (path,) = paths  # one asset shared by the key and release functions
    assert path.parent == tmp_path / "cdk.out" and (path / "compute_key.py").is_file()
    assert (path / "aws_lambda_powertools").is_dir()


def test_the_functions_code_is_zipped_in_a_temporary_directory_only_this_user_can_read():
    code = lambda_code(stack())
    staged = Path(code.path)
    assert staged.parent.parent == Path(tempfile.gettempdir()) and staged.parent.stat().st_mode & 0o077 == 0  # mkdtemp: 0700
    with zipfile.ZipFile(staged) as archive:
        entries = archive.infolist()
    assert {"compute_key.py", "aws_lambda_powertools/logging/logger.py"} <= {entry.filename for entry in entries}
    # Readable by Lambda's user whatever the installed modes, and dated as a zip can hold whatever the installed dates.
    assert {(entry.external_attr >> 16, entry.date_time) for entry in entries} == {(0o100644, (1980, 1, 1, 0, 0, 0))}
