"""Emulator end-to-end: injected faults answer as AWS answers (status, code, message), are the same for the
same seed whatever the timing, and can be aimed at chosen tables and functions (issue 54)."""

from __future__ import annotations

import json
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import boto3
import pytest
from aws_cdk import App, Duration, RemovalPolicy, Stack
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from botocore.config import Config
from botocore.exceptions import ClientError

from idempotent_constructs import IdempotencyGuard, IdempotencyKey, IdempotencyTable
from idempotent_constructs.testing import Deployment, Faults, LocalEmulator
from tests.stacks import FAST, packaged_lambda, side_effects_table

NO_RETRIES = Config(retries={"total_max_attempts": 1})


class AimedStack(Stack):
    """``PerOrder``: a Map over ``$.orders``, each order guarded on its id (``OrderOnce``); its body,
    ``Charge``, invokes the user's own function ``Step`` (tests/lambdas/step.py), which counts its runs in
    the user's own table ``SideEffects`` under ``orders#{id}#charge``, with boto3's own retries."""

    def __init__(self, scope: App, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        table = IdempotencyTable(self, "Idempotency", removal_policy=RemovalPolicy.DESTROY)
        counters = side_effects_table(self)
        step = packaged_lambda(self, "Step", "step.handler", environment={"COUNTER_TABLE": counters.table_name})
        counters.grant_read_write_data(step)
        charge = tasks.LambdaInvoke(
            self,
            "Charge",
            lambda_function=step,
            payload=sfn.TaskInput.from_object({"input.$": "$", "step": "charge", "workflow": "orders"}),
            payload_response_only=True,
            retry_on_service_exceptions=False,
        ).add_retry(
            errors=["Lambda.ServiceException", "Lambda.TooManyRequestsException"],
            interval=Duration.seconds(1),
            max_attempts=10,
            backoff_rate=1,
        )
        order = IdempotencyGuard(
            self, "OrderOnce", table=table, body=charge, key=IdempotencyKey.from_paths("$.order.id"), in_inline_map=True, **FAST
        )
        each = sfn.Map(self, "EachOrder", items_path="$.orders").item_processor(order)
        sfn.StateMachine(self, "PerOrder", definition_body=sfn.DefinitionBody.from_chainable(each))


@pytest.fixture(scope="module")
def aimed(emulator: LocalEmulator, tmp_path_factory: pytest.TempPathFactory) -> Deployment:
    app = App(outdir=str(tmp_path_factory.mktemp("aimed-assembly")))
    return emulator.deploy_stack(AimedStack(app, "AimedFaults"))


def boto3_client(emulator: LocalEmulator, service: str):
    """A client of the emulator that never retries: each answer as the service gave it."""
    return boto3.client(service, region_name=emulator.region, config=NO_RETRIES)


def step_function(aimed: Deployment) -> str:
    return aimed.physical_id("AWS::Lambda::Function", "Step")


def counter_id(order_id: str) -> str:
    return f"orders#{order_id}#charge"


def runs(aimed: Deployment, order_ids: list[str]) -> dict[str, int]:
    """How often the user's function really charged each order (its counter in ``SideEffects``)."""
    counted = {item["id"]["S"]: int(item["runs"]["N"]) for item in aimed.items("SideEffects")}
    return {order_id: counted.get(counter_id(order_id), 0) for order_id in order_ids}


# --- AWS's own answers ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "status", "message"),
    [
        (
            "ProvisionedThroughputExceededException",
            400,
            "You exceeded your maximum allowed provisioned throughput for a table or for one or more global secondary "
            "indexes. To view performance metrics for provisioned throughput vs. consumed throughput, open the Amazon "
            "CloudWatch console.",
        ),
        ("ThrottlingException", 400, "Rate of requests exceeds the allowed throughput."),
        (
            "RequestLimitExceeded",
            400,
            "Throughput exceeds the current throughput limit for your account. To request a limit increase, contact "
            "AWS Support at https://aws.amazon.com/support.",
        ),
        ("InternalServerError", 500, "Internal server error"),
    ],
)
def test_each_injected_dynamodb_error_carries_the_status_code_and_message_dynamodb_answers_with(
    emulator, scratch_table, error, status, message
):
    client = boto3_client(emulator, "dynamodb")
    with (
        emulator.faults(Faults(dynamodb=1.0, dynamodb_error=error, tables=(scratch_table,))) as faults,
        pytest.raises(ClientError) as raised,
    ):
        client.put_item(TableName=scratch_table, Item={"id": {"S": "k"}})
    answer = raised.value.response
    assert (answer["Error"]["Code"], answer["ResponseMetadata"]["HTTPStatusCode"]) == (error, status)
    assert answer["Error"]["Message"] == message
    assert answer["ResponseMetadata"]["HTTPHeaders"]["x-injected-fault"] == "dynamodb"
    assert faults.injected["dynamodb"] == 1 and "Item" not in client.get_item(TableName=scratch_table, Key={"id": {"S": "k"}})


