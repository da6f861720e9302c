"""idempotent_constructs/_synth/source_advice.py: what starts a workflow in the same app is read at synth, and a key
or payload its redeliveries defeat is warned about with the recipe."""

from __future__ import annotations

import functools
from typing import Any

import pytest
from aws_cdk import App, Duration, Stack
from aws_cdk import aws_apigateway as apigateway
from aws_cdk import aws_apigatewayv2 as apigatewayv2
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kinesis as kinesis
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_pipes as pipes
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk.assertions import Annotations, Match

from idempotent_constructs import (
    BatchSource,
    IdempotencyKey,
    IdempotencyPayload,
    IdempotencyTable,
    IdempotentBatch,
    IdempotentStateMachine,
    InFlightPolicy,
)
from tests.synth import stack

RECIPE = dict(key=IdempotencyKey.from_paths("$[0].messageId"), payload=IdempotencyPayload.from_paths("$[0].body"))
BY_BODY = dict(key=IdempotencyKey.from_paths("$[0].body"), payload=IdempotencyPayload.none())  # with a dead-letter queue
ROLE = "arn:aws:iam::123456789012:role/pipe"


def workflow(target: Stack, name: str = "Orders", **options) -> IdempotentStateMachine:
    """An Express workflow (a pipe redelivers a failed execution only of one) whose records are kept as long as
    an SQS queue keeps a message by default, 4 days, unless ``options`` say otherwise."""
    options.setdefault("state_machine_type", sfn.StateMachineType.EXPRESS)
    options.setdefault("expires_after", Duration.days(4))
    table = target.node.try_find_child("Table") or IdempotencyTable(target, "Table")
    return IdempotentStateMachine(target, name, table=table, definition=sfn.Pass(target, f"{name}Work"), **options)


def pipe(
    target: Stack, source: str, machine: str, name: str = "OrdersPipe", batch_size: int | None = 1, **props
) -> pipes.CfnPipe:
    """A pipe from ``source`` into ``machine``, one SQS message an execution unless ``batch_size`` says otherwise
    (None: the source's default)."""
    if batch_size is not None:
        one = pipes.CfnPipe.PipeSourceSqsQueueParametersProperty(batch_size=batch_size)
        props["source_parameters"] = pipes.CfnPipe.PipeSourceParametersProperty(sqs_queue_parameters=one)
    return pipes.CfnPipe(target, name, role_arn=ROLE, source=source, target=machine, **props)


def queue(target: Stack, **props) -> sqs.Queue:
    """The queue "Queue", whose largest batch of 10 messages Pipes can send a Step Functions target (its messages
    of at most 24 KiB), and whose visibility timeout outlasts an Express execution, unless ``props`` say otherwise."""
    props.setdefault("max_message_size_bytes", 24 * 1024)
    props.setdefault("visibility_timeout", Duration.minutes(5))
    return sqs.Queue(target, "Queue", **props)


@functools.cache
def messages_of(target: Stack) -> Annotations:
    """The stack's messages, once its test has built it: ``Annotations.from_stack`` synthesizes the app again on
    every call, and no test adds to a stack after it has read its messages."""
    return Annotations.from_stack(target)


def warnings(target: Stack) -> list[str]:
    return [message.entry.data for message in messages_of(target).find_warning("*", Match.any_value())]


def errors(target: Stack) -> list[str]:
    return [message.entry.data for message in messages_of(target).find_error("*", Match.any_value())]


def infos(target: Stack) -> list[str]:
    return [message.entry.data for message in messages_of(target).find_info("*", Match.any_value())]


def test_an_sqs_pipe_into_a_workflow_keyed_on_its_whole_input_is_warned_with_the_recipe():
    target = stack()
    orders = workflow(target)
    pipe(target, queue(target).queue_arn, orders.state_machine.state_machine_arn)
    messages_of(target).has_warning(
        "/Test/Orders",
        "an SQS message redelivered through the pipe Test/OrdersPipe gets a new receiptHandle and ApproximateReceiveCount: "
        "with the whole input as the key, each redelivery runs the workflow again; use "
        'key=IdempotencyKey.from_paths("$[0].messageId"), payload=IdempotencyPayload.from_paths("$[0].body") '
        "(docs/guides/event-sources.md) [ack: idempotent-constructs:redelivery-runs-again]",
    )


def test_an_sqs_pipe_into_a_workflow_keyed_on_the_message_but_comparing_the_whole_input_is_warned_of_the_mismatch():
    target = stack()
    orders = workflow(target, key=IdempotencyKey.from_paths("$[0].messageId"))
    # The L1 attribute and a queue ARN written out are recognized as well as the L2's.
    pipe(target, "arn:aws:sqs:us-east-1:123456789012:orders", orders.state_machine.node.default_child.attr_arn)
    (warning,) = warnings(target)
    assert "with the whole input as the payload, each redelivery fails with Idempotency.PayloadMismatch" in warning
    assert warning.endswith("[ack: idempotent-constructs:redelivery-mismatches-payload]")


