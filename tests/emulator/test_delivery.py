"""Emulator end-to-end (idempotent_constructs/testing/delivery/): a queue of payments drained through a pipe
(batch 10, REQUEST_RESPONSE) into an Express workflow made of IdempotentBatch, with producer duplicates,
flaky charges, a conflicting duplicate, a body that is not JSON and a lost acknowledgement: each valid payment
is charged once and exactly the two poison messages reach the dead-letter queue. A pipe into a Standard
workflow deletes a failed message: it is never delivered again (issue 41)."""

from __future__ import annotations

import json
import uuid

import pytest
from aws_cdk import App, RemovalPolicy, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_stepfunctions as sfn

from idempotent_constructs import IdempotencyKey, IdempotencyPayload, IdempotencyTable, IdempotentBatch
from idempotent_constructs.testing import Deployment, LocalEmulator, delivery
from idempotent_constructs.testing.delivery import FIRE_AND_FORGET, EventSourceMapping, Pipe, StreamPipe, messages_in
from tests import recipes
from tests.samples import docs_sample
from tests.stacks import counted, side_effect_runs, side_effects_table

BODY = "$parse($states.input.body)"
DATA = "$parse($base64decode($states.input.data))"


def payment(scope: Stack, name: str, counters: dynamodb.ITable, content: str = BODY) -> sfn.IChainable:
    """One record's body: charges the payment in its body (``content``: a stream record's data), counted in
    ``SideEffects`` under ``{name}#{payment id}``, and fails on the payment's first receive where it says
    ``flaky``."""
    charge = recipes.charge(scope, name, content + ".payment_id", counters.table_name)
    flaky = sfn.Condition.jsonata("{% " + content + ".flaky = true and $states.input.attributes.ApproximateReceiveCount = '1' %}")
    return (
        sfn.Choice.jsonata(scope, f"{name}Flaky")
        .when(flaky, sfn.Fail(scope, f"{name}Declined", error="Declined"))
        .otherwise(charge)
    )


