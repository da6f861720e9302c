"""_synth.portable: a synthesized stack as a template of its own, read from a cloud assembly as the CDK
writes one (the template and its asset manifest)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from idempotent_constructs._synth.portable import portable
from idempotent_constructs.errors import IdempotencyConfigurationError

ASSET_BUCKET = {"Fn::Sub": "cdk-hnb659fds-assets-${AWS::AccountId}-${AWS::Region}"}


def assembly(tmp_path: Path, resources: dict, assets: dict[str, str]) -> Path:
    """A cloud assembly of the stack "Wrapped": ``resources``, and a folder asset per ``{hash: file}``."""
    directory = tmp_path / "cdk.out"
    directory.mkdir()
    (directory / "Wrapped.template.json").write_text(json.dumps({"Resources": resources}))
    files = {}
    for digest, file in assets.items():
        (directory / f"asset.{digest}").mkdir()
        (directory / f"asset.{digest}" / file).write_text("def handler(event, context):\n    return event\n")
        files[digest] = {
            "source": {"path": f"asset.{digest}", "packaging": "zip"},
            "destinations": {"current": {"bucketName": "cdk-assets", "objectKey": f"{digest}.zip"}},
        }
    (directory / "Wrapped.assets.json").write_text(json.dumps({"files": files}))
    return directory


def function(digest: str) -> dict:
    return {"Type": "AWS::Lambda::Function", "Properties": {"Code": {"S3Bucket": ASSET_BUCKET, "S3Key": f"{digest}.zip"}}}


def test_each_code_asset_is_a_folder_of_its_own_beside_the_template_named_by_a_local_path(tmp_path):
    directory = assembly(
        tmp_path, {"One": function("aa"), "Two": function("bb"), "Three": function("aa")}, {"aa": "a.py", "bb": "b.py"}
    )
    out = tmp_path / "out"
    template = portable(directory, "Wrapped", out)
    codes = {logical_id: resource["Properties"]["Code"] for logical_id, resource in template["Resources"].items()}
    assert codes == {"One": "functions-1", "Two": "functions-2", "Three": "functions-1"}
    assert (out / "functions-1" / "a.py").is_file() and (out / "functions-2" / "b.py").is_file()


def test_an_asset_used_where_package_uploads_nothing_is_refused_naming_it(tmp_path):
    job = {"Type": "AWS::Glue::Job", "Properties": {"Command": {"ScriptLocation": {"Fn::Join": ["", ["s3://x/", "aa.zip"]]}}}}
    directory = assembly(tmp_path, {"Job": job}, {"aa": "a.py"})
    with pytest.raises(IdempotencyConfigurationError, match=r"uses assets \(aa\.zip\) where `aws cloudformation package`"):
        portable(directory, "Wrapped", tmp_path / "out")
