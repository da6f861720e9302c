"""Emulator end-to-end: `idempotent-constructs wrap` writes a template of two public ASL files (the
aws-samples SAM saga and the aws-samples JSONata fallback workflow), deployed as `aws cloudformation
package` and `deploy` would deploy it (LocalEmulator.deploy_template), their placeholders given as
parameters: the Lambda functions of the documents stack, which count their real runs. The SAM form is
translated as SAM's transform would translate it, then deployed the same way."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from idempotent_constructs.cli import cli
from idempotent_constructs.testing import ACCOUNT, REGION, Deployment, LocalEmulator
from idempotent_constructs.testing.package import package

from ...sam import translated
from ...stacks import COMPENSATIONS, DOCUMENTS, SAGA_FUNCTIONS, SAGA_STEPS, side_effect_runs
from ..test_documents import trip


def wrapped(tmp_path: Path, file: str, *arguments: str) -> Path:
    """``idempotent-constructs wrap tests/asl/FILE --key $.trip_id --max-wait 30s ...``: its template."""
    out = tmp_path / file.removesuffix(".asl.json")
    result = CliRunner().invoke(
        cli, ["wrap", str(DOCUMENTS / file), "--key", "$.trip_id", "--max-wait", "30s", "--poll-interval", "1s",
              "--out", str(out), *arguments],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert ("sam deploy" if "sam" in arguments else "aws cloudformation deploy") in result.output
    return out / "template.json"


def function_arn(documents: Deployment, step: str) -> str:
    return f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{documents.physical_id('AWS::Lambda::Function', f'Document{step}')}"


@pytest.fixture(scope="module")
def saga(emulator: LocalEmulator, documents: Deployment, tmp_path_factory: pytest.TempPathFactory) -> Deployment:
    template = wrapped(tmp_path_factory.mktemp("wrap"), "saga-pattern-sam.asl.json")
    # --8<-- [start:deploy]
    parameters = {placeholder: function_arn(documents, step) for placeholder, step in SAGA_FUNCTIONS.items()}
    parameters["snsTopicArn"] = documents.physical_id("AWS::SNS::Topic", "TripNotices")
    return emulator.deploy_template(template, "WrappedSaga", parameters)
    # --8<-- [end:deploy]


@pytest.fixture(scope="module")
def fallback(emulator: LocalEmulator, documents: Deployment, tmp_path_factory: pytest.TempPathFactory) -> Deployment:
    template = wrapped(tmp_path_factory.mktemp("wrap"), "common-fallback-state-jsonata.asl.json", "--namespace", "Fallback")
    parameters = {f"{step}LambdaArn": function_arn(documents, step) for step in ("First", "Second", "Third")}
    return emulator.deploy_template(template, "WrappedFallback", parameters)


def test_the_wrapped_saga_runs_once_and_a_duplicate_replays_it_without_a_lambda_call(saga, documents, unique):
    first = saga.run("", trip(unique))
    assert first.status == "SUCCEEDED", (first.error, first.cause)
    assert "MessageId" in first.output and "Reservation Successful!" in first.entered_states()
    replay = saga.run("", trip(unique))
    assert (replay.status, replay.output, replay.lambda_invocations()) == ("SUCCEEDED", first.output, 0)
    assert side_effect_runs(documents, unique, *SAGA_STEPS, *COMPENSATIONS) == {
        **dict.fromkeys(SAGA_STEPS, 1),
        **dict.fromkeys(COMPENSATIONS, 0),
    }
    (record,) = saga.records_of(first).values()
    assert json.loads(record["data"]["S"]) == first.output


def test_a_concurrent_duplicate_of_the_wrapped_saga_waits_and_gets_the_first_runs_result(saga, documents, emulator, unique):
    with emulator.hold("ProcessPayment", state_machine=saga.state_machine_arn()) as gate:
        holder = saga.start("", trip(unique))
        gate.arrived()
        duplicate = saga.start("", trip(unique))
        time.sleep(2)  # the duplicate finds the key held and polls
        gate.release()
    first, second = saga.wait(holder), saga.wait(duplicate)
    assert (first.status, second.status) == ("SUCCEEDED", "SUCCEEDED")
    assert second.output == first.output and second.lambda_invocations() == 0
    assert side_effect_runs(documents, unique, *SAGA_STEPS) == dict.fromkeys(SAGA_STEPS, 1)


def test_a_wrapped_saga_that_compensates_and_fails_releases_its_key_and_the_retry_runs_it(saga, documents, unique):
    failed = saga.run("", trip(unique, "failProcessPaymentOnce"))
    assert (failed.status, failed.error) == ("FAILED", "Job Failed")
    assert saga.records_of(failed) == {}  # released
    retried = saga.run("", trip(unique, "failProcessPaymentOnce"))
    assert retried.status == "SUCCEEDED", (retried.error, retried.cause)
    assert side_effect_runs(documents, unique, "ProcessPayment", "RefundPayment") == {"ProcessPayment": 2, "RefundPayment": 1}


def test_the_wrapped_jsonata_workflow_runs_once_replays_and_a_duplicate_waits_for_it(fallback, documents, emulator, unique):
    payload = {"trip_id": unique}
    with emulator.hold("SecondLambdaState", state_machine=fallback.state_machine_arn()) as gate:
        holder = fallback.start("", payload)
        gate.arrived()
        duplicate = fallback.start("", payload)
        time.sleep(2)
        gate.release()
    first, second = fallback.wait(holder), fallback.wait(duplicate)
    assert (first.status, first.output) == ("SUCCEEDED", {**payload, "First": "done", "Second": "done", "Third": "done"})
    assert (second.output, second.lambda_invocations()) == (first.output, 0)
    replay = fallback.run("", payload)
    assert (replay.output, replay.lambda_invocations()) == (first.output, 0)
    assert side_effect_runs(documents, unique, "First", "Second", "Third") == {"First": 1, "Second": 1, "Third": 1}
    (record,) = fallback.records_of(first).values()
    assert record["id"]["S"].startswith("Fallback#")


def test_a_wrapped_jsonata_run_that_is_stopped_releases_its_key_through_the_release_function(
    fallback, documents, emulator, unique
):
    # The sample catches every failure of its steps into a Pass that succeeds; a run ends failed only
    # when it is stopped (or times out), and then the template's release function frees the key.
    payload = {"trip_id": unique}
    with emulator.hold("SecondLambdaState", state_machine=fallback.state_machine_arn()) as gate:
        stopped = fallback.start("", payload)
        gate.arrived()
        emulator.client("stepfunctions").stop_execution(executionArn=stopped, error="Operator", cause="stopped by a test")
        gate.release()
    assert fallback.wait(stopped).status == "ABORTED"
    emulator.settle()
    assert fallback.records_of(stopped) == {}
    rerun = fallback.run("", payload)
    assert rerun.status == "SUCCEEDED" and rerun.lambda_invocations() == 3
    assert side_effect_runs(documents, unique, "First", "Second") == {"First": 2, "Second": 1}


def test_the_sam_form_translated_as_sams_transform_would_deploys_and_runs_once_and_replays(emulator, documents, tmp_path, unique):
    template = wrapped(tmp_path, "common-fallback-state-jsonata.asl.json", "--format", "sam", "--namespace", "FallbackSam")
    sam = json.loads(template.read_text())
    assert sam["Transform"] == "AWS::Serverless-2016-10-31"
    # `sam deploy` packages the template, then CloudFormation runs SAM's transform: both done here.
    cloudformation = translated(package(emulator.client("s3"), sam, template.parent))
    (template.parent / "translated.json").write_text(json.dumps(cloudformation))
    parameters = {f"{step}LambdaArn": function_arn(documents, step) for step in ("First", "Second", "Third")}
    deployed = emulator.deploy_template(template.parent / "translated.json", "WrappedFallbackSam", parameters)
    payload = {"trip_id": unique}
    first = deployed.run("", payload)
    assert (first.status, first.output) == ("SUCCEEDED", {**payload, "First": "done", "Second": "done", "Third": "done"})
    replay = deployed.run("", payload)
    assert (replay.output, replay.lambda_invocations()) == (first.output, 0)
    assert side_effect_runs(documents, unique, "First", "Second", "Third") == {"First": 1, "Second": 1, "Third": 1}