def test_a_key_or_payload_that_reads_the_receipt_handle_or_the_receive_count_is_warned():
    for options, words in [
        ({"key": IdempotencyKey.from_paths("$[0].receiptHandle")}, "with a selection of receiptHandle as the key"),
        ({"key": IdempotencyKey.from_jmespath("[0].receiptHandle")}, "with a selection of receiptHandle as the key"),
        (
            {**RECIPE, "payload": IdempotencyPayload.from_jsonata("$states.input[0].attributes")},
            "with a selection of attributes.ApproximateReceiveCount as the payload",
        ),
        (
            {**RECIPE, "payload": IdempotencyPayload.from_paths("$[0].body", "$[0].attributes.ApproximateReceiveCount")},
            "with a selection of attributes.ApproximateReceiveCount as the payload",
        ),
    ]:
        target = stack()
        pipe(target, queue(target).queue_arn, workflow(target, **options).state_machine.state_machine_arn)
        assert [w for w in warnings(target) if words in w], (options, warnings(target))


def test_a_recipe_key_and_payload_raise_no_warning():
    target = stack()
    orders = workflow(target, **RECIPE)
    pipe(target, queue(target).queue_arn, orders.state_machine.state_machine_arn)
    # The sent time is not the receive count: the attributes read field by field hold across redeliveries.
    other = stack()
    timed = workflow(other, **{**RECIPE, "payload": IdempotencyPayload.from_paths("$[0].body", "$[0].attributes.SentTimestamp")})
    pipe(other, queue(other).queue_arn, timed.state_machine.state_machine_arn)
    assert warnings(target) == warnings(other) == []


def test_the_message_id_as_the_key_gets_a_note_that_a_producers_resend_runs_again():
    target = stack()
    orders = workflow(target, **RECIPE)
    pipe(target, queue(target).queue_arn, orders.state_machine.state_machine_arn)
    (info,) = infos(target)
    assert info.startswith("an SQS message sent again by a producer's retried SendMessage, through the pipe Test/OrdersPipe,")
    assert "with a selection of messageId as the key, such a duplicate runs the workflow again" in info


def test_a_dynamodb_stream_pipe_retry_is_identical_so_the_whole_input_raises_no_warning():
    target = stack()
    orders = workflow(target)
    table = dynamodb.Table(
        target,
        "Items",
        partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
        stream=dynamodb.StreamViewType.NEW_IMAGE,
    )
    pipe(target, table.table_stream_arn, orders.state_machine.state_machine_arn, batch_size=None)
    assert warnings(target) == infos(target) == []


def test_a_kinesis_pipe_retry_is_identical_so_the_whole_input_gets_only_a_note_about_producer_duplicates():
    target = stack()
    orders = workflow(target)
    pipe(target, kinesis.Stream(target, "Stream").stream_arn, orders.state_machine.state_machine_arn, batch_size=None)
    assert warnings(target) == []
    (info,) = infos(target)
    assert "a new sequenceNumber, eventID and approximateArrivalTimestamp: with the whole input as the key" in info


def test_an_eventbridge_rule_gets_a_note_for_the_whole_input_and_none_for_a_business_key():
    target = stack()
    orders = workflow(target)
    events.Rule(target, "Placed", event_pattern=events.EventPattern(source=["shop"])).add_target(
        targets.SfnStateMachine(orders.state_machine)
    )
    assert warnings(target) == []
    (info,) = infos(target)
    assert info.startswith(
        "an event published again by a producer's retried PutEvents, through the rule Test/Placed, gets a new id"
    )
    other = stack()
    keyed = workflow(other, key=IdempotencyKey.from_paths("$.detail.id"), payload=IdempotencyPayload.from_paths("$.detail"))
    events.Rule(other, "Placed", event_pattern=events.EventPattern(source=["shop"])).add_target(
        targets.SfnStateMachine(keyed.state_machine)
    )
    assert warnings(other) == infos(other) == []


@pytest.mark.parametrize(
    "key",
    [
        IdempotencyKey.whole_input(),
        IdempotencyKey.from_paths("$.detail.bucket.name", "$.detail.object.key", "$.detail.object.sequencer"),
    ],
)
def test_an_s3_rule_gets_a_note_that_speaks_of_s3s_fields_for_a_key_a_re_upload_changes(key):
    target = stack()
    uploads = workflow(target, key=key, payload=IdempotencyPayload.from_paths("$.detail.object.size"))
    events.Rule(
        target, "Uploaded", event_pattern=events.EventPattern(source=["aws.s3"], detail_type=["Object Created"])
    ).add_target(targets.SfnStateMachine(uploads.state_machine))
    (info,) = infos(target)
    assert info.startswith(
        "an S3 event notification sent twice, or the same bytes uploaded again, through the rule Test/Uploaded"
    )
    assert '"$.detail.object.etag"' in info and "detail.orderId" not in info


def test_an_s3_rule_keyed_on_the_objects_content_gets_no_note():
    target = stack()
    key = IdempotencyKey.from_paths("$.detail.bucket.name", "$.detail.object.key", "$.detail.object.etag")
    uploads = workflow(target, key=key, payload=IdempotencyPayload.from_paths("$.detail.object.size"))
    events.Rule(target, "Uploaded", event_pattern=events.EventPattern(source=["aws.s3"])).add_target(
        targets.SfnStateMachine(uploads.state_machine)
    )
    assert warnings(target) == infos(target) == []


