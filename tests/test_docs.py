"""The documentation site (docs/, mkdocs.yml; ./dev docs builds it, warnings as errors): its code
samples are files the tests synthesize or run, included into the pages, so none can drift; the README
stays a front door; the errors reference names every error there is."""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import SecretValue
from aws_cdk import aws_events as events
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk.assertions import Annotations, Match, Template

import idempotent_constructs.errors
from idempotent_constructs import IdempotencyTable, IdempotentStateMachine
from idempotent_constructs._synth import starters
from idempotent_constructs.lambda_src import schema
from tests.conftest import ROOT
from tests.samples import SAMPLES, docs_sample
from tests.stacks import DOCUMENTS
from tests.synth import definitions, only_definition, stack, template

DOCS = ROOT / "docs"
PAGES = sorted(DOCS.rglob("*.md"))
FENCE = re.compile(r"^ *```(\w+)\n(.*?)^ *```$", re.MULTILINE | re.DOTALL)  # indented within a tab too
INCLUDE = re.compile(r'^--8<-- "([^":]+)(?::(\w+))?"$')


def includes() -> list[tuple[Path, str, str | None]]:
    """Every snippet a page includes: (page, file, section)."""
    found = []
    for page in PAGES:
        for language, body in FENCE.findall(page.read_text()):
            if language in ("python", "json") and (match := INCLUDE.match(body.strip())):
                found.append((page, match.group(1), match.group(2)))
    return found


def test_no_page_writes_python_or_json_inline_every_such_sample_is_an_included_file():
    inline = [
        (page.relative_to(ROOT).as_posix(), body[:60])
        for page in PAGES
        for language, body in FENCE.findall(page.read_text())
        if language in ("python", "json") and not INCLUDE.match(body.strip())
    ]
    assert inline == []


def test_every_included_file_and_section_exists_and_every_sample_is_shown_somewhere():
    shown = set()
    for page, name, section in includes():
        path = ROOT / name
        assert path.is_file(), f"{page.name} includes {name}, which does not exist"
        if section:
            text = path.read_text()
            assert f"# --8<-- [start:{section}]" in text and f"# --8<-- [end:{section}]" in text, (page.name, name, section)
        shown.add(path)
    assert {path for path in SAMPLES.rglob("*") if path.is_file() and path.suffix in (".py", ".json")} <= shown


def test_the_readme_is_a_front_door_of_at_most_250_lines_that_links_to_pages_that_exist():
    readme = (ROOT / "README.md").read_text()
    assert readme.count("\n") <= 250
    for link in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (ROOT / link).is_file(), link


def test_the_errors_reference_names_every_error_the_generated_states_and_the_library_raise():
    page = (DOCS / "reference" / "errors.md").read_text()
    documented = set(re.findall(r"^\| `(Idempotency\.\w+)` \|", page, flags=re.MULTILINE))
    raised = {value for value in vars(schema).values() if isinstance(value, str) and value.startswith("Idempotency.")}
    assert documented == raised
    exceptions = {
        name
        for name, value in vars(idempotent_constructs.errors).items()
        if inspect.isclass(value) and issubclass(value, Exception) and value is not idempotent_constructs.errors.IdempotencyError
    }
    assert exceptions == set(re.findall(r"^\| `(\w+)`(?: \(a `\w+`\))? \|", page, flags=re.MULTILINE)) - raised


def test_the_per_step_sample_guards_each_step_with_one_key():
    def build(stack: Any) -> None:
        table = IdempotencyTable(stack, "Records")
        tasks = [sfn.Pass(stack, name) for name in ("ReserveTask", "ChargeTask", "ShipTask")]
        docs_sample("per_step").orders(stack, table, *tasks)

    states = only_definition(template(build))["States"]
    assert {"Reserve.Acquire", "Charge.Acquire", "Ship.Acquire"} <= set(states)


