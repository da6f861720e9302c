"""pyproject.toml: what the wheel and the sdist hold, the metadata, and the wheel installed beside an
aws-cdk-lib other than the one this repository develops with."""

from __future__ import annotations

import importlib.metadata
import json
import shlex
import tarfile
import textwrap
import zipfile
from pathlib import Path

import idempotent_constructs
from tests.conftest import ROOT

MINIMUM = dict(
    line.split("==")
    for line in (ROOT / "constraints" / "minimum.txt").read_text().splitlines()
    if line and not line.startswith("#")
)


def wheel_names(dist: Path) -> set[str]:
    (wheel,) = dist.glob("idempotent_constructs-*.whl")
    return set(zipfile.ZipFile(wheel).namelist())


def test_the_wheel_holds_the_library_its_functions_code_and_py_typed_and_nothing_of_the_repository(dist):
    names = wheel_names(dist)
    for required in (
        "idempotent_constructs/__init__.py",
        "idempotent_constructs/py.typed",
        "idempotent_constructs/guard/__init__.py",
        "idempotent_constructs/testing/__init__.py",
        "idempotent_constructs/_readers/assembly.py",
        "idempotent_constructs/_jsonata/engine.py",
        "idempotent_constructs/_jsonata/canonical.jsonata",
        "idempotent_constructs/lambda_src/compute_key.py",
        "idempotent_constructs/lambda_src/release.py",
        "idempotent_constructs/lambda_src/results.py",
        "idempotent_constructs/lambda_src/canonical.py",
        "idempotent_constructs/lambda_src/schema.py",
    ):
        assert required in names
    for package in (ROOT / "idempotent_constructs").rglob("__init__.py"):
        assert package.relative_to(ROOT).as_posix() in names  # every subpackage (the guard was once missing)
    top_level = {name.split("/")[0] for name in names}
    assert {part for part in top_level if not part.endswith(".dist-info")} == {"idempotent_constructs"}


def test_the_sdist_holds_the_sources_the_docs_and_the_changelog_but_no_tests_or_benchmarks(dist):
    (sdist,) = dist.glob("idempotent_constructs-*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    assert {
        "pyproject.toml",
        "README.md",
        "CHANGELOG.md",
        "idempotent_constructs/__init__.py",
        "idempotent_constructs/lambda_src/release.py",
        "idempotent_constructs/_jsonata/canonical.jsonata",
        "docs/index.md",
    } <= names
    assert not any(name.startswith(("tests/", "bench/", "crosscheck/", "example/", "lambda_src/")) for name in names)


def test_the_metadata_names_the_supported_pythons_and_the_version_is_defined_once():
    metadata = importlib.metadata.metadata("idempotent-constructs")
    assert metadata["Requires-Python"] == ">=3.11"
    assert {"Programming Language :: Python :: 3.11", "Typing :: Typed"} <= set(metadata.get_all("Classifier"))
    assert idempotent_constructs.__version__ == metadata["Version"]
    assert f"## [{metadata['Version']}]" in (ROOT / "CHANGELOG.md").read_text()


def test_the_wheel_installs_beside_another_aws_cdk_lib_and_synthesizes_there(user_app):
    """A CDK app pins its own aws-cdk-lib: here the oldest we support, not the one we develop with
    (the README's install command, run in a fresh virtual environment: tests/conftest.py)."""
    assert MINIMUM["aws-cdk-lib"] != importlib.metadata.version("aws-cdk-lib")
    script = textwrap.dedent("""
        import importlib.metadata, json
        from aws_cdk import App, Stack
        from aws_cdk import aws_stepfunctions as sfn
        from idempotent_constructs import IdempotencyKey, IdempotencyTable, IdempotentStateMachine

        app = App(outdir="packaging.out")
        stack = Stack(app, "UsersApp")
        IdempotentStateMachine(stack, "Orders", table=IdempotencyTable(stack, "Idempotency"),
                               definition=sfn.Pass(stack, "Work"), key=IdempotencyKey.from_paths("$.order.id"))
        template = app.synth().get_stack_by_name("UsersApp").template
        kinds = sorted({r["Type"] for r in template["Resources"].values()})
        print(json.dumps({"aws-cdk-lib": importlib.metadata.version("aws-cdk-lib"), "kinds": kinds}))
    """)
    result = user_app.run(f"python -c {shlex.quote(script)}", timeout=300)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["aws-cdk-lib"] == MINIMUM["aws-cdk-lib"]
    assert {"AWS::DynamoDB::Table", "AWS::StepFunctions::StateMachine", "AWS::Lambda::Function"} <= set(report["kinds"])


def test_the_public_names_are_exported():
    assert set(idempotent_constructs.__all__) >= {
        "IdempotencyTable",
        "IdempotentStateMachine",
        "IdempotencyGuard",
        "IdempotencyKey",
        "InFlightPolicy",
        "FailurePolicy",
    }
    for name in idempotent_constructs.__all__:
        assert getattr(idempotent_constructs, name) is not None