def test_a_rule_that_retries_an_event_longer_than_its_records_are_kept_is_warned_and_one_that_retries_less_is_not():
    target = stack()
    orders = workflow(target, key=IdempotencyKey.from_paths("$.detail.id"), expires_after=Duration.minutes(1))
    events.Rule(target, "Placed", event_pattern=events.EventPattern(source=["shop"])).add_target(
        targets.SfnStateMachine(orders.state_machine)
    )
    (warning,) = coded(target, "expires-before-redelivery")
    assert warning.startswith("the rule Test/Placed retries delivering an event for up to 1 day")
    assert "Set expires_after to at least 1 day, or the target's max_event_age below it" in warning
    shorter = stack()
    orders = workflow(shorter, key=IdempotencyKey.from_paths("$.detail.id"), expires_after=Duration.minutes(1))
    events.Rule(shorter, "Placed", event_pattern=events.EventPattern(source=["shop"])).add_target(
        targets.SfnStateMachine(orders.state_machine, max_event_age=Duration.minutes(1))
    )
    assert coded(shorter, "expires-before-redelivery") == []


def test_a_rule_with_an_input_transformer_raises_no_envelope_warning():
    target = stack()
    orders = workflow(target)
    transformed = events.RuleTargetInput.from_object({"order": events.EventField.from_path("$.detail.orderId")})
    events.Rule(target, "Placed", event_pattern=events.EventPattern(source=["shop"])).add_target(
        targets.SfnStateMachine(orders.state_machine, input=transformed)
    )
    assert warnings(target) == infos(target) == []


def test_a_pipe_with_an_input_template_raises_no_envelope_warning():
    target = stack()
    orders = workflow(target)
    pipe(
        target,
        queue(target).queue_arn,
        orders.state_machine.state_machine_arn,
        target_parameters=pipes.CfnPipe.PipeTargetParametersProperty(input_template='{"body": <$.body>}'),
    )
    assert warnings(target) == []


def test_a_workflow_nothing_targets_gets_no_warning():
    target = stack()
    workflow(target)
    queue(target)
    assert warnings(target) == infos(target) == []


def test_a_pipe_into_another_state_machine_does_not_warn_about_this_one():
    target = stack()
    workflow(target)
    other = workflow(target, "Refunds", **RECIPE)
    pipe(target, queue(target).queue_arn, other.state_machine.state_machine_arn)
    assert warnings(target) == []


def test_a_pipe_in_another_stack_is_found_and_a_stack_of_the_same_layout_is_not_confused_with_it():
    app = App()
    producer, twin, consumer = Stack(app, "Workflows"), Stack(app, "Twin"), Stack(app, "Pipes")
    orders = workflow(producer)
    workflow(twin)  # the same logical ids as the producer's
    pipe(consumer, queue(consumer).queue_arn, orders.state_machine.state_machine_arn)
    assert [w for w in warnings(producer) if "through the pipe Pipes/OrdersPipe" in w]
    assert warnings(twin) == []


def test_an_api_gateway_method_that_passes_the_request_id_or_headers_is_warned():
    target = stack()
    express = sfn.StateMachineType.EXPRESS
    orders = workflow(target, state_machine_type=express)
    api = apigateway.RestApi(target, "Api")
    api.root.add_method(
        "POST",
        apigateway.StepFunctionsIntegration.start_execution(
            orders.state_machine, headers=True, request_context=apigateway.RequestContext(request_id=True)
        ),
    )
    messages_of(target).has_warning(
        "/Test/Orders",
        Match.string_like_regexp(
            r"^a request retried by its client through the API method Test/Api/Default/POST gets a new requestId and "
            r"X-Amzn-Trace-Id: with the whole input as the key"
        ),
    )
    # By default the input is the body, the query string and the path: a retry repeats them.
    plain = stack()
    api = apigateway.RestApi(plain, "Api")
    quick = workflow(plain, state_machine_type=express, max_wait=Duration.seconds(20))
    api.root.add_method("POST", apigateway.StepFunctionsIntegration.start_execution(quick.state_machine))
    assert warnings(plain) == []


def test_a_stack_made_without_an_app_is_advised_too():
    # Its app is made on the JavaScript side, whose Python object is a new one each time it is asked for.
    target = Stack()
    orders = workflow(target)
    pipe(target, queue(target).queue_arn, orders.state_machine.state_machine_arn)
    assert [w for w in warnings(target) if "through the pipe Default/OrdersPipe" in w]


def test_a_key_and_payload_of_the_first_record_under_the_default_batch_of_ten_are_refused():
    # A batch [a copy of p-1, p-3] would replay p-1's output: p-3 never charged, and deleted by the pipe.
    target = stack()
    orders = workflow(target, **RECIPE)
    pipe(target, queue(target).queue_arn, orders.state_machine.state_machine_arn, batch_size=None)
    key, payload = errors(target)
    assert key.startswith(
        "the pipe Test/OrdersPipe sends up to 10 records to one execution (sqsQueueParameters.batchSize): with "
        "$[0].messageId as the key, every record of a batch is keyed on the first one's"
    )
    assert "they are lost. Set the pipe's batch size to 1, or make the workflow an IdempotentBatch" in key
    assert "with $[0].body as the payload, every record of a batch is checked on the first one's" in payload