def test_a_lost_reply_is_a_write_applied_and_answered_with_dynamodbs_internal_server_error(emulator, scratch_table):
    client = boto3_client(emulator, "dynamodb")
    with (
        emulator.faults(Faults(dynamodb_lost_replies=1.0, tables=(scratch_table,))) as faults,
        pytest.raises(ClientError) as raised,
    ):
        client.put_item(TableName=scratch_table, Item={"id": {"S": "k"}, "n": {"N": "1"}})
    answer = raised.value.response
    assert (answer["Error"]["Code"], answer["ResponseMetadata"]["HTTPStatusCode"]) == ("InternalServerError", 500)
    assert answer["ResponseMetadata"]["HTTPHeaders"]["x-injected-fault"] == "dynamodb_lost_replies"
    assert client.get_item(TableName=scratch_table, Key={"id": {"S": "k"}})["Item"] == {"id": {"S": "k"}, "n": {"N": "1"}}
    assert faults.injected == {"dynamodb": 0, "lambda": 0, "dynamodb_lost_replies": 1}


def test_a_transaction_draws_a_fault_when_one_of_its_tables_is_aimed_at_and_counts_it_under_each(emulator, scratch_table):
    client, other = boto3_client(emulator, "dynamodb"), f"{scratch_table}-other"
    client.create_table(
        TableName=other,
        BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
    )
    puts = [{"Put": {"TableName": table, "Item": {"id": {"S": table[-1]}}}} for table in (scratch_table, other)]
    try:
        with emulator.faults(Faults(dynamodb=1.0, tables=(other,))) as faults, pytest.raises(ClientError) as raised:
            client.transact_write_items(TransactItems=puts)
        with emulator.faults(Faults(dynamodb=1.0, tables=("elsewhere",))) as elsewhere:
            client.transact_write_items(TransactItems=puts)
    finally:
        client.delete_table(TableName=other)
    assert raised.value.response["Error"]["Code"] == "ProvisionedThroughputExceededException"
    assert faults.injected_by_resource == Counter({("dynamodb", scratch_table): 1, ("dynamodb", other): 1})
    ((_, operation, tables, content, occurrence),) = faults.log
    keys = [[scratch_table, {"id": {"S": scratch_table[-1]}}], [other, {"id": {"S": "r"}}]]
    assert (operation, tables, json.loads(content), occurrence) == ("TransactWriteItems", (scratch_table, other), keys, 0)
    assert elsewhere.injected["dynamodb"] == 0 and elsewhere.calls == Counter({scratch_table: 1, other: 1})


@pytest.mark.parametrize(
    ("error", "status", "fields"),
    [
        (
            "TooManyRequestsException",
            429,
            {"Type": "User", "Reason": "ConcurrentInvocationLimitExceeded", "message": "Rate Exceeded."},
        ),
        ("ServiceException", 500, {"Type": "Service", "Message": "The Lambda service encountered an internal error."}),
    ],
)
def test_each_injected_lambda_error_carries_the_status_code_and_fields_lambda_answers_with(
    emulator, aimed, error, status, fields
):
    function = step_function(aimed)
    client = boto3_client(emulator, "lambda")
    with (
        emulator.faults(Faults(lambda_invocations=1.0, lambda_error=error, functions=(function,))) as faults,
        pytest.raises(ClientError) as raised,
    ):
        client.invoke(FunctionName=function, Payload=json.dumps({"input": {"order": {"id": "never"}}, "step": "s"}))
    answer = raised.value.response
    assert (answer["Error"]["Code"], answer["ResponseMetadata"]["HTTPStatusCode"]) == (error, status)
    assert {name: answer[name] for name in fields} == fields
    assert answer["ResponseMetadata"]["HTTPHeaders"]["x-injected-fault"] == "lambda"
    assert faults.failed_invocations == Counter({function: 1})


