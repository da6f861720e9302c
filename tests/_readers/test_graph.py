"""idempotent_constructs._readers.graph and `idempotent-constructs graph`: the states a guard generates, drawn
from synthesized definitions, each outcome's path found in the definition itself."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from aws_cdk import App, Duration, Stack
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from click.testing import CliRunner

from example.stack import OrdersStack
from idempotent_constructs import (
    AslFragment,
    IdempotencyGuard,
    IdempotencyKey,
    IdempotencyTable,
    IdempotentStateMachine,
    InFlightPolicy,
)
from idempotent_constructs._readers.assembly import state_machine_definitions
from idempotent_constructs._readers.graph import NoGuard, mermaid, read_guard
from idempotent_constructs.cli import cli
from tests.conftest import ROOT
from tests.stacks import DOCUMENTS
from tests.synth import only_definition, template


@pytest.fixture(scope="module")
def assembly(tmp_path_factory):
    app = App(outdir=str(tmp_path_factory.mktemp("assembly")))
    OrdersStack(app, "IdempotentOrders")
    stack = Stack(app, "Variants")
    table = IdempotencyTable(stack, "Idempotency")
    IdempotentStateMachine(stack, "FailFast", table=table, definition=sfn.Pass(stack, "A"), on_in_flight=InFlightPolicy.FAIL)
    IdempotentStateMachine(
        stack,
        "Quick",
        table=table,
        definition=sfn.Pass(stack, "B"),
        key=IdempotencyKey.from_jmespath("id"),
        state_machine_type=sfn.StateMachineType.EXPRESS,
        timeout=Duration.minutes(1),
        lease=Duration.minutes(1),
    )
    sfn.StateMachine(stack, "Plain", definition_body=sfn.DefinitionBody.from_chainable(sfn.Pass(stack, "C")))
    return app.synth().directory


def definition(assembly: str, stack: str, part: str) -> dict:
    template = json.loads((Path(assembly) / f"{stack}.template.json").read_text())
    (found,) = [d for logical_id, d in state_machine_definitions(template).items() if logical_id.startswith(part)]
    return found


def test_the_example_workflows_paths_are_the_states_its_executions_enter(assembly):
    paths = read_guard(definition(assembly, "IdempotentOrders", "Orders")).paths
    # As measured from execution histories (docs/explanation/how-it-runs.md): 3 states on a first run, 3 on a replay.
    assert paths["first run"] == ["Acquire", "Body", "Complete"]
    assert paths["replay"] == ["Acquire", "Inspect", "Replay"]
    assert paths["wait"] == ["Route", "Backoff", "Await", "Replay"]
    assert paths["takeover"] == ["Route", "OwnerCheck", "OwnerRunning", "Takeover", "Body"]
    assert paths["failure"] == ["Body", "Release", "Failed"]


def test_a_jmespath_key_starts_at_compute_key_a_fail_fast_guard_has_no_wait_and_express_no_owner_check(assembly):
    fail_fast = read_guard(definition(assembly, "Variants", "FailFast")).paths
    assert "wait" not in fail_fast and fail_fast["first run"] == ["Acquire", "Body", "Complete"]
    quick = read_guard(definition(assembly, "Variants", "Quick")).paths
    assert quick["first run"] == ["ComputeKey", "Acquire", "Body", "Complete"]
    assert "OwnerCheck" not in quick["takeover"]


def test_a_state_machine_without_a_guard_has_no_picture(assembly):
    with pytest.raises(NoGuard):
        mermaid(definition(assembly, "Variants", "Plain"))


def test_the_picture_marks_each_outcomes_transitions_and_lists_its_states(assembly):
    picture = mermaid(definition(assembly, "IdempotentOrders", "Orders"), title="Orders")
    assert picture.startswith("%% Orders\nflowchart TD\n")
    assert re.search(r"s\d+ -->\|first run\| s\d+", picture)
    assert "%% replay: Acquire -> Inspect -> Replay" in picture
    assert picture.count("linkStyle") == sum(
        1 for line in picture.splitlines() if re.search(r"-->\|.*(first run|replay|wait|takeover|failure)", line)
    )


def test_how_it_runs_shows_the_picture_the_example_app_synthesizes(assembly):
    result = CliRunner().invoke(cli, ["graph", assembly, "--state-machine", "Orders"])
    assert result.exit_code == 0, result.output
    page = (ROOT / "docs" / "explanation" / "how-it-runs.md").read_text()
    shown = page.split("<!-- graph: the example app (idempotent-constructs graph cdk.out) -->\n```mermaid\n")[1].split(
        "```\n<!-- /graph -->"
    )[0]
    assert shown == result.output, (
        "docs/explanation/how-it-runs.md's picture is stale: paste `idempotent-constructs graph cdk.out` into it"
    )


def test_several_state_machines_need_a_name_and_a_wrong_one_says_what_there_is(assembly):
    result = CliRunner().invoke(cli, ["graph", assembly])
    assert result.exit_code == 1 and "name one with --state-machine" in result.output
    assert "IdempotentOrders/Orders/StateMachine" in result.output
    result = CliRunner().invoke(cli, ["graph", assembly, "--state-machine", "Plain"])
    assert result.exit_code == 1 and "no guard states" in result.output


@pytest.fixture(scope="module")
def refunds(tmp_path_factory) -> Path:
    """An app of a user's, synthesized with app.synth(): no path metadata in its template."""
    app = App(outdir=str(tmp_path_factory.mktemp("refunds")))
    stack = Stack(app, "RefundsApp")
    table = IdempotencyTable(stack, "Idempotency")
    IdempotentStateMachine(stack, "Refunds", table=table, definition=sfn.Pass(stack, "Refund"))
    IdempotentStateMachine(stack, "Payouts", table=table, definition=sfn.Pass(stack, "Payout"))
    return Path(app.synth().directory)


