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
from idempotent_constructs.batch import SHARE
from idempotent_constructs.lambda_src import schema
from idempotent_constructs.testing.gaps.payload_limit import PAYLOAD_LIMIT_BYTES, payload_size
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
    assert set(states) == {"Payments.Records", "Payments.Failures"}
    records = states["Payments.Records"]
    assert (records["Items"], records["MaxConcurrency"], records["Next"]) == ("{% $states.input %}", 4, "Payments.Failures")
    # Each iteration gets its record with its share of the answer; the guard, and so the body, the record alone.
    assert records["ItemSelector"] == {"record": "{% $states.context.Map.Item.Value %}", "share": "{% " + SHARE + " %}"}
    assert set(records["ItemProcessor"]["States"]) == {"Payments.Record", "Payments.RecordFailed"}  # no state added
    record = records["ItemProcessor"]["States"]["Payments.Record"]
    assert (record["Arguments"], record["Output"]) == ("{% $states.input.record %}", "{% null %}")
    assert "Payments.Record.Acquire" in record["Branches"][0]["States"]
    (catch,) = record["Catch"]
    assert catch["ErrorEquals"] == ["States.ALL"] and catch["Next"] == "Payments.RecordFailed"
    assert catch["Output"]["itemIdentifier"] == "{% $states.input.record.messageId %}"