def test_a_stream_pipe_with_no_batch_size_sends_more_than_one_record_so_a_first_record_key_is_refused():
    target = stack()
    orders = workflow(target, key=IdempotencyKey.from_jsonata("$states.input[0].eventID"))
    pipe(target, kinesis.Stream(target, "Stream").stream_arn, orders.state_machine.state_machine_arn, batch_size=None)
    (error,) = errors(target)
    assert "sends more than one record to one execution (kinesisStreamParameters.batchSize)" in error


def test_a_batch_is_advised_a_guard_on_each_record_never_a_first_record_key():
    target = stack()
    orders = workflow(target)
    pipe(target, queue(target).queue_arn, orders.state_machine.state_machine_arn, batch_size=10)
    (warning,) = warnings(target)
    assert (
        'use an IdempotentBatch, which guards each record, with key=IdempotencyKey.from_paths("$.messageId"), '
        'payload=IdempotencyPayload.from_paths("$.body")' in warning
    )
    assert "[0]" not in warning and errors(target) == []


def test_a_batch_of_one_record_keyed_on_it_is_not_refused():
    target = stack()
    orders = workflow(target, **RECIPE)
    pipe(target, queue(target).queue_arn, orders.state_machine.state_machine_arn, batch_size=1)
    assert errors(target) == []


def test_a_pipe_into_a_standard_workflow_is_warned_that_a_failed_message_is_never_redelivered():
    target = stack()
    orders = workflow(target, state_machine_type=sfn.StateMachineType.STANDARD, **RECIPE)
    pipe(target, queue(target).queue_arn, orders.state_machine.state_machine_arn)
    (warning,) = warnings(target)
    assert warning.startswith(
        "the pipe Test/OrdersPipe starts the workflow (a Standard workflow, which Pipes can only start asynchronously): "
        "the pipe is done once the execution starts, so a message whose execution fails is deleted from its source "
        "and never redelivered."
    )
    assert warning.endswith("[ack: idempotent-constructs:pipe-never-redelivers]")


def test_a_pipe_that_fires_and_forgets_an_express_workflow_is_warned_and_one_that_waits_is_not():
    for invocation, expected in (("FIRE_AND_FORGET", 1), ("REQUEST_RESPONSE", 0)):
        target = stack()
        orders = workflow(target, **RECIPE)
        machine = pipes.CfnPipe.PipeTargetStateMachineParametersProperty(invocation_type=invocation)
        parameters = pipes.CfnPipe.PipeTargetParametersProperty(step_function_state_machine_parameters=machine)
        pipe(target, queue(target).queue_arn, orders.state_machine.state_machine_arn, target_parameters=parameters)
        assert len([w for w in warnings(target) if "starts the workflow with FIRE_AND_FORGET" in w]) == expected


def test_records_that_expire_before_the_queue_lets_go_of_a_message_are_warned():
    target = stack()
    orders = workflow(target, **RECIPE, expires_after=Duration.hours(24))
    pipe(target, queue(target).queue_arn, orders.state_machine.state_machine_arn)
    (warning,) = warnings(target)
    assert warning.startswith(
        "the queue Test/Queue keeps a message up to 4 days, and the pipe Test/OrdersPipe may deliver it again (a "
        "redelivery, a redrive from the dead-letter queue) until then: a record expires 1 day after it completes "
        "(expires_after), so a message that comes again later runs the workflow again. Set expires_after to at least 4 days"
    )
    assert warning.endswith("[ack: idempotent-constructs:expires-before-redelivery]")


def test_a_dead_letter_queue_that_keeps_a_message_longer_than_its_queue_is_what_expires_after_must_outlast():
    target = stack()
    orders = workflow(target, **RECIPE)  # 4 days
    dead_letters = sqs.Queue(target, "DeadLetters", retention_period=Duration.days(14))
    source = queue(target, dead_letter_queue=sqs.DeadLetterQueue(queue=dead_letters, max_receive_count=3))
    pipe(target, source.queue_arn, orders.state_machine.state_machine_arn)
    (warning,) = coded(target, "expires-before-redelivery")
    assert warning.startswith("the dead-letter queue Test/DeadLetters keeps a message up to 14 days")
    assert "Set expires_after to at least 14 days" in warning
    other = stack()
    kept = workflow(other, **BY_BODY, expires_after=Duration.days(14))
    dead_letters = sqs.Queue(other, "DeadLetters", retention_period=Duration.days(14))
    source = queue(other, dead_letter_queue=sqs.DeadLetterQueue(queue=dead_letters, max_receive_count=3))
    pipe(other, source.queue_arn, kept.state_machine.state_machine_arn)
    assert warnings(other) == []


