"""README.md: the Quick start and "Testing your own workflows locally" followed literally by a new user,
in a fresh virtual environment from the built wheel (tests/conftest.py's user_app ran the install
command), and the examples of "Existing workflows (ASL files)" synthesized and drawn, so that the
README cannot drift from what works."""

from __future__ import annotations

import json
import re
from pathlib import Path

from aws_cdk import App, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_stepfunctions as sfn
from click.testing import CliRunner

import idempotent_constructs
from idempotent_constructs.assembly import state_machine_definitions
from idempotent_constructs.cli import cli
from tests.conftest import ROOT, readme_blocks, readme_install_command
from tests.stacks import DOCUMENTS

# The files the README's Python blocks are, named by their first line ("# orders.py").
FILE_NAME = re.compile(r"# (\w+\.py)\n")


def readme_files() -> dict[str, str]:
    return {match.group(1): block for block in readme_blocks("python") if (match := FILE_NAME.match(block))}


def test_the_quick_start_builds_the_wheel_it_then_installs_with_the_testing_extra():
    builds = [line.split("#")[0].strip() for block in readme_blocks("bash") for line in block.splitlines()]
    # What tests/conftest.py's dist fixture runs, less its --no-isolation and --outdir.
    assert "python -m build --wheel" in builds
    assert readme_install_command() == 'pip install "$(ls ../idempotent_constructs/dist/idempotent_constructs-*.whl)[testing]"'


def test_the_readme_names_the_files_a_new_user_writes():
    assert list(readme_files()) == ["orders.py", "app.py", "test_orders.py"]


def test_the_quick_start_app_synthesizes_and_the_graph_command_draws_its_workflow(user_app):
    for name, text in readme_files().items():
        (user_app.app / name).write_text(text)
    (block,) = [block for block in readme_blocks("bash") if block.startswith("cdk synth ")]
    synthesize, draw = block.splitlines()
    synthesized = user_app.run(synthesize, timeout=300)
    assert synthesized.returncode == 0, synthesized.stderr
    template = json.loads((user_app.app / "cdk.out" / "Orders.template.json").read_text())
    assert [r["Type"] for r in template["Resources"].values()].count("AWS::StepFunctions::StateMachine") == 1
    drawn = user_app.run(draw, timeout=120)
    assert drawn.returncode == 0, drawn.stderr
    assert drawn.stdout.startswith("%% Orders/Orders/StateMachine\nflowchart TD\n")
    assert "%% first run: Acquire -> Body -> Complete" in drawn.stdout


def test_the_readmes_tests_of_a_users_workflow_pass_on_the_local_emulator(user_app):
    for name, text in readme_files().items():
        (user_app.app / name).write_text(text)
    installed = user_app.run("pip install pytest")
    assert installed.returncode == 0, installed.stderr[-3000:]
    result = user_app.run("pytest test_orders.py -q -p no:cacheprovider", timeout=600)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-3000:]
    assert re.search(r"^3 passed", result.stdout, flags=re.MULTILINE), result.stdout


def test_the_readmes_existing_workflow_examples_synthesize_and_the_graph_command_draws_the_first(tmp_path, monkeypatch):
    section = (ROOT / "README.md").read_text().split("## Existing workflows (ASL files)\n")[1].split("\n## ")[0]
    (document,) = re.findall(r"^```json\n(.*?)^```$", section, flags=re.MULTILINE | re.DOTALL)
    whole, step, guarded = re.findall(r"^```python\n(.*?)^```$", section, flags=re.MULTILINE | re.DOTALL)
    (tmp_path / "statemachine").mkdir()
    (tmp_path / "statemachine" / "booking.asl.json").write_text(document)
    (tmp_path / "statemachine" / "refund.asl.json").write_text((DOCUMENTS / "refund.asl.json").read_text())
    monkeypatch.chdir(tmp_path)  # the README's paths are the app's, relative to where it is synthesized
    app = App(outdir=str(tmp_path / "cdk.out"))
    trips = Stack(app, "Trips")
    names = {name: getattr(idempotent_constructs, name) for name in idempotent_constructs.__all__}
    names |= {"self": trips, "sfn": sfn, "iam": iam, "lambda_": lambda_, "sns": sns}
    exec(whole, names)
    exec(
        step,
        names
        | {
            "table": names["IdempotencyTable"](trips, "Records"),
            "refund_function": lambda_.Function.from_function_name(trips, "RefundFunction", "refund"),
            "validate": sfn.Pass(trips, "Validate"),
        },
    )
    exec(guarded, names)  # guard_states: the same file, one of its states guarded too
    app.synth()
    assert "ReserveFlight.Guarded" in json.dumps(
        state_machine_definitions(json.loads((tmp_path / "cdk.out" / "Trips.template.json").read_text()))
    )
    assert json.loads(document)["States"]["BookingFailed"] == {"Type": "Fail", "Error": "BookingFailed"}
    command = re.search(r"`idempotent-constructs (graph [^`]*)`", section).group(1).split()
    drawn = CliRunner().invoke(cli, command)
    assert drawn.exit_code == 0, drawn.output
    assert "%% first run: Acquire -> Body -> Complete" in drawn.output
    assert "%% failure: Body -> Release -> Failed" in drawn.output


def test_the_readmes_batch_recipe_synthesizes_a_map_that_guards_each_record(tmp_path):
    section = (ROOT / "README.md").read_text().split("## Event sources\n")[1].split("\n## ")[0]
    (batch,) = re.findall(r"^```python\n(.*?)^```$", section, flags=re.MULTILINE | re.DOTALL)
    app = App(outdir=str(tmp_path / "cdk.out"))
    stack = Stack(app, "Orders")
    names = {name: getattr(idempotent_constructs, name) for name in idempotent_constructs.__all__}
    names |= {"self": stack, "sfn": sfn, "table": names["IdempotencyTable"](stack, "Records")}
    names["process_one_record"] = sfn.Pass(stack, "Process")
    exec(batch, names)
    sfn.StateMachine(stack, "Batch", definition_body=sfn.DefinitionBody.from_chainable(names["each"]))
    template = json.loads((Path(app.synth().directory) / "Orders.template.json").read_text())
    (definition,) = state_machine_definitions(template).values()
    each = definition["States"]["EachRecord"]
    assert each["MaxConcurrency"] == 4 and each["Next"] == "AnyFailed"
    guarded = each["ItemProcessor"]["States"]["Guarded"]
    assert guarded["Catch"][0]["Next"] == "RecordFailed" and "Record.Acquire" in guarded["Branches"][0]["States"]