@pytest.mark.parametrize(
    ("source", "identifier", "key", "payload"),
    [
        # An SQS message's body is its key (a dead-letter queue redrive gives it a new messageId), compared by it.
        (BatchSource.SQS, "messageId", "$.body", None),
        (BatchSource.KINESIS, "eventID", "$.eventID", "$.data"),
        (BatchSource.DYNAMODB_STREAMS, "eventID", "$.eventID", "$.dynamodb.NewImage"),
        # Behind a Lambda event source mapping, a stream's record is named by its sequence number.
        (BatchSource.KINESIS_MAPPING, "kinesis.sequenceNumber", "$.eventID", "$.kinesis.data"),
        (BatchSource.DYNAMODB_STREAMS_MAPPING, "dynamodb.SequenceNumber", "$.eventID", "$.dynamodb.NewImage"),
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
    assert record["Catch"][0]["Output"]["itemIdentifier"] == "{% $states.input.record." + identifier + " %}"


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


def _jsonata(field: str) -> str:
    return field.removeprefix("{% ").removesuffix(" %}")


def failed_outcomes(node_bin, cases: list[dict]) -> list[dict]:
    """What the Catch's Output of a record answers for each case, ``{"share", "identifier", "error", "cause"}``,
    evaluated by jsonata-js as Step Functions evaluates it."""
    output = definition()["States"]["Payments.Records"]["ItemProcessor"]["States"]["Payments.Record"]["Catch"][0]["Output"]
    fields = ", ".join(f"'{name}': {_jsonata(value)}" for name, value in output.items())
    states = "{'input': {'record': {'messageId': $c.identifier}, 'share': $c.share}, 'errorOutput': {'Error': $c.error, 'Cause': $c.cause}}"
    expression = f"[$map($cases, function($c) {{( $states := {states}; {{{fields}}} )}})]"
    return evaluate(expression, {"cases": cases}, cwd=str(ROOT))


MESSAGE_ID = "7a84030f-44d4-4c29-bd65-39026b114bdf"


def _cut(text: str, marker: str = "\u2026 [cut: ") -> tuple[str, int]:
    """The characters a cut text kept, and how many the marker says were left out."""
    kept, _, told = text.rpartition(marker)
    assert told.endswith(" characters]"), text[-60:]
    return kept, int(told.removesuffix(" characters]").replace(",", ""))


def test_each_record_gets_an_equal_share_that_the_whole_answer_fits_in(node_bin):
    for count in (1, 10, 380, 10_000):
        share = evaluate(f"($states := {{'input': $records}}; {SHARE})", {"records": [{}] * count}, cwd=str(ROOT))
        assert count * share + count + 1 <= PAYLOAD_LIMIT_BYTES - 1_024 < (count * (share + 1) + count + 1)


def test_a_failed_record_answers_within_its_share_a_long_cause_cut_and_marked_its_error_whole(node_bin):
    cases = [
        {"share": 26_000, "identifier": MESSAGE_ID, "error": "Refused", "cause": "x" * 102_400},
        {"share": 26_000, "identifier": MESSAGE_ID, "error": "Refused", "cause": "\u20ac" * 34_134},  # 3 bytes each
        {"share": 684, "identifier": MESSAGE_ID, "error": "Idempotency.BodyFailed", "cause": '{"Error": "x"}\n' * 500},
        {"share": 684, "identifier": MESSAGE_ID, "error": "Refused", "cause": "\U0001f600" * 300},  # 4 bytes, two UTF-16 units
    ]
    for case, outcome in zip(cases, failed_outcomes(node_bin, cases), strict=True):
        assert outcome["itemIdentifier"] == MESSAGE_ID and outcome["error"] == case["error"]
        assert case["share"] - 200 < payload_size(outcome) <= case["share"]
        kept, left_out = _cut(outcome["cause"])
        assert case["cause"].startswith(kept) and len(kept) + left_out == len(case["cause"])


def test_a_cause_that_fits_is_kept_whole_and_an_error_that_passes_the_share_alone_is_cut_too(node_bin):
    cases = [
        {"share": 684, "identifier": MESSAGE_ID, "error": "Refused", "cause": "short"},
        # 684 bytes: the frame's 37, the identifier's 38, the error's 9 and the cause's quotes leave 598.
        {"share": 684, "identifier": MESSAGE_ID, "error": "Refused", "cause": "x" * 598},
        {"share": 684, "identifier": MESSAGE_ID, "error": "Refused", "cause": "x" * 599},
        {"share": 684, "identifier": MESSAGE_ID, "error": "E" * 2_000, "cause": "why" * 100},
    ]
    whole, filled, over, long_error = failed_outcomes(node_bin, cases)
    assert (whole["error"], whole["cause"]) == ("Refused", "short")
    assert filled["cause"] == "x" * 598 and payload_size(filled) == 684
    assert _cut(over["cause"])[1] > 0 and payload_size(over) <= 684
    kept, left_out = _cut(long_error["error"])
    assert kept == "E" * len(kept) and len(kept) + left_out == 2_000
    assert long_error["cause"] == "" and payload_size(long_error) <= 684  # no room left for the cause's marker


def test_the_largest_batch_all_failing_with_the_longest_causes_answers_within_the_quota(node_bin):
    # 380 records of SQS through a pipe fill the 262,144 characters Pipes sends (tests/emulator/test_batch_answers.py).
    count = 380
    share = evaluate(f"($states := {{'input': $records}}; {SHARE})", {"records": [{}] * count}, cwd=str(ROOT))
    cases = [
        {"share": share, "identifier": f"{MESSAGE_ID[:-4]}{n:04d}", "error": "Refused", "cause": "\u00e9x" * 16_384}
        for n in range(count)
    ]
    outcomes = failed_outcomes(node_bin, cases)
    assert payload_size(outcomes) <= PAYLOAD_LIMIT_BYTES
    assert all(payload_size(outcome) <= share for outcome in outcomes)


def test_a_fifo_batch_runs_its_records_in_order_and_answers_the_first_that_failed_and_every_later_one():
    target = stack()
    table = IdempotencyTable(target, "Table")
    batch = IdempotentBatch(target, "Payments", table=table, body=sfn.Pass(target, "Charge"), source=BatchSource.SQS_FIFO)
    sfn.StateMachine(target, "Machine", definition_body=sfn.DefinitionBody.from_chainable(batch))
    states = only_definition(Template.from_stack(target))["States"]
    assert not [state for state in states.values() if state["Type"] == "Map"]  # one record after another
    assert states["Payments.Record"]["Next"] == "Payments.NextRecord"
    assert states["Payments.Record"]["Catch"][0]["Next"] == "Payments.RecordFailed"
    assert states["Payments.RecordFailed"]["Next"] == "Payments.Failures"  # nothing runs after a failure
    (variable,) = states["Payments.Records"]["Assign"]
    answer = states["Payments.Failures"]["Output"].removeprefix("{% ").removesuffix(" %}")
    records = [{"messageId": f"m{n}", "body": "{}"} for n in range(4)]
    for failed, expected in ((-1, []), (0, ["m0", "m1", "m2", "m3"]), (2, ["m2", "m3"]), (3, ["m3"])):
        bound = f"($states := {{'input': $records}}; ${variable} := {{'next': 4, 'failed': {failed}}}; {answer})"
        response = evaluate(bound, {"records": records}, cwd=str(ROOT))
        assert response == {"batchItemFailures": [{"itemIdentifier": message} for message in expected]}, failed


def test_a_fifo_batch_refuses_to_run_records_at_once():
    target = stack()
    with pytest.raises(IdempotencyConfigurationError, match="a FIFO batch runs its records one at a time, in order"):
        IdempotentBatch(
            target,
            "Payments",
            table=IdempotencyTable(target, "Table"),
            body=sfn.Pass(target, "Charge"),
            source=BatchSource.SQS_FIFO,
            max_concurrency=4,
        )