def test_a_fifo_queue_keeps_a_message_its_retention_and_then_its_dead_letter_queues_from_a_new_enqueue_time():
    # "For FIFO queues, the enqueue timestamp resets when the message is moved to a dead-letter queue".
    target = stack()
    orders = workflow(target, **BY_BODY, expires_after=Duration.days(14))
    dead_letters = sqs.Queue(target, "DeadLetters", retention_period=Duration.days(14), fifo=True)
    source = sqs.Queue(
        target,
        "Queue",
        fifo=True,
        retention_period=Duration.days(4),
        dead_letter_queue=sqs.DeadLetterQueue(queue=dead_letters, max_receive_count=3),
    )
    pipe(target, source.queue_arn, orders.state_machine.state_machine_arn)
    (warning,) = coded(target, "expires-before-redelivery")
    assert warning.startswith(
        "the queue Test/Queue, then the dead-letter queue Test/DeadLetters (FIFO: a new enqueue time there) keeps a "
        "message up to 18 days"
    )


def coded(target: Stack, code: str) -> list[str]:
    """The warnings of ``target`` whose acknowledgement code is ``idempotent-constructs:{code}``."""
    return [warning for warning in warnings(target) if warning.endswith(f"[ack: idempotent-constructs:{code}]")]


def queue_with_dead_letters(target: Stack) -> sqs.Queue:
    dead_letters = sqs.Queue(target, "DeadLetters", retention_period=Duration.days(4))
    return queue(target, dead_letter_queue=sqs.DeadLetterQueue(queue=dead_letters, max_receive_count=3))


def test_a_message_id_key_behind_a_queue_with_a_dead_letter_queue_is_warned_that_a_redrive_runs_again():
    target = stack()
    orders = workflow(target, **RECIPE)
    pipe(target, queue_with_dead_letters(target).queue_arn, orders.state_machine.state_machine_arn)
    (warning,) = coded(target, "dead-letter-redrive-runs-again")
    assert warning.startswith(
        "the pipe Test/OrdersPipe reads a queue whose messages may go to the dead-letter queue Test/DeadLetters, and a "
        "redrive from it sends each message again as a new one, with a new messageId: with a selection of messageId as "
        "the key, a redriven message that had completed runs the workflow again."
    )
    assert 'Use key=IdempotencyKey.from_paths("$[0].body"), payload=IdempotencyPayload.none()' in warning
    # Keyed on the body, nothing to say; and without a dead-letter queue, a message id is never redriven.
    keyed = stack()
    by_body = workflow(keyed, **BY_BODY)
    pipe(keyed, queue_with_dead_letters(keyed).queue_arn, by_body.state_machine.state_machine_arn)
    assert warnings(keyed) == []
    alone = stack()
    pipe(alone, queue(alone).queue_arn, workflow(alone, **RECIPE).state_machine.state_machine_arn)
    assert coded(alone, "dead-letter-redrive-runs-again") == []


def test_an_idempotent_batch_keyed_on_the_message_id_behind_a_dead_letter_queue_is_warned_and_its_default_is_not():
    target = stack()
    key = IdempotencyKey.from_paths("$.messageId")
    machine = batch_machine(target, sfn.StateMachineType.EXPRESS, key=key, expires_after=Duration.days(4))
    pipe(target, queue_with_dead_letters(target).queue_arn, machine.state_machine_arn, batch_size=None)
    (warning,) = coded(target, "dead-letter-redrive-runs-again")
    assert 'Use key=IdempotencyKey.from_paths("$.body"), payload=IdempotencyPayload.none()' in warning
    default = stack()
    machine = batch_machine(default, sfn.StateMachineType.EXPRESS, expires_after=Duration.days(4))
    pipe(default, queue_with_dead_letters(default).queue_arn, machine.state_machine_arn, batch_size=None)
    assert warnings(default) == []


def api_into(orders: IdempotentStateMachine) -> None:
    api = apigateway.RestApi(Stack.of(orders), "Api")
    api.root.add_method("POST", apigateway.StepFunctionsIntegration.start_execution(orders.state_machine))


def test_a_duplicate_that_may_wait_past_the_apis_timeout_is_warned_with_the_fail_and_409_fix():
    target = stack()
    api_into(workflow(target))  # Express: on_in_flight WAIT, for up to 4 minutes by default
    (warning,) = warnings(target)
    assert warning.startswith(
        "the API method Test/Api/Default/POST waits for the execution (StartSyncExecution) at most 29 seconds, its "
        "integration's timeout, and a duplicate that comes while the first request runs waits up to 4 minutes for it"
    )
    assert "Set on_in_flight=InFlightPolicy.FAIL and answer Idempotency.InFlight with a 409" in warning
    assert warning.endswith("[ack: idempotent-constructs:duplicate-waits-past-api-timeout]")


def http_api_into(orders: IdempotentStateMachine, **options: Any) -> None:
    """An HTTP API route whose AWS service integration starts ``orders`` synchronously, its body the input."""
    scope = Stack.of(orders)
    api = apigatewayv2.CfnApi(scope, "HttpApi", name="orders", protocol_type="HTTP")
    role = iam.Role(scope, "HttpApiRole", assumed_by=iam.ServicePrincipal("apigateway.amazonaws.com"))
    orders.state_machine.grant(role, "states:StartSyncExecution")
    apigatewayv2.CfnIntegration(
        scope,
        "StartIntegration",
        api_id=api.ref,
        integration_type="AWS_PROXY",
        integration_subtype="StepFunctions-StartSyncExecution",
        credentials_arn=role.role_arn,
        payload_format_version="1.0",
        request_parameters={"StateMachineArn": orders.state_machine.state_machine_arn, "Input": "$request.body"},
        **options,
    )