@pytest.mark.parametrize("service", ["dynamodb", "lambda"])
def test_the_interpreter_never_retries_a_500_itself_so_every_fault_reaches_the_states_own_retry(
    emulator, aimed, scratch_table, service
):
    function = step_function(aimed)
    function_arn = boto3_client(emulator, "lambda").get_function(FunctionName=function)["Configuration"]["FunctionArn"]
    call, error = {
        # Step Functions' DynamoDB integration, as the guard's states call it.
        "dynamodb": (
            {
                "Resource": "arn:aws:states:::dynamodb:putItem",
                "Parameters": {"TableName": scratch_table, "Item": {"id": {"S": "k"}}},
            },
            "DynamoDB.InternalServerError",
        ),
        # The function's ARN as the resource, as LambdaInvoke(payload_response_only=True) writes it.
        "lambda": ({"Resource": function_arn}, "Lambda.ServiceException"),
    }[service]
    retry = {"ErrorEquals": [error], "IntervalSeconds": 1, "MaxAttempts": 2, "BackoffRate": 1}
    definition = {"StartAt": "Call", "States": {"Call": {"Type": "Task", **call, "Retry": [retry], "End": True}}}
    faults = Faults(
        dynamodb=1.0,
        dynamodb_error="InternalServerError",
        lambda_invocations=1.0,
        lambda_error="ServiceException",
        tables=(scratch_table,),
        functions=(function,),
    )
    with emulator.faults(faults):
        execution = emulator.run_definition(definition, {})
    assert (execution.status, execution.error) == ("FAILED", error)
    # The first attempt and the state's two retries, one request each: botocore retried none of them.
    assert sum(faults.injected.values()) == 3
    assert faults.calls[scratch_table if service == "dynamodb" else function] == 3


# --- reproducible ---------------------------------------------------------------------------------------


def clear(aimed: Deployment) -> None:
    """Delete every item of the stack's two tables: the records and counters of the runs before (this
    module's tests use fixed order ids, so that a seed injects the same faults in every session)."""
    client = aimed.emulator.client("dynamodb")
    for table in ("Idempotency", "SideEffects"):
        for item in aimed.items(table):
            client.delete_item(TableName=aimed.table_name(table), Key={"id": item["id"]})


def run_concurrent_maps(aimed: Deployment, faults: Faults, order_ids: list[list[str]]) -> list:
    """From empty tables, start one execution of ``PerOrder`` per list of order ids at once, under
    ``faults``, and wait for them all."""
    clear(aimed)
    with aimed.emulator.faults(faults), ThreadPoolExecutor(max_workers=len(order_ids)) as pool:
        payloads = [{"orders": [{"order": {"id": order_id}} for order_id in ids]} for ids in order_ids]
        arns = list(pool.map(lambda payload: aimed.start("PerOrder", payload), payloads))
        return list(pool.map(lambda arn: aimed.wait(arn, timeout=300), arns))


def test_the_same_seed_injects_the_same_faults_in_three_runs_of_concurrent_maps(aimed):
    order_ids = [[f"same-seed-{execution}-{item}" for item in range(3)] for execution in range(3)]
    aim = {
        "tables": (aimed.table_name("Idempotency"), aimed.table_name("SideEffects")),
        "functions": (step_function(aimed),),
    }
    seen = []
    for _ in range(3):
        faults = Faults(dynamodb=0.2, dynamodb_lost_replies=0.15, lambda_invocations=0.2, seed=20260054, **aim)
        executions = run_concurrent_maps(aimed, faults, order_ids)
        assert [e.status for e in executions] == ["SUCCEEDED"] * 3, [(e.error, e.cause) for e in executions if e.error]
        seen.append((faults.injected, faults.injected_by_resource, sorted(faults.log)))
    injected, by_resource, _ = seen[0]
    assert all(count >= 1 for count in injected.values()), injected
    assert {resource for _, resource in by_resource} == {*aim["tables"], *aim["functions"]}
    assert seen[1] == seen[0] and seen[2] == seen[0]


# --- aimed ----------------------------------------------------------------------------------------------


