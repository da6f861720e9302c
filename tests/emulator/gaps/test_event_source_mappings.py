"""testing.gaps.event_source_mappings: a message sent to a queue mapped to a function stays on the queue for
the harness's mapping to deliver; moto alone hands it to the function on send, alone, and deletes it."""

from __future__ import annotations

import uuid


def mapped_queue(emulator, function_arn: str) -> str:
    sqs = emulator.client("sqs")
    url = sqs.create_queue(QueueName=f"mapped-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    emulator.client("lambda").create_event_source_mapping(EventSourceArn=arn, FunctionName=function_arn, BatchSize=5)
    return url


def received(emulator, url: str) -> list[dict]:
    answer = emulator.client("sqs").receive_message(
        QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["ApproximateReceiveCount"]
    )
    return answer.get("Messages", [])


def test_a_message_to_a_mapped_queue_waits_on_the_queue_and_the_mapping_is_listed(emulator, echo_function):
    url = mapped_queue(emulator, echo_function)
    emulator.client("sqs").send_message(QueueUrl=url, MessageBody="payment")
    (message,) = received(emulator, url)
    assert (message["Body"], message["Attributes"]["ApproximateReceiveCount"]) == ("payment", "1")
    mappings = emulator.client("lambda").list_event_source_mappings(FunctionName=echo_function)["EventSourceMappings"]
    assert any(mapping["BatchSize"] == 5 for mapping in mappings)


def test_without_the_workaround_moto_delivers_on_send_and_deletes_the_message(emulator, echo_function):
    with emulator.without_workaround("event_source_mappings"):
        url = mapped_queue(emulator, echo_function)
        emulator.client("sqs").send_message(QueueUrl=url, MessageBody="payment")
    assert received(emulator, url) == []
