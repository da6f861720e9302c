"""idempotent_constructs/batch.py: IdempotentBatch runs its body once for each record of a batch inside a guard
keyed on the record, catches a record's failure, and answers with the partial batch response the source reads.
(tests/emulator/test_event_sources.py runs it on the emulator.)"""

from __future__ import annotations

import json

import pytest
from aws_cdk import Duration
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk.assertions import Template

from idempotent_constructs import BatchSource, IdempotencyConfigurationError, IdempotencyTable, IdempotentBatch
from idempotent_constructs.lambda_src import schema
from tests.conftest import ROOT
from tests.jsonata_js import evaluate
from tests.synth import only_definition, stack


def definition(**options) -> dict:
    target = stack()
    batch = IdempotentBatch(
        target, "Payments", table=IdempotencyTable(target, "Table"), body=sfn.Pass(target, "Charge"), **options
    )
    sfn.StateMachine(target, "Machine", definition_body=sfn.DefinitionBody.from_chainable(batch))
    return only_definition(Template.from_stack(target))


def test_each_record_runs_in_a_guard_inside_a_map_and_a_failed_one_is_caught():
    states = definition(max_concurrency=4)["States"]
    records = states["Payments.Records"]
    assert (records["Items"], records["MaxConcurrency"], records["Next"]) == ("{% $states.input %}", 4, "Payments.Failures")
    record = records["ItemProcessor"]["States"]["Payments.Record"]
    assert "Payments.Record.Acquire" in record["Branches"][0]["States"]
    (catch,) = record["Catch"]
    assert catch["ErrorEquals"] == ["States.ALL"] and catch["Next"] == "Payments.RecordFailed"
    assert catch["Output"]["itemIdentifier"] == "{% $states.input.messageId %}"


@pytest.mark.parametrize(
    ("source", "identifier", "key", "payload"),
    [
        # An SQS message's body is its key (a dead-letter queue redrive gives it a new messageId), compared by it.
        (BatchSource.SQS, "messageId", "$.body", None),
        (BatchSource.KINESIS, "eventID", "$.eventID", "$.data"),
        (BatchSource.DYNAMODB_STREAMS, "eventID", "$.eventID", "$.dynamodb.NewImage"),
    ],
)
def test_a_source_names_its_records_identifier_and_keys_each_record_on_what_its_redeliveries_keep(
    source, identifier, key, payload
):
    target = stack()
    batch = IdempotentBatch(
        target, "Batch", table=IdempotencyTable(target, "Table"), body=sfn.Pass(target, "Work"), source=source
    )
    assert batch.guard.key.expression == [key]
    if payload is None:
        assert batch.guard.payload.kind == schema.KIND_NONE
    else:
        assert batch.guard.payload.expression == [payload]
    sfn.StateMachine(target, "Machine", definition_body=sfn.DefinitionBody.from_chainable(batch))
    record = only_definition(Template.from_stack(target))["States"]["Batch.Records"]["ItemProcessor"]["States"]["Batch.Record"]
    assert record["Catch"][0]["Output"]["itemIdentifier"] == "{% $states.input." + identifier + " %}"


@pytest.mark.parametrize(
    ("outcomes", "failures"),
    [
        ([None, None], []),
        ([None, {"itemIdentifier": "m-2", "error": "Blocked", "cause": "x"}, None], [{"itemIdentifier": "m-2"}]),
        (
            [{"itemIdentifier": "m-1", "error": "E"}, {"itemIdentifier": "m-2", "error": "E"}],
            [{"itemIdentifier": "m-1"}, {"itemIdentifier": "m-2"}],
        ),
    ],
)
def test_the_response_names_each_failed_record_and_an_empty_list_when_none_failed(node_bin, outcomes, failures):
    output = definition()["States"]["Payments.Failures"]["Output"]
    expression = output.removeprefix("{% ").removesuffix(" %}")
    response = evaluate(f"($states := {{'input': $outcomes}}; {expression})", {"outcomes": outcomes}, cwd=str(ROOT))
    assert response == {"batchItemFailures": failures}
    assert json.dumps(response).count("error") == 0  # only the identifiers, as the sources document it


def test_a_negative_max_concurrency_and_a_source_that_is_not_one_are_refused():
    target = stack()
    with pytest.raises(IdempotencyConfigurationError) as refused:
        IdempotentBatch(
            target,
            "Batch",
            table=IdempotencyTable(target, "Table"),
            body=sfn.Pass(target, "Work"),
            max_concurrency=-1,
            source="SQS",
        )
    assert "max_concurrency: -1 is negative" in str(refused.value)
    assert "source" in str(refused.value)


def test_metric_failed_records_counts_the_entries_of_record_failed_in_the_execution_log():
    target = stack()
    batch = IdempotentBatch(target, "Payments", table=IdempotencyTable(target, "Table"), body=sfn.Pass(target, "Charge"))
    log_group = logs.LogGroup(target, "Log")
    metric = batch.metric_failed_records(log_group, period=Duration.minutes(1))
    batch.metric_failed_records(log_group)  # a second metric: still the one filter, below
    sfn.StateMachine(
        target,
        "Machine",
        definition_body=sfn.DefinitionBody.from_chainable(batch),
        logs=sfn.LogOptions(destination=log_group, level=sfn.LogLevel.ALL),
    )
    (found,) = Template.from_stack(target).find_resources("AWS::Logs::MetricFilter").values()
    properties = found["Properties"]
    assert properties["FilterPattern"] == '{ ($.type = "PassStateEntered" && $.details.name = "Payments.RecordFailed") }'
    (transformation,) = properties["MetricTransformations"]
    assert transformation["Dimensions"] == [{"Key": "State", "Value": "$.details.name"}]
    rendered = metric.to_metric_config().metric_stat
    assert (rendered.namespace, rendered.metric_name) == (transformation["MetricNamespace"], transformation["MetricName"])
    assert rendered.dimensions[0].value == "Payments.RecordFailed" and rendered.period.to_seconds() == 60


def test_a_batch_leases_a_record_for_an_express_run_and_waits_less_by_default():
    target = stack()
    table = IdempotencyTable(target, "Table")
    batch = IdempotentBatch(target, "Payments", table=table, body=sfn.Pass(target, "Charge"))
    assert (batch.guard.config.lease.to_seconds(), batch.guard.config.max_wait.to_seconds()) == (300, 240)
    chosen = IdempotentBatch(
        target, "Chosen", table=table, body=sfn.Pass(target, "Other"), lease=Duration.minutes(2), max_wait=Duration.seconds(30)
    )
    assert (chosen.guard.config.lease.to_seconds(), chosen.guard.config.max_wait.to_seconds()) == (120, 30)