def test_faults_aimed_at_the_idempotency_table_leave_the_users_table_and_function_alone(aimed):
    order_ids = [[f"aimed-{execution}-{item}" for item in range(3)] for execution in range(2)]
    idempotency, counters, function = aimed.table_name("Idempotency"), aimed.table_name("SideEffects"), step_function(aimed)
    faults = Faults(
        dynamodb=0.3, dynamodb_lost_replies=0.3, lambda_invocations=0.5, seed=5401, tables=(idempotency,), functions=()
    )
    executions = run_concurrent_maps(aimed, faults, order_ids)
    charged = runs(aimed, [order_id for ids in order_ids for order_id in ids])
    assert [e.status for e in executions] == ["SUCCEEDED"] * 2, [(e.error, e.cause) for e in executions if e.error]
    assert faults.injected["dynamodb"] >= 1 and faults.injected["dynamodb_lost_replies"] >= 1
    assert {resource for _, resource in faults.injected_by_resource} == {idempotency}
    # Each order charged once, its one counter write and its one invocation never failed.
    assert set(charged.values()) == {1}
    assert faults.calls[counters] == faults.calls[function] == len(charged)
    assert faults.calls[idempotency] >= 2 * len(charged) + faults.injected["dynamodb"]


def test_a_users_own_function_writing_to_its_own_table_recovers_through_botocores_own_retries_as_on_aws(aimed):
    # The function's boto3 client retries a 500 (standard mode, boto3's default here: 4 attempts for DynamoDB).
    clear(aimed)
    counters = aimed.table_name("SideEffects")
    client, order_ids = aimed.emulator.client("lambda"), [f"own-table-{n}" for n in range(8)]
    faults = Faults(dynamodb=0.2, dynamodb_error="InternalServerError", dynamodb_lost_replies=0.2, seed=5402, tables=(counters,))
    with aimed.emulator.faults(faults):
        for order_id in order_ids:
            event = {"input": {"order": {"id": order_id}}, "step": "charge", "workflow": "orders"}
            reply = client.invoke(FunctionName=step_function(aimed), Payload=json.dumps(event))
            assert "FunctionError" not in reply, reply["Payload"].read()
            assert json.loads(reply["Payload"].read()) == {"order": {"id": order_id}, "charge": "done"}
    assert faults.injected["dynamodb"] >= 1 and faults.injected["dynamodb_lost_replies"] >= 1
    assert {resource for _, resource in faults.injected_by_resource} == {counters}
    assert faults.calls[counters] == len(order_ids) + sum(faults.injected.values())
    # As on AWS: a write whose reply was lost is applied again by the retry (the counter's ADD twice).
    lost = Counter(fault.content for fault in faults.log if fault.kind == "dynamodb_lost_replies")
    expected = {
        order_id: 1 + sum(n for content, n in lost.items() if f'"{counter_id(order_id)}"' in content) for order_id in order_ids
    }
    assert runs(aimed, order_ids) == expected


# --- bad input ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "complaint"),
    [
        ({"dynamodb": 1.5}, "Faults.dynamodb must be a fraction"),
        ({"lambda_invocations": "0.3"}, "Faults.lambda_invocations must be a fraction"),
        ({"dynamodb_lost_replies": True}, "Faults.dynamodb_lost_replies must be a fraction"),
        ({"lost_reply_writes": (0,)}, "Faults.lost_reply_writes must be a tuple of write numbers from 1"),
        ({"lost_reply_writes": 1}, "Faults.lost_reply_writes must be a tuple of write numbers from 1"),
        ({"dynamodb_error": "Throttled"}, "Faults.dynamodb_error must be one of DynamoDB's transient errors"),
        ({"lambda_error": "Boom"}, "Faults.lambda_error must be None or one of TooManyRequestsException"),
        ({"tables": "Orders"}, r"Faults.tables must be a tuple of names \(None: all, \(\): none\)"),
        ({"tables": ("Orders", "")}, "Faults.tables must name each one by a non-empty string"),
        ({"functions": [3]}, "Faults.functions must name each one by a non-empty string"),
        ({"seed": "20260054"}, "Faults.seed must be an int"),
    ],
)
def test_bad_options_are_refused_with_a_value_error_naming_the_option(options, complaint):
    with pytest.raises(ValueError, match=complaint):
        Faults(**options)


def test_tables_and_functions_may_be_named_by_their_arns_and_a_seed_left_out_is_drawn_and_kept():
    faults = Faults(
        tables=["arn:aws:dynamodb:us-east-1:123456789012:table/Orders"],
        functions=("arn:aws:lambda:us-east-1:123456789012:function:Charge:live", "Refund:2"),
    )
    assert (faults.tables, faults.functions) == (("Orders",), ("Charge", "Refund"))
    assert isinstance(faults.seed, int) and Faults(seed=faults.seed).seed == faults.seed