def state_machine_ids(template: Path) -> dict[str, str]:
    resources = json.loads(template.read_text())["Resources"]
    assert not any("Metadata" in r and "aws:cdk:path" in r["Metadata"] for r in resources.values())  # a bare template
    return {
        logical_id[: -len("StateMachine") - 8]: logical_id
        for logical_id, r in resources.items()
        if r["Type"] == "AWS::StepFunctions::StateMachine"
    }


def drawn_title(args) -> str:
    result = CliRunner().invoke(cli, ["graph", *map(str, args)])
    assert result.exit_code == 0, result.output
    return result.output.splitlines()[0]


@pytest.mark.parametrize("wanted", ["Refunds", "RefundsApp/Refunds", "Refunds/StateMachine"])
def test_finds_a_state_machine_by_construct_id_or_path_in_a_template_of_a_cloud_assembly(refunds, wanted):
    assert drawn_title([refunds / "RefundsApp.template.json", "--state-machine", wanted]) == "%% RefundsApp/Refunds/StateMachine"


@pytest.mark.parametrize("wanted", ["Refunds", "RefundsApp/Refunds", "Refunds/StateMachine"])
def test_finds_a_state_machine_by_construct_id_or_path_in_a_template_alone_by_its_logical_id(refunds, tmp_path, wanted):
    alone = tmp_path / "RefundsApp.template.json"
    alone.write_text((refunds / "RefundsApp.template.json").read_text())
    logical_id = state_machine_ids(alone)["Refunds"]
    assert drawn_title([alone, "--state-machine", wanted]) == f"%% RefundsApp/{logical_id}"


def test_finds_a_state_machine_by_logical_id_in_a_cloud_assembly_and_in_a_template_alone(refunds, tmp_path):
    alone = tmp_path / "RefundsApp.template.json"
    alone.write_text((refunds / "RefundsApp.template.json").read_text())
    logical_id = state_machine_ids(alone)["Payouts"]
    assert drawn_title([refunds, "--state-machine", logical_id]) == "%% RefundsApp/Payouts/StateMachine"
    assert drawn_title([alone, "--state-machine", logical_id]) == f"%% RefundsApp/{logical_id}"


def test_a_name_that_matches_nothing_in_a_template_alone_lists_its_state_machines(refunds, tmp_path):
    alone = tmp_path / "RefundsApp.template.json"
    alone.write_text((refunds / "RefundsApp.template.json").read_text())
    result = CliRunner().invoke(cli, ["graph", str(alone), "--state-machine", "Orders"])
    assert result.exit_code == 1 and "no state machine in" in result.output and "matches 'Orders' (there are: " in result.output
    assert all(f"RefundsApp/{logical_id}" in result.output for logical_id in state_machine_ids(alone).values())
    result = CliRunner().invoke(cli, ["graph", str(alone)])
    assert result.exit_code == 1 and all(logical_id in result.output for logical_id in state_machine_ids(alone).values())


def subgraph(picture: str, title: str) -> str:
    """The lines of the subgraph titled ``title``, down to its own ``end``."""
    lines = picture.splitlines()
    (start,) = [i for i, line in enumerate(lines) if re.fullmatch(rf'\s*subgraph s\d+\["{re.escape(title)}"\]', line)]
    indent = lines[start][: len(lines[start]) - len(lines[start].lstrip())]
    end = next(i for i in range(start + 1, len(lines)) if lines[i] == f"{indent}end")
    return "\n".join(lines[start : end + 1])


def test_the_example_bodys_own_states_are_drawn_inside_the_body_subgraph(assembly):
    picture = mermaid(definition(assembly, "IdempotentOrders", "Orders"), title="Orders")
    body = subgraph(picture, "Body: the protected chain")
    # Charge is the body of the guard ChargeOnce, which runs it bare: drawn in that guard's subgraph as its Body.
    for state in ("Validate", "Body: Charge", "ExpressShipping?", "ShipStandard", "ShipExpress"):
        assert re.search(rf'^\s+s\d+\W*"{re.escape(state)}"', body, flags=re.MULTILINE), state
    assert re.search(r"-->\|otherwise\| s\d+", body)  # the Choice's Default, between the body's states
    assert "%% first run: Acquire -> Body -> Complete" in picture