def test_an_http_apis_synchronous_integration_has_its_timeout_checked_as_a_rest_apis():
    target = stack()
    http_api_into(workflow(target))
    (warning,) = warnings(target)
    assert warning.startswith(
        "the HTTP API integration Test/StartIntegration waits for the execution (StartSyncExecution) at most 30 seconds"
    )
    shorter = stack()
    http_api_into(workflow(shorter, max_wait=Duration.seconds(25)), timeout_in_millis=20_000)
    (warning,) = warnings(shorter)
    assert "at most 20 seconds" in warning
    fitting = stack()
    http_api_into(workflow(fitting, max_wait=Duration.seconds(25)))
    assert warnings(fitting) == []


def test_a_duplicate_that_fails_at_once_or_waits_less_than_the_timeout_is_not_warned():
    for options in ({"on_in_flight": InFlightPolicy.FAIL}, {"max_wait": Duration.seconds(25)}):
        target = stack()
        api_into(workflow(target, **options))
        assert warnings(target) == [], options


def batch_machine(target: Stack, kind: sfn.StateMachineType, **options) -> sfn.StateMachine:
    table = IdempotencyTable(target, "Table")
    batch = IdempotentBatch(
        target, "Payments", table=table, body=sfn.Pass(target, "Charge"), lease=Duration.minutes(5), **options
    )
    definition = sfn.DefinitionBody.from_chainable(batch)
    return sfn.StateMachine(target, "Machine", definition_body=definition, state_machine_type=kind)


def test_a_pipe_into_a_state_machine_holding_an_idempotent_batch_is_advised_on_the_batch():
    target = stack()
    machine = batch_machine(target, sfn.StateMachineType.STANDARD)
    pipe(target, queue(target).queue_arn, machine.state_machine_arn, batch_size=None)  # 10 records
    found = messages_of(target).find_warning("/Test/Payments", Match.any_value())
    codes = sorted(message.entry.data.rsplit("[ack: ", 1)[1] for message in found)
    assert codes == ["idempotent-constructs:expires-before-redelivery]", "idempotent-constructs:pipe-never-redelivers]"]
    assert errors(target) == []  # its records are keyed one by one: a batch of ten is what it expects


def test_an_idempotent_batch_behind_a_waiting_pipe_whose_records_outlast_the_queue_gets_no_advice():
    target = stack()
    machine = batch_machine(target, sfn.StateMachineType.EXPRESS, expires_after=Duration.days(4))
    pipe(target, queue(target).queue_arn, machine.state_machine_arn, batch_size=None)
    assert warnings(target) == errors(target) == []


def test_an_idempotent_batch_keyed_on_a_records_receipt_handle_is_given_the_recipe_of_a_record():
    target = stack()
    key = IdempotencyKey.from_paths("$.receiptHandle")
    machine = batch_machine(target, sfn.StateMachineType.EXPRESS, key=key, expires_after=Duration.days(4))
    pipe(target, queue(target).queue_arn, machine.state_machine_arn, batch_size=None)
    (warning,) = warnings(target)
    assert "with a selection of receiptHandle as the key, each redelivery runs the workflow again" in warning
    assert 'use key=IdempotencyKey.from_paths("$.messageId"), payload=IdempotencyPayload.from_paths("$.body")' in warning


def test_a_pipe_whose_batch_can_pass_what_pipes_sends_a_step_functions_target_is_warned_with_the_size_that_fits():
    target = stack()
    orders = workflow(target, **RECIPE)
    pipe(target, queue(target, max_message_size_bytes=None).queue_arn, orders.state_machine.state_machine_arn)  # 256 KiB
    (warning,) = warnings(target)
    assert warning.startswith(
        "the pipe Test/OrdersPipe may send one message of up to 262,144 bytes each (its queue's maximumMessageSize), "
        "about 263,168 characters in their records"
    )
    assert "Pipes sends a Step Functions target at most 262,144 characters, the batch as a whole" in warning
    assert "Set the queue's maximumMessageSize to 261,120 bytes or less" in warning
    assert warning.endswith("[ack: idempotent-constructs:pipe-batch-past-262144-characters]")


def test_a_batch_of_ten_fits_with_messages_of_24_kib_and_not_of_26():
    for size, expected in ((24 * 1024, []), (26 * 1024, ["Set the queue's maximumMessageSize to 25,190 bytes or less"])):
        target = stack()
        machine = batch_machine(target, sfn.StateMachineType.EXPRESS, expires_after=Duration.days(4))
        pipe(target, queue(target, max_message_size_bytes=size).queue_arn, machine.state_machine_arn, batch_size=None)
        assert [fix for fix in expected for warning in warnings(target) if fix in warning] == expected, size
        assert len(warnings(target)) == len(expected)


