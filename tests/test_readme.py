"""The Quick start, followed literally by a new user: the README's commands and the files of
docs/samples/quickstart (which the README shows whole, and the site includes), in a fresh virtual
environment from the built wheel (tests/conftest.py's user_app ran the install command), so that the
front door cannot drift from what works."""

from __future__ import annotations

import json
import re

from tests.conftest import ROOT, readme_blocks, readme_install_command

QUICKSTART = ROOT / "docs" / "samples" / "quickstart"
GETTING_STARTED = ROOT / "docs" / "getting-started.md"
# The README's Python blocks, each a file of the Quick start named by its first line ("# orders.py").
FILE_NAME = re.compile(r"# (\w+\.py)\n")


def quickstart_files() -> dict[str, str]:
    return {path.name: path.read_text() for path in sorted(QUICKSTART.glob("*.py"))}


def test_the_readme_shows_the_quick_starts_app_files_exactly_as_the_tests_run_them():
    shown = {match.group(1): block for block in readme_blocks("python") if (match := FILE_NAME.match(block))}
    assert list(shown) == ["orders.py", "app.py"]
    assert shown == {name: quickstart_files()[name] for name in shown}


def page_commands() -> list[str]:
    """The Getting started page's shell commands, a line each, comments dropped."""
    blocks = re.findall(r"^```bash\n(.*?)^```$", GETTING_STARTED.read_text(), flags=re.MULTILINE | re.DOTALL)
    return [line.split("#")[0].strip() for block in blocks for line in block.splitlines()]


def test_the_getting_started_page_gives_the_commands_the_quick_start_tests_run():
    commands = page_commands()
    readme = [
        line.split("#")[0].strip()
        for block in readme_blocks("bash")
        if not block.startswith("./dev")
        for line in block.splitlines()
    ]
    assert [command for command in readme if command] == [command for command in commands if command in readme]
    assert commands[-2:] == ["pip install pytest", "pytest test_orders.py -q"]


def test_the_quick_start_builds_the_wheel_it_then_installs_with_the_testing_extra():
    builds = [line.split("#")[0].strip() for block in readme_blocks("bash") for line in block.splitlines()]
    # What tests/conftest.py's dist fixture runs, less its --no-isolation and --outdir.
    assert "python -m build --wheel" in builds
    assert readme_install_command() == 'pip install "$(ls ../idempotent_constructs/dist/idempotent_constructs-*.whl)[testing]"'


def test_the_quick_start_app_synthesizes_and_the_graph_command_draws_its_workflow(user_app):
    for name, text in quickstart_files().items():
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


def test_the_testing_guides_tests_of_a_users_workflow_pass_on_the_local_emulator(user_app):
    for name, text in quickstart_files().items():
        (user_app.app / name).write_text(text)
    install, run = page_commands()[-2:]  # the Getting started page's last step
    installed = user_app.run(install)
    assert installed.returncode == 0, installed.stderr[-3000:]
    result = user_app.run(run + " -p no:cacheprovider", timeout=600)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-3000:]
    assert re.search(r"^3 passed", result.stdout, flags=re.MULTILINE), result.stdout