@pytest.fixture
def trip_documents(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The app directory the ASL samples read their files from, relative to where it is synthesized."""
    (tmp_path / "statemachine").mkdir()
    (tmp_path / "statemachine" / "booking.asl.json").write_text((SAMPLES / "booking.asl.json").read_text())
    (tmp_path / "statemachine" / "refund.asl.json").write_text((DOCUMENTS / "refund.asl.json").read_text())
    monkeypatch.chdir(tmp_path)


def test_the_asl_samples_make_the_file_idempotent_whole_as_a_step_and_with_a_state_guarded_by_name(trip_documents):
    asl = docs_sample("asl_files")

    def build(stack: Any) -> None:
        reserve, topic = asl.whole(stack)
        refund = lambda_.Function.from_function_name(stack, "RefundFunction", "refund")
        asl.fragment(stack, IdempotencyTable(stack, "Records"), refund, sfn.Pass(stack, "Validate"))
        asl.guarded(stack, reserve, topic)

    texts = [json.dumps(definition) for definition in definitions(template(build))]
    assert len(texts) == 3
    assert sum("ReserveFlight.Guarded" in text for text in texts) == 1
    assert sum("RefundOnce.Acquire" in text for text in texts) == 1
    assert json.loads((SAMPLES / "booking.asl.json").read_text())["States"]["BookingFailed"] == {
        "Type": "Fail",
        "Error": "BookingFailed",
    }


def test_the_batch_sample_guards_each_record_of_a_map_and_answers_with_the_failed_records():
    def build(stack: Any) -> None:
        each = docs_sample("batch").batch(stack, IdempotencyTable(stack, "Records"), sfn.Pass(stack, "Process"))
        sfn.StateMachine(stack, "Batch", definition_body=sfn.DefinitionBody.from_chainable(each))

    definition = only_definition(template(build))
    records = definition["States"]["Payments.Records"]
    assert records["MaxConcurrency"] == 4 and records["Next"] == "Payments.Failures"
    record = records["ItemProcessor"]["States"]["Payments.Record"]
    assert record["Catch"][0]["Next"] == "Payments.RecordFailed"
    assert "Payments.Record.Acquire" in record["Branches"][0]["States"]
    assert "batchItemFailures" in definition["States"]["Payments.Failures"]["Output"]


def test_the_extend_lease_sample_extends_from_a_loop_of_an_express_workflow():
    def build(stack: Any) -> None:
        more = sfn.Pass(stack, "MoreToDo")
        docs_sample("lock_control").export(stack, IdempotencyTable(stack, "Records"), sfn.Pass(stack, "Start"), more)

    tpl = template(build)
    (machine,) = tpl.find_resources("AWS::StepFunctions::StateMachine").values()
    assert machine["Properties"]["StateMachineType"] == "EXPRESS"
    assert "KeepAlive" in json.dumps(only_definition(tpl))


def test_the_command_line_guides_key_example_prints_what_the_command_prints():
    from click.testing import CliRunner

    from idempotent_constructs.cli import cli

    transcript, *_ = [body for language, body in FENCE.findall((DOCS / "guides" / "cli.md").read_text()) if language == "console"]
    command, shown = transcript.splitlines()[:2]
    payload, arguments = re.fullmatch(r"\$ echo '(.*)' \| idempotent-constructs (key .*)", command).groups()
    printed = CliRunner().invoke(cli, arguments.split(), input=payload)
    assert printed.exit_code == 0, printed.output
    assert printed.output == shown + "\n"


def test_the_downstream_key_sample_sends_the_record_id_as_the_providers_idempotency_key():
    def build(stack: Any) -> None:
        connection = events.Connection(
            stack, "Provider", authorization=events.Authorization.api_key("x-api-key", SecretValue.unsafe_plain_text("k"))
        )
        docs_sample("downstream_key").payments(stack, IdempotencyTable(stack, "Records"), connection)

    text = json.dumps(only_definition(template(build)))
    assert '"Idempotency-Key": "{% ' + IdempotentStateMachine.RECORD_ID_PATH + ' %}"' in text.replace('\\"', '"')


@pytest.mark.parametrize(
    ("sample", "build", "source"),
    [
        ("payments_pipe", "payments_pipe", "AWS::Pipes::Pipe"),
        ("payments_pipe", "payments_mapping", "AWS::Lambda::EventSourceMapping"),
        ("stream_pipes", "kinesis_pipe", "AWS::Pipes::Pipe"),
        ("stream_pipes", "dynamodb_pipe", "AWS::Pipes::Pipe"),
    ],
)
def test_the_whole_stacks_of_the_event_sources_guide_draw_no_advice_from_synth(sample, build, source):
    target = stack()
    getattr(docs_sample(sample), build)(target, IdempotencyTable(target, "Records"), sfn.Pass(target, "Charge"))
    annotations = Annotations.from_stack(target)
    assert annotations.find_warning("*", Match.any_value()) == annotations.find_error("*", Match.any_value()) == []
    assert len(Template.from_stack(target).find_resources(source)) == 1
    nodes = target.node.find_all()
    by_path = {node.node.path: node for node in nodes}
    (start,) = [start for node in nodes for start in starters.starts(node, by_path)]  # read as what starts it
    assert start.batch in (4, 5, 10) and start.reports in (None, True)