def test_a_batch_too_large_for_any_message_size_is_told_the_batch_size_that_fits():
    target = stack()
    machine = batch_machine(target, sfn.StateMachineType.EXPRESS, expires_after=Duration.days(4))
    pipe(target, queue(target, max_message_size_bytes=1024).queue_arn, machine.state_machine_arn, batch_size=200)
    (warning,) = warnings(target)
    assert "a batch of 200 messages of up to 1,024 bytes each" in warning
    assert "Set the pipe's batch size to 128 or less" in warning


def starter_function(machine: sfn.StateMachine) -> lambda_.Function:
    """A function that may start ``machine`` and wait for its answer (a starter function)."""
    function = lambda_.Function(
        Stack.of(machine),
        "Starter",
        runtime=lambda_.Runtime.PYTHON_3_13,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(event, context): pass"),
    )
    machine.grant_start_sync_execution(function)
    return function


def starter(machine: sfn.StateMachine, **source) -> None:
    """A starter function of ``machine`` behind an SQS event source mapping with the ``source`` options."""
    starter_function(machine).add_event_source(sources.SqsEventSource(queue(Stack.of(machine)), **source))


def test_a_starter_function_of_a_batch_whose_mapping_ignores_the_partial_response_is_warned():
    target = stack()
    starter(batch_machine(target, sfn.StateMachineType.EXPRESS, expires_after=Duration.days(4)), report_batch_item_failures=False)
    (warning,) = warnings(target)
    assert (
        warning.startswith("the event source mapping Test/Starter/SqsEventSource:TestQueue")
        and "Lambda ignores the batch's partial batch response and deletes a failed record with the others" in warning
    )
    assert warning.endswith("[ack: idempotent-constructs:mapping-ignores-partial-batch-response]")


def test_a_starter_function_that_reports_failures_is_advised_only_on_the_queues_retention():
    reporting = stack()
    starter(
        batch_machine(reporting, sfn.StateMachineType.EXPRESS, expires_after=Duration.days(4)), report_batch_item_failures=True
    )
    assert warnings(reporting) == errors(reporting) == []
    short = stack()
    starter(batch_machine(short, sfn.StateMachineType.EXPRESS, expires_after=Duration.hours(1)), report_batch_item_failures=True)
    (warning,) = warnings(short)
    assert warning.startswith(
        "the queue Test/Queue keeps a message up to 4 days, and the event source mapping Test/Starter/SqsEventSource:TestQueue"
    )
    assert "may deliver it again (a redelivery, a redrive from the dead-letter queue)" in warning


def stream_of(target: Stack, kind: str) -> Any:
    """A Kinesis stream, or a DynamoDB table whose stream holds each change's new image."""
    if kind == "kinesis":
        return kinesis.Stream(target, "Stream")
    key = dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING)
    return dynamodb.Table(target, "Items", partition_key=key, stream=dynamodb.StreamViewType.NEW_IMAGE)


def stream_arn(stream: Any) -> str:
    return stream.stream_arn if isinstance(stream, kinesis.Stream) else stream.table_stream_arn


@pytest.mark.parametrize(
    ("kind", "parameters"), [("kinesis", "kinesisStreamParameters"), ("dynamodb", "dynamoDbStreamParameters")]
)
def test_a_stream_pipe_that_never_redelivers_is_warned_with_the_pipes_own_retry_settings(kind, parameters):
    target = stack()
    orders = workflow(target, state_machine_type=sfn.StateMachineType.STANDARD)
    pipe(target, stream_arn(stream_of(target, kind)), orders.state_machine.state_machine_arn, batch_size=None)
    (warning,) = coded(target, "pipe-never-redelivers")
    assert f"redelivered until the pipe's {parameters}.maximumRetryAttempts or maximumRecordAgeInSeconds" in warning
    assert "maxReceiveCount" not in warning


STREAMS = [
    ("kinesis", BatchSource.KINESIS, BatchSource.KINESIS_MAPPING),
    ("dynamodb", BatchSource.DYNAMODB_STREAMS, BatchSource.DYNAMODB_STREAMS_MAPPING),
]


def refusals(target: Stack) -> list[str]:
    return [error for error in errors(target) if "reads the records of a failed batch's answer" in error]


@pytest.mark.parametrize(("kind", "piped", "mapped"), STREAMS)
def test_a_batch_behind_a_stream_pipe_names_a_failed_record_by_its_event_id_or_is_refused(kind, piped, mapped):
    for source, refused in ((piped, False), (mapped, True), (BatchSource.SQS, True)):
        target = stack()
        machine = batch_machine(target, sfn.StateMachineType.EXPRESS, source=source, expires_after=Duration.days(4))
        pipe(target, stream_arn(stream_of(target, kind)), machine.state_machine_arn, batch_size=None)
        assert len(refusals(target)) == refused, source
        if refused:
            assert refusals(target)[0].startswith("the pipe Test/OrdersPipe reads the records of a failed batch's answer")
            assert f"this IdempotentBatch's source is BatchSource.{source.name}" in refusals(target)[0]
            assert f"Pass source=BatchSource.{piped.name}" in refusals(target)[0]