def test_a_nested_guard_is_a_subgraph_titled_by_its_prefix_and_one_node_with_collapse_guards(assembly):
    orders = definition(assembly, "IdempotentOrders", "Orders")
    guard = subgraph(mermaid(orders), "ChargeOnce")
    assert '["Acquire"]' in guard and '"Body: Charge"' in guard  # its body of one Task runs bare
    collapsed = mermaid(orders, collapse_guards=True)
    assert not re.search(r'subgraph s\d+\["ChargeOnce"\]', collapsed) and '"Charge"' not in collapsed
    (node,) = re.findall(r'(s\d+)\[\["ChargeOnce"\]\]', subgraph(collapsed, "Body: the protected chain"))
    assert re.search(rf"s\d+ --> {node}$", collapsed, flags=re.MULTILINE)  # Validate goes into the guard
    assert "%% replay: Acquire -> Inspect -> Replay" in collapsed


def test_a_guard_is_found_by_its_construct_id_and_drawn_as_the_outermost(assembly):
    result = CliRunner().invoke(cli, ["graph", assembly, "--state-machine", "ChargeOnce"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("%% IdempotentOrders/Orders/StateMachine: guard ChargeOnce\n")
    assert '"Body: Charge"' in result.output and "Validate" not in result.output
    # A guard of its own enters as few states as a workflow's (its body of one Task runs bare).
    assert "%% first run: Acquire -> Body -> Complete" in result.output
    result = CliRunner().invoke(cli, ["graph", assembly, "--state-machine", "ChargeTwice"])
    assert result.exit_code == 1 and "guard ChargeOnce in IdempotentOrders/Orders/StateMachine" in result.output


@pytest.fixture(scope="module")
def composed(tmp_path_factory) -> Path:
    """A plain state machine whose guard runs a document (an AslFragment), a Map of guarded items and a Parallel."""
    app = App(outdir=str(tmp_path_factory.mktemp("composed")))
    stack = Stack(app, "Composed")
    table = IdempotencyTable(stack, "Idempotency")
    step = AslFragment(
        stack,
        "RefundStep",
        definition_body=sfn.DefinitionBody.from_string((DOCUMENTS / "refund.asl.json").read_text()),
        definition_substitutions={"RefundFunction": "arn:aws:lambda:eu-west-1:123456789012:function:refund"},
    )
    each = sfn.Map(stack, "EachItem", items_path="$.items", result_path="$.done").item_processor(
        IdempotencyGuard(
            stack,
            "ItemOnce",
            table=table,
            body=sfn.Pass(stack, "ItemWork"),
            key=IdempotencyKey.from_paths("$.sku"),
            in_inline_map=True,
        )
    )
    fork = sfn.Parallel(stack, "Fork", result_path="$.fork").branch(sfn.Pass(stack, "Left")).branch(sfn.Pass(stack, "Right"))
    body = sfn.Pass(stack, "RefundReceived").next(step).next(each).next(fork)
    guard = IdempotencyGuard(stack, "RefundOnce", table=table, body=body, key=IdempotencyKey.from_paths("$.trip_id"))
    sfn.StateMachine(stack, "GuardedRefund", definition_body=sfn.DefinitionBody.from_chainable(guard))
    return Path(app.synth().directory)


def test_a_documents_states_and_nested_maps_parallels_and_guards_are_drawn_in_the_body(composed):
    result = CliRunner().invoke(cli, ["graph", str(composed), "--state-machine", "GuardedRefund"])
    assert result.exit_code == 0, result.output
    body = subgraph(result.output, "Body: the protected chain")
    document = json.loads((DOCUMENTS / "refund.asl.json").read_text())
    assert all(f'"{state}"' in subgraph(body, "RefundStep") for state in document["States"])
    item = subgraph(subgraph(body, "EachItem: each item"), "ItemOnce")
    assert '"ItemWork"' in subgraph(item, "Body")
    fork = subgraph(body, "Fork")
    assert '"Left"' in subgraph(fork, "branch Left") and '"Right"' in subgraph(fork, "branch Right")
    found = CliRunner().invoke(cli, ["graph", str(composed), "--state-machine", "RefundOnce"])
    assert found.exit_code == 0 and subgraph(found.output, "Body: the protected chain") == body


def test_a_body_of_one_task_that_runs_bare_is_drawn_as_the_body_named_by_its_task():
    def build(s):
        charge = tasks.EvaluateExpression(s, "Charge", expression="$.amount * 2")
        IdempotentStateMachine(s, "Orders", table=IdempotencyTable(s, "Table"), definition=charge)

    definition = only_definition(template(build))
    graph = read_guard(definition)
    assert graph.bare_body == "Charge" and graph.paths["first run"] == ["Acquire", "Body", "Complete"]
    assert graph.paths["failure"] == ["Body", "Release", "Failed"]
    assert '["Body: Charge"]' in mermaid(definition)


def test_the_picture_draws_restore_inside_replay_whose_one_item_runs_it(assembly):
    picture = mermaid(definition(assembly, "IdempotentOrders", "Orders"))
    assert re.search(r'subgraph s\d+\["Replay: its one item restores a kept result"\]\n\s+s\d+\["Restore"\]', picture)