class PaymentsStack(Stack):
    """The event sources guide's whole stack (docs/samples/payments_pipe.py): ``Queue`` (``DeadLetters`` after
    three receives) through ``PaymentsPipe`` into ``PaymentsMachine``, an IdempotentBatch keyed on the payment
    id in each message's body; its starter function ``PaymentsStarter`` behind a mapping from ``StarterQueue``
    (``StarterDeadLetters`` after three receives) into the same workflow;
    ``StandardPaymentsMachine``, the same batch in a Standard workflow; and the guide's stream pipes
    (docs/samples/stream_pipes.py): ``Stream`` through ``StreamPipe`` into ``StreamedMachine``, and the table
    ``Changes``'s stream through ``ChangesPipe`` into ``ChangedMachine``, whose change fails where it is declined."""

    def __init__(self, scope: App, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        table = IdempotencyTable(self, "Idempotency", removal_policy=RemovalPolicy.DESTROY)
        counters = side_effects_table(self)
        by_payment = dict(key=IdempotencyKey.from_jsonata(BODY + ".payment_id"), payload=IdempotencyPayload.from_jsonata(BODY))
        sample = docs_sample("payments_pipe")
        machine = sample.payments_pipe(self, table, payment(self, "Payments", counters), **by_payment)
        sample.payments_starter(self, sample.payments_queue(self, "Starter"), machine)
        standard = IdempotentBatch(
            self, "StandardPayments", table=table, body=payment(self, "StandardPayments", counters), **by_payment
        )
        standard_machine = sfn.StateMachine(
            self, "StandardPaymentsMachine", definition_body=sfn.DefinitionBody.from_chainable(standard)
        )
        # The event sources guide's stream pipes (docs/samples/stream_pipes.py).
        streams = docs_sample("stream_pipes")
        streamed_machine = streams.kinesis_pipe(self, table, payment(self, "Streamed", counters, DATA))
        image = "$states.input.dynamodb.NewImage"
        declined = sfn.Condition.jsonata("{% $exists(" + image + ".declined) %}")
        changed = (
            sfn.Choice.jsonata(self, "ChangedDeclined")
            .when(declined, sfn.Fail(self, "ChangedFails", error="Declined"))
            .otherwise(recipes.charge(self, "Changed", image + ".payment_id.S", counters.table_name))
        )
        changed_machine = streams.dynamodb_pipe(self, table, changed)
        for each in (machine, standard_machine, streamed_machine, changed_machine):
            counters.grant_read_write_data(each)


@pytest.fixture(scope="module")
def payments(emulator: LocalEmulator) -> Deployment:
    return emulator.deploy_stack(PaymentsStack(App(), "Payments"))


def queue_url(deployment: Deployment, name: str) -> str:
    return deployment.physical_id("AWS::SQS::Queue", name)  # a queue's physical id is its URL


def charges(deployment: Deployment, *payments: str, workflow: str = "Payments") -> dict[str, int]:
    return side_effect_runs(deployment, workflow, *payments)


class RedriveStack(Stack):
    """The event sources guide's queue, pipe and workflow once more (docs/samples/payments_pipe.py), the batch
    keyed as it is by default (each message's body), for a redrive from the dead-letter queue (issue 53)."""

    def __init__(self, scope: App, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        counters = side_effects_table(self)
        table = IdempotencyTable(self, "Idempotency", removal_policy=RemovalPolicy.DESTROY)
        machine = docs_sample("payments_pipe").payments_pipe(self, table, payment(self, "Redriven", counters))
        counters.grant_read_write_data(machine)


@pytest.fixture(scope="module")
def redrives(emulator: LocalEmulator) -> Deployment:
    return emulator.deploy_stack(RedriveStack(App(), "Redrives"))


def test_payments_charged_then_dead_lettered_are_redriven_as_new_messages_and_replay_without_a_second_charge(redrives):
    run = uuid.uuid4().hex[:8]
    queue, dead_letters = queue_url(redrives, "Queue"), queue_url(redrives, "DeadLetters")
    valid = [{"payment_id": f"{run}-{n}", "amount": n} for n in range(3)]
    send(redrives, queue, *(json.dumps(payment) for payment in valid))
    # Each batch is charged, but its acknowledgement is lost three times: the queue's maxReceiveCount (3) sends
    # the messages to the dead-letter queue, all charged already.
    Pipe.of(redrives, "PaymentsPipe", lose_acknowledgements=3).drain()
    assert charges(redrives, *(p["payment_id"] for p in valid), workflow="Redriven") == {p["payment_id"]: 1 for p in valid}
    sqs = redrives.emulator.client("sqs")
    waiting = sqs.get_queue_attributes(QueueUrl=dead_letters, AttributeNames=["ApproximateNumberOfMessages"])
    assert waiting["Attributes"]["ApproximateNumberOfMessages"] == "3"

    moved = delivery.redrive(redrives, dead_letters, queue)
    assert len(moved) == 3 and not set(moved) & set(moved.values())  # new message ids: a messageId key would run again
    cycles = Pipe.of(redrives, "PaymentsPipe").drain()

    assert charges(redrives, *(p["payment_id"] for p in valid), workflow="Redriven") == {p["payment_id"]: 1 for p in valid}
    assert {message_id for cycle in cycles for message_id in cycle.message_ids} == set(moved.values())
    for cycle in cycles:  # each record replayed: its body (the flaky check, then the charge) never ran
        assert cycle.execution is not None and cycle.execution.output == {"batchItemFailures": []}
        assert "RedrivenFlaky" not in cycle.execution.entered_states()
    assert messages_in(redrives, queue) == [] and messages_in(redrives, dead_letters) == []


def test_each_valid_payment_is_charged_once_and_only_the_two_poison_messages_are_dead_lettered(payments):
    run = uuid.uuid4().hex[:8]
    queue, dead_letters = queue_url(payments, "Queue"), queue_url(payments, "DeadLetters")
    valid = [{"payment_id": f"{run}-{n}", "amount": n, "flaky": n % 4 == 0} for n in range(12)]
    bodies = [json.dumps(payment) for payment in valid]
    bodies += [json.dumps(valid[1]), json.dumps(valid[2])]  # producer duplicates: new messages, the same payments
    conflicting = json.dumps({**valid[3], "amount": 1_000})  # the same payment id, another amount
    bodies += [conflicting, "{not json"]
    client = payments.emulator.client("sqs")
    for body in bodies:
        client.send_message(QueueUrl=queue, MessageBody=body)

    pipe = Pipe.of(payments, "PaymentsPipe", lose_acknowledgements=1)  # batch size 10, REQUEST_RESPONSE
    assert (pipe.batch_size, pipe.invocation) == (10, "REQUEST_RESPONSE")
    cycles = pipe.drain()

    assert charges(payments, *(p["payment_id"] for p in valid)) == {p["payment_id"]: 1 for p in valid}
    dead = sorted(message["body"] for message in messages_in(payments, dead_letters))
    # Payment 3's two messages share a key: whichever came second is the conflicting one.
    assert len(dead) == 2 and "{not json" in dead
    assert {json.loads(body)["payment_id"] for body in dead if body != "{not json"} == {valid[3]["payment_id"]}
    assert messages_in(payments, queue) == []
    # The lost acknowledgement left a whole batch on the queue, received again (its records replayed: charged once).
    (lost,) = [cycle for cycle in cycles if cycle.acknowledgement_lost]
    assert lost.execution is not None and lost.execution.status == "SUCCEEDED"
    again = {message_id for cycle in cycles[cycles.index(lost) + 1 :] for message_id in cycle.message_ids}
    assert set(lost.message_ids) <= again
    # metric_failed_records counts each record a batch answered as failed, and nothing else.
    answered = sum(len(cycle.execution.output["batchItemFailures"]) for cycle in cycles if cycle.execution)
    metric = sum(counted(payments, "Payments", cycle.execution)["Payments.RecordFailed"] for cycle in cycles if cycle.execution)
    assert metric == answered >= 9  # 3 flaky first receives, and 3 receives of each poison message


def send(deployment: Deployment, queue: str, *bodies: str) -> None:
    for body in bodies:
        deployment.emulator.client("sqs").send_message(QueueUrl=queue, MessageBody=body)


def test_a_visibility_timeout_that_lapses_while_a_batch_runs_still_charges_each_payment_once(payments):
    # Issue 55: the messages of two batches are received again while their executions run, and run beside them.
    run = uuid.uuid4().hex[:8]
    queue, dead_letters = queue_url(payments, "Queue"), queue_url(payments, "DeadLetters")
    valid = [{"payment_id": f"{run}-{n}", "amount": n, "flaky": False} for n in range(15)]
    send(payments, queue, *(json.dumps(payment) for payment in valid))

    cycles = Pipe.of(payments, "PaymentsPipe", visibility_lapses=2).drain()

    assert charges(payments, *(p["payment_id"] for p in valid)) == {p["payment_id"]: 1 for p in valid}
    assert messages_in(payments, queue) == [] and messages_in(payments, dead_letters) == []
    lapsed = [cycle for cycle in cycles if cycle.visibility_lapsed]
    assert len(lapsed) == 2 and all(cycle.execution is not None and cycle.execution.status == "SUCCEEDED" for cycle in lapsed)
    # What lapsed came again, received a second time, in a batch that ran beside the first and deleted it.
    counts = {
        record["messageId"]: record["attributes"]["ApproximateReceiveCount"]
        for cycle in cycles
        if cycle.execution is not None and not cycle.visibility_lapsed
        for record in cycle.execution.input
    }
    for cycle in lapsed:
        assert {counts.get(message_id) for message_id in cycle.message_ids} <= {"2", "3"}
        assert cycle.deleted == []


def test_through_a_starter_function_each_valid_payment_is_charged_once_and_only_the_poison_is_dead_lettered(payments):
    run = uuid.uuid4().hex[:8]
    queue, dead_letters = queue_url(payments, "StarterQueue"), queue_url(payments, "StarterDeadLetters")
    valid = [{"payment_id": f"{run}-{n}", "amount": n, "flaky": n % 3 == 0} for n in range(7)]
    send(payments, queue, *(json.dumps(payment) for payment in valid), json.dumps(valid[1]), "{not json")

    mapping = EventSourceMapping.of(payments, "PaymentsStarter", lose_acknowledgements=1)
    assert (mapping.batch_size, mapping.report_batch_item_failures) == (5, True)
    cycles = mapping.drain()

    assert charges(payments, *(p["payment_id"] for p in valid)) == {p["payment_id"]: 1 for p in valid}
    assert [message["body"] for message in messages_in(payments, dead_letters)] == ["{not json"]
    assert messages_in(payments, queue) == []
    assert any(cycle.acknowledgement_lost for cycle in cycles)
    assert all(cycle.execution is None and isinstance(cycle.response, dict) for cycle in cycles)


def test_a_mapping_without_report_batch_item_failures_deletes_the_failed_records_with_the_rest(payments):
    run = uuid.uuid4().hex[:8]
    queue, dead_letters = queue_url(payments, "StarterQueue"), queue_url(payments, "StarterDeadLetters")
    flaky = {"payment_id": f"{run}-flaky", "amount": 1, "flaky": True}
    send(payments, queue, json.dumps(flaky), json.dumps({"payment_id": f"{run}-fine", "amount": 2}))
    (cycle,) = EventSourceMapping(payments, queue, "PaymentsStarter", report_batch_item_failures=False).drain()
    assert cycle.response["batchItemFailures"] != [] and cycle.deleted == cycle.message_ids  # ignored: lost
    assert charges(payments, flaky["payment_id"]) == {flaky["payment_id"]: 0}
    assert messages_in(payments, queue) == messages_in(payments, dead_letters) == []


def test_a_stream_through_a_pipe_charges_each_payment_once_and_drops_only_the_poison_after_its_retries(payments):
    run = uuid.uuid4().hex[:8]
    valid = [{"payment_id": f"{run}-{n}", "amount": n} for n in range(8)]
    data = [json.dumps(payment) for payment in valid]
    data.insert(3, json.dumps({**valid[1], "amount": 999}))  # a conflicting duplicate: the poison
    data.insert(6, json.dumps(valid[4]))  # a producer's duplicate: a new record, the same payment
    client = payments.emulator.client("kinesis")
    stream = payments.physical_id("AWS::Kinesis::Stream", "Stream")
    put = [client.put_record(StreamName=stream, Data=text.encode(), PartitionKey="payments") for text in data]
    # Payment 1's two records share a key, and a batch runs its records at once: whichever came second is the poison.
    twins = {f"{put[index]['ShardId']}:{put[index]['SequenceNumber']}" for index in (1, 3)}

    pipe = StreamPipe.of(payments, "StreamPipe", lose_checkpoints=1)  # batch size 4, two retries
    assert (pipe.batch_size, pipe.maximum_retry_attempts) == (4, 2)
    cycles = pipe.drain()

    assert charges(payments, *(p["payment_id"] for p in valid), workflow="Streamed") == {p["payment_id"]: 1 for p in valid}
    (poison,) = [name for cycle in cycles for name in cycle.discarded]
    assert poison in twins
    # The poison's batch came again from it, three times (the first try and two retries), then moved on.
    assert sum(1 for cycle in cycles if cycle.message_ids[0] == poison) == 3
    assert any(cycle.acknowledgement_lost for cycle in cycles)


def test_a_dynamodb_stream_through_a_pipe_charges_each_change_once_and_drops_only_the_declined_one(payments):
    run = uuid.uuid4().hex[:8]
    client = payments.emulator.client("dynamodb")
    table = payments.table_name("Changes")
    ids = [f"{run}-{n}" for n in range(6)]
    for payment_id in ids:
        item = {"payment_id": {"S": payment_id}, **({"declined": {"BOOL": True}} if payment_id == ids[2] else {})}
        client.put_item(TableName=table, Item=item)

    cycles = StreamPipe.of(payments, "ChangesPipe", lose_checkpoints=1).drain()  # batch size 4, one retry

    assert charges(payments, *ids, workflow="Changed") == {payment_id: int(payment_id != ids[2]) for payment_id in ids}
    (last,) = [cycle for cycle in cycles if cycle.discarded]  # the declined change's second try: dropped
    (dropped,) = last.discarded
    (change,) = [record for record in last.execution.input if record["eventID"] == dropped]
    assert change["dynamodb"]["NewImage"]["payment_id"] == {"S": ids[2]} and change["eventName"] == "INSERT"
    assert any(cycle.acknowledgement_lost for cycle in cycles)


def test_a_pipe_into_a_standard_workflow_deletes_a_failed_message_which_never_comes_again(payments):
    run = uuid.uuid4().hex[:8]
    queue, dead_letters = queue_url(payments, "StarterQueue"), queue_url(payments, "StarterDeadLetters")
    flaky = {"payment_id": f"{run}-flaky", "amount": 1, "flaky": True}
    payments.emulator.client("sqs").send_message(QueueUrl=queue, MessageBody=json.dumps(flaky))
    (cycle,) = Pipe(payments, queue, "StandardPaymentsMachine", invocation=FIRE_AND_FORGET).drain()
    assert cycle.execution is not None and cycle.execution.status == "SUCCEEDED"
    assert cycle.execution.output == {"batchItemFailures": [{"itemIdentifier": cycle.message_ids[0]}]}
    assert cycle.deleted == cycle.message_ids  # the partial batch response is not read: the message is gone
    assert charges(payments, flaky["payment_id"], workflow="StandardPayments") == {flaky["payment_id"]: 0}
    assert messages_in(payments, queue) == messages_in(payments, dead_letters) == []


def test_a_pipe_cannot_wait_for_a_standard_workflow(payments):
    with pytest.raises(ValueError, match="REQUEST_RESPONSE is not supported for STANDARD state machine workflows"):
        Pipe(payments, queue_url(payments, "Queue"), "StandardPaymentsMachine")


def test_a_batch_larger_than_one_receive_is_filled_by_several(payments):
    run = uuid.uuid4().hex[:8]
    queue = queue_url(payments, "Queue")
    for n in range(12):  # ReceiveMessage returns 10 at most
        payments.emulator.client("sqs").send_message(QueueUrl=queue, MessageBody=json.dumps({"payment_id": f"{run}-{n}"}))
    (cycle,) = Pipe(payments, queue, "PaymentsMachine", batch_size=12).drain()
    assert len(cycle.message_ids) == 12 and cycle.deleted == cycle.message_ids


@pytest.mark.parametrize(
    ("output", "left"),
    [
        ({"batchItemFailures": []}, set()),
        ({"batchItemFailures": None}, set()),
        ({"batchItemFailures": [{"itemIdentifier": "m-2"}]}, {"m-2"}),
        ({"batchItemFailures": [{"itemIdentifier": "not-in-the-batch"}]}, {"m-1", "m-2"}),  # the whole batch
        ({"batchItemFailures": [{"itemIdentifier": None}]}, {"m-1", "m-2"}),
        ({"batchItemFailures": "m-2"}, {"m-1", "m-2"}),  # not a list
    ],
)
def test_a_partial_batch_response_leaves_its_records_or_the_whole_batch_when_it_is_invalid(output, left):
    assert delivery.loop.failures(output, ["m-1", "m-2"]) == left