@pytest.mark.parametrize(("kind", "piped", "mapped"), STREAMS)
def test_a_batch_behind_a_lambda_mapping_names_a_failed_record_by_its_sequence_number_or_is_refused(kind, piped, mapped):
    for source, refused in ((mapped, False), (piped, True)):
        target = stack()
        machine = batch_machine(target, sfn.StateMachineType.EXPRESS, source=source, expires_after=Duration.days(4))
        function = starter_function(machine)
        stream = stream_of(target, kind)
        position = lambda_.StartingPosition.TRIM_HORIZON
        mapping = (
            sources.KinesisEventSource(stream, starting_position=position, report_batch_item_failures=True)
            if kind == "kinesis"
            else sources.DynamoEventSource(stream, starting_position=position, report_batch_item_failures=True)
        )
        function.add_event_source(mapping)
        assert len(refusals(target)) == refused, source
        if refused:
            assert refusals(target)[0].startswith("the event source mapping Test/Starter/")
            assert f"Pass source=BatchSource.{mapped.name}" in refusals(target)[0]


def test_a_queue_whose_visibility_timeout_is_shorter_than_the_express_run_its_pipe_waits_for_is_warned():
    target = stack()
    orders = workflow(target, **RECIPE)
    pipe(target, queue(target, visibility_timeout=Duration.seconds(30)).queue_arn, orders.state_machine.state_machine_arn)
    (warning,) = coded(target, "visibility-timeout-shorter-than-run")
    assert warning.startswith(
        "the queue Test/Queue has a visibility timeout of 30 s, and the pipe Test/OrdersPipe needs 300 s (the longest an "
        "Express execution runs, 5 minutes, where its state machine's timeout says no less)"
    )
    assert "Set the queue's visibility timeout to at least 300 s" in warning


def test_a_state_machine_timeout_within_the_visibility_timeout_and_a_standard_workflow_draw_no_visibility_warning():
    short = stack()
    orders = workflow(short, **RECIPE, timeout=Duration.seconds(20))
    pipe(short, queue(short, visibility_timeout=Duration.seconds(30)).queue_arn, orders.state_machine.state_machine_arn)
    assert coded(short, "visibility-timeout-shorter-than-run") == []
    standard = stack()  # the pipe starts it and is done: the message is deleted, visibility or not
    orders = workflow(standard, **RECIPE, state_machine_type=sfn.StateMachineType.STANDARD)
    pipe(standard, queue(standard, visibility_timeout=Duration.seconds(30)).queue_arn, orders.state_machine.state_machine_arn)
    assert coded(standard, "visibility-timeout-shorter-than-run") == []


def test_a_mappings_queue_needs_six_times_its_starter_functions_timeout():
    for function_timeout, expected in ((Duration.minutes(1), 1), (Duration.seconds(40), 0)):
        target = stack()
        machine = batch_machine(target, sfn.StateMachineType.EXPRESS, expires_after=Duration.days(4))
        function = starter_function(machine)
        cfn = function.node.default_child
        assert isinstance(cfn, lambda_.CfnFunction)
        cfn.timeout = int(function_timeout.to_seconds())
        function.add_event_source(sources.SqsEventSource(queue(target), report_batch_item_failures=True))
        found = coded(target, "visibility-timeout-shorter-than-run")
        assert len(found) == expected, function_timeout
        if expected:
            assert "needs 360 s (six times the timeout of its function Test/Starter, 60 s, as AWS asks of a mapping)" in found[0]


def test_a_batch_in_a_state_machine_of_yours_is_warned_from_its_definitions_timeout():
    for timeout, expected in ((Duration.minutes(2), ["needs 120 s (the state machine's timeout)"]), (Duration.seconds(20), [])):
        target = stack()
        table = IdempotencyTable(target, "Table")
        batch = IdempotentBatch(target, "Payments", table=table, body=sfn.Pass(target, "Charge"), max_wait=Duration.seconds(10))
        machine = sfn.StateMachine(
            target,
            "Machine",
            definition_body=sfn.DefinitionBody.from_chainable(batch),
            state_machine_type=sfn.StateMachineType.EXPRESS,
            timeout=timeout,
        )
        pipe(target, queue(target, visibility_timeout=Duration.seconds(30)).queue_arn, machine.state_machine_arn, batch_size=None)
        found = coded(target, "visibility-timeout-shorter-than-run")
        assert [part for part in expected for warning in found if part in warning] == expected and len(found) == len(expected)


def test_a_batch_behind_a_fifo_queue_keeps_its_order_or_is_refused():
    for fifo, source, refused in (
        (True, BatchSource.SQS, True),
        (True, BatchSource.SQS_FIFO, False),
        (False, BatchSource.SQS_FIFO, False),  # in order behind a standard queue: only slower
    ):
        target = stack()
        machine = batch_machine(target, sfn.StateMachineType.EXPRESS, source=source, expires_after=Duration.days(4))
        pipe(target, queue(target, fifo=fifo).queue_arn, machine.state_machine_arn, batch_size=None)
        assert len(refusals(target)) == refused, (fifo, source)
        if refused:
            assert (
                "reads the records of a failed batch's answer by what BatchSource.SQS_FIFO names them by and in its order"
                in (refusals(target)[0])
            )
            assert "or its message groups lose their order. Pass source=BatchSource.SQS_FIFO" in refusals(target)[0]
