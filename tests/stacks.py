"""Stacks the tests synthesize and deploy: small workflows that make each behaviour observable."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aws_cdk import App, Duration, RemovalPolicy, Size, Stack
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks

from idempotent_constructs import (
    AslFragment,
    CompletedPolicy,
    ExtendLease,
    FailurePolicy,
    GuardedState,
    IdempotencyDashboard,
    IdempotencyGuard,
    IdempotencyKey,
    IdempotencyTable,
    IdempotentStateMachine,
    InFlightPolicy,
    ResultStorage,
)
from idempotent_constructs._synth.functions import RUNTIME
from tests.synth import matches

if TYPE_CHECKING:
    from idempotent_constructs.testing import Deployment, Execution

# Amazon States Language documents, samples of others among them (tests/asl/README.md).
DOCUMENTS = Path(__file__).parent / "asl"
# The saga sample's placeholders of its Lambda functions, and the step of each (its SNS topic's aside).
SAGA_FUNCTIONS = {
    "reserveFlightFunction": "ReserveFlight",
    "reserveCarRentalFunction": "ReserveCarRental",
    "processPaymentFunction": "ProcessPayment",
    "confirmFlightFunction": "ConfirmFlight",
    "confirmCarRentalFunction": "ConfirmCarRental",
    "refundPaymentFunction": "RefundPayment",
    "cancelCarRentalFunction": "CancelCarRental",
    "cancelFlightFunction": "CancelFlight",
}
# The saga's steps in order, and its compensations.
SAGA_STEPS, COMPENSATIONS = tuple(SAGA_FUNCTIONS.values())[:5], tuple(SAGA_FUNCTIONS.values())[5:]
FAST: dict[str, Any] = {"poll_interval": Duration.seconds(1), "max_wait": Duration.seconds(30)}


def slow_body(scope: Stack, prefix: str, seconds: int = 2) -> sfn.IChainable:
    """Waits ``seconds`` then echoes its input under "echo": slow enough to overlap duplicates."""
    return sfn.Wait(scope, f"{prefix}Slow", time=sfn.WaitTime.duration(Duration.seconds(seconds))).next(
        sfn.Pass(scope, f"{prefix}Work", parameters={"echo.$": "$", "done": True})
    )


def packaged_lambda(scope: Stack, construct_id: str, handler: str, **options: Any) -> lambda_.IFunction:
    """A function of tests/lambdas (created once per stack)."""
    existing = scope.node.try_find_child(construct_id)
    if isinstance(existing, lambda_.Function):
        return existing
    return lambda_.Function(
        scope,
        construct_id,
        runtime=RUNTIME,
        handler=handler,
        code=lambda_.Code.from_asset(str(Path(__file__).parent / "lambdas")),
        timeout=Duration.seconds(10),
        **options,
    )


def sleepy_function(scope: Stack) -> lambda_.IFunction:
    return packaged_lambda(scope, "Sleepy", "sleepy.handler")


def failing_body(scope: Stack, prefix: str, error: str | None = None) -> sfn.Choice:
    """Fails when the input says {"fail": true}, with error "Boom" (or the error named at the
    ``error`` path of the input), else echoes the input."""
    fail = (
        sfn.Fail(scope, f"{prefix}Boom", error_path=error, cause="the body failed on purpose")
        if error
        else sfn.Fail(scope, f"{prefix}Boom", error="Boom", cause="the body failed on purpose")
    )
    # A task that overruns its timeout raises Step Functions' own States.Timeout.
    too_slow = tasks.LambdaInvoke(
        scope,
        f"{prefix}TooSlow",
        lambda_function=sleepy_function(scope),
        payload=sfn.TaskInput.from_object({"seconds": 3}),
        task_timeout=sfn.Timeout.duration(Duration.seconds(1)),
        retry_on_service_exceptions=False,
    )
    return (
        sfn.Choice(scope, f"{prefix}ShouldFail")
        .when(sfn.Condition.is_present("$.step_functions_error"), too_slow)
        .when(
            sfn.Condition.and_(sfn.Condition.is_present("$.fail"), sfn.Condition.boolean_equals("$.fail", True)),
            fail,
        )
        .otherwise(sfn.Pass(scope, f"{prefix}Fine", parameters={"echo.$": "$"}))
    )


def side_effects_table(scope: Stack) -> dynamodb.Table:
    """The table the test functions count their side effects in ("SideEffects")."""
    return dynamodb.Table(
        scope,
        "SideEffects",
        partition_key=dynamodb.Attribute(name="id", type=dynamodb.AttributeType.STRING),
        billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
        removal_policy=RemovalPolicy.DESTROY,
    )


def side_effect_runs(deployment: Deployment, prefix: str, *steps: str) -> dict[str, int]:
    """How often each step really ran: the test functions count their runs in "SideEffects", under
    "{prefix}#{step}"."""
    client, table = deployment.emulator.client("dynamodb"), deployment.table_name("SideEffects")
    items = {
        step: client.get_item(TableName=table, Key={"id": {"S": f"{prefix}#{step}"}}, ConsistentRead=True).get("Item")
        for step in steps
    }
    return {step: int(item["runs"]["N"]) if item else 0 for step, item in items.items()}


def counted(deployment: Deployment, construct: str, execution: Execution) -> Counter[str]:
    """What the metric filters under ``construct`` (a path part) count in one execution's log, by state name.
    The emulator keeps no execution log: each history event is read as the execution log carries it (its
    ``type``, and its details with the state's ``name``) and matched against the filters' clauses."""
    patterns = [
        resource["Properties"]["FilterPattern"]
        for logical_id, resource in deployment.template["Resources"].items()
        if resource["Type"] == "AWS::Logs::MetricFilter" and f"/{construct}/" in deployment.paths[logical_id]
    ]
    assert patterns
    logged = (
        (event["type"], details.get("name"))
        for event in execution.history
        for field, details in event.items()
        if field.endswith("EventDetails")
    )
    return Counter(name for event_type, name in logged if any(matches(pattern, event_type, name) for pattern in patterns))


class DocumentsStack(Stack):
    """Issue 23 (B19): Amazon States Language files made idempotent as they are (tests/asl): the saga
    sample (JSONPath, substitutions, Lambda and SNS tasks, compensations ending in Fail, a Succeed), the
    JSONata fallback sample, and a JSONata refund as a whole workflow and as a guarded step after
    another state. A stack of its own: with the behaviour stack's, its template would pass the 1 MB
    CloudFormation takes."""

    def __init__(self, scope: App, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        table = IdempotencyTable(self, "Idempotency", removal_policy=RemovalPolicy.DESTROY)
        self.counters = side_effects_table(self)

        def functions(*steps: str) -> dict[str, str]:
            found = {}
            for step in steps:
                function = packaged_lambda(
                    self,
                    f"Document{step}",
                    "document_step.handler",
                    environment={"COUNTER_TABLE": self.counters.table_name, "STEP": step},
                )
                self.counters.grant_read_write_data(function)
                found[step] = function.function_arn
            return found

        saga = functions(*SAGA_FUNCTIONS.values())
        notices = sns.Topic(self, "TripNotices")
        workflow = IdempotentStateMachine(
            self,
            "Saga",
            table=table,
            definition_body=sfn.DefinitionBody.from_file(str(DOCUMENTS / "saga-pattern-sam.asl.json")),
            definition_substitutions={
                **{placeholder: saga[step] for placeholder, step in SAGA_FUNCTIONS.items()},
                "snsTopicArn": notices.topic_arn,
            },
            key=IdempotencyKey.from_paths("$.trip_id"),
            **FAST,
        )
        # The document's own permissions, as for sfn.StateMachine with a file: granted by the user.
        workflow.state_machine.add_to_role_policy(
            iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=list(saga.values()))
        )
        notices.grant_publish(workflow.state_machine)

        fallback = functions("First", "Second", "Third")
        IdempotentStateMachine(
            self,
            "Fallback",
            table=table,
            definition_body=sfn.DefinitionBody.from_file(str(DOCUMENTS / "common-fallback-state-jsonata.asl.json")),
            definition_substitutions={f"{step}LambdaArn": arn for step, arn in fallback.items()},
            key=IdempotencyKey.from_paths("$.trip_id"),
            **FAST,
        )

        refund = functions("Refund")
        refund_text = (DOCUMENTS / "refund.asl.json").read_text()
        # The refund text twice: failures released (the default), and cached.
        for construct_id, on_failure in (("Refund", None), ("RefundCached", FailurePolicy.CACHE)):
            IdempotentStateMachine(
                self,
                construct_id,
                table=table,
                definition_body=sfn.DefinitionBody.from_string(refund_text),
                definition_substitutions={"RefundFunction": refund["Refund"]},
                key=IdempotencyKey.from_paths("$.trip_id"),
                on_failure=on_failure,
                **FAST,
            )
        IdempotentStateMachine(
            self,
            "FanOut",
            table=table,
            definition_body=sfn.DefinitionBody.from_file(str(DOCUMENTS / "fan-out.asl.json")),
            definition_substitutions={"Carrier": "express-air", "SettleSeconds": "1"},
            key=IdempotencyKey.from_paths("$.trip_id"),
            **FAST,
        )
        IdempotentStateMachine(
            self,
            "Nulls",
            table=table,
            definition_body=sfn.DefinitionBody.from_file(str(DOCUMENTS / "nulls.asl.json")),
            key=IdempotencyKey.from_paths("$.trip_id"),
            **FAST,
        )
        # The same document as one guarded step of a plain state machine, after a state of its own.
        step = AslFragment(
            self,
            "RefundStep",
            definition_body=sfn.DefinitionBody.from_string(refund_text),
            definition_substitutions={"RefundFunction": refund["Refund"]},
        )
        guard = IdempotencyGuard(
            self,
            "RefundOnce",
            table=table,
            key=IdempotencyKey.from_paths("$.trip_id"),
            body=sfn.Pass(self, "RefundReceived").next(step),
            **FAST,
        )
        sfn.StateMachine(self, "GuardedRefund", definition_body=sfn.DefinitionBody.from_chainable(guard))

        # Issue 31: one state of a document guarded by name (guard_states), the file unchanged: in a plain
        # state machine around an AslFragment, and in an IdempotentStateMachine (whole and Charge guarded).
        charge_and_ship = functions("Charge", "Ship")
        shop = {"ChargeFunction": charge_and_ship["Charge"], "ShipFunction": charge_and_ship["Ship"]}
        document: dict[str, Any] = {
            "definition_body": sfn.DefinitionBody.from_file(str(DOCUMENTS / "charge-and-ship.asl.json")),
            "definition_substitutions": shop,
            "table": table,
            "guard_states": {"Charge": GuardedState(key=IdempotencyKey.from_paths("$.trip_id"), **FAST)},
        }
        invoking = iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=list(charge_and_ship.values()))
        order = AslFragment(self, "ChargeAndShipStep", **document)
        sfn.StateMachine(self, "ChargeAndShip", definition_body=sfn.DefinitionBody.from_chainable(order)).add_to_role_policy(
            invoking
        )
        whole = IdempotentStateMachine(self, "ChargeAndShipOnce", key=IdempotencyKey.from_paths("$.trip_id"), **document, **FAST)
        whole.state_machine.add_to_role_policy(invoking)
        # Issue 54: the document in an inline Map of yours, its guard's place seen at synth (no in_inline_map).
        trips = sfn.Map(self, "EachTrip", items_path="$.trips").item_processor(AslFragment(self, "ChargeEachStep", **document))
        sfn.StateMachine(self, "ChargeEachTrip", definition_body=sfn.DefinitionBody.from_chainable(trips)).add_to_role_policy(
            invoking
        )


class BehaviourStack(Stack):
    """One state machine per behaviour under test (contract B1 to B13)."""

    def __init__(self, scope: App, construct_id: str) -> None:
        # Written without indentation, as a user whose stack nears CloudFormation's 1 MB may write it:
        # its inline definitions would pass that size with the CDK's default indented template.
        super().__init__(scope, construct_id, suppress_template_indentation=True)
        table = IdempotencyTable(self, "Idempotency", removal_policy=RemovalPolicy.DESTROY)

        # B1, B3, B4: the identity body, whole-input key.
        IdempotentStateMachine(self, "Echo", table=table, definition=sfn.Pass(self, "Identity"), **FAST)
        # B3: same body and key, another namespace (its own construct path).
        IdempotentStateMachine(self, "EchoTwin", table=table, definition=sfn.Pass(self, "TwinIdentity"), **FAST)
        # B3: one explicit namespace, two key expressions: an id is what a key selects, not how.
        for field in ("a", "b"):
            IdempotentStateMachine(
                self,
                f"ByField{field.upper()}",
                table=table,
                definition=sfn.Pass(self, f"Field{field}"),
                key=IdempotencyKey.from_paths(f"$.{field}"),
                namespace="shared-namespace",
                **FAST,
            )

        def slow(construct_id: str, prefix: str, seconds: int = 2, **options: Any) -> IdempotentStateMachine:
            """A workflow whose body takes ``seconds``, keyed on $.id (FAST timing unless given)."""
            timing = {} if {"poll_interval", "max_wait"} & set(options) else FAST
            return IdempotentStateMachine(
                self,
                construct_id,
                table=table,
                definition=slow_body(self, prefix, seconds=seconds),
                key=IdempotencyKey.from_paths("$.id"),
                **timing,
                **options,
            )

        def flaky(construct_id: str, prefix: str, error: str | None = None, **options: Any) -> IdempotentStateMachine:
            """A workflow whose body fails on request, keyed on order.id (JMESPath)."""
            return IdempotentStateMachine(
                self,
                construct_id,
                table=table,
                definition=failing_body(self, prefix, error=error),
                key=IdempotencyKey.from_jmespath("order.id"),
                **FAST,
                **options,
            )

        # B2, B5: a slow body, waiting duplicates; and the fail-fast variant.
        slow("Slow", "Slow")
        # Its holder runs 10 s, so that it still runs when a duplicate arrives, however slowly a busy
        # machine interprets the duplicate's states.
        slow("SlowFailFast", "FailFast", seconds=10, on_in_flight=InFlightPolicy.FAIL)
        # B12: the same, with patience for a slow emulator under injected faults (the moto interpreter
        # parses the definition in pure Python for each of 40 concurrent starts).
        slow("SlowPatient", "Patient", poll_interval=Duration.seconds(1), max_wait=Duration.minutes(5))
        # B5: a duplicate gives up after max_wait (5 s: its jittered polls end between 4 s and 5 s).
        slow(
            "Impatient", "Impatient", seconds=10, poll_interval=Duration.seconds(1), max_wait=Duration.seconds(5)
        ).metric_in_flight()
        # B7: holders that overrun a short lease, are aborted, time out or die.
        slow("ShortLease", "ShortLease", seconds=5, lease=Duration.seconds(2))
        # A holder that runs long past its lease, so that a duplicate arriving after the lease lapsed
        # polls it while it runs however slowly a busy machine interprets the duplicate's states.
        # A duplicate waits the holder's 15 s out, and its end: on a loaded machine, storing a result as large
        # as the crashed-holders test's takes more than FAST's 30 s of waiting.
        slow(
            "PastItsLease",
            "PastItsLease",
            seconds=15,
            lease=Duration.seconds(2),
            poll_interval=Duration.seconds(1),
            max_wait=Duration.seconds(120),
        )
        slow(
            "LongLease",
            "LongLease",
            seconds=5,
            lease=Duration.minutes(10),
            poll_interval=Duration.seconds(1),
            max_wait=Duration.seconds(60),
        )
        slow(
            "ExpressShortLease",
            "ExpressShortLease",
            seconds=6,
            lease=Duration.seconds(3),
            timeout=Duration.seconds(3),
            state_machine_type=sfn.StateMachineType.EXPRESS,
            poll_interval=Duration.seconds(1),
            max_wait=Duration.seconds(2),
        )
        # B6, B9, B10: a body that fails on request, JMESPath keys; failures released or cached.
        flaky("Flaky", "Flaky").metric_failed()
        flaky("FlakyCached", "Cached", on_failure=FailurePolicy.CACHE)
        flaky("FlakyCachedSome", "CachedSome", error="$.error", on_failure=FailurePolicy.CACHE, cache_errors=["Declined"])
        # Issue 43: the chain runs bare, its failure freed by the release function from the execution's event.
        IdempotentStateMachine(
            self,
            "ReleasedAfter",
            table=table,
            definition=failing_body(self, "ReleasedAfter").afterwards(),
            key=IdempotencyKey.from_paths("$.order.id"),
            on_failure=FailurePolicy.RELEASE_WHEN_EXECUTION_FAILS,
            **FAST,
        )
        self._hosts(table)
        self._sized_results(table)

    def _hosts(self, table: IdempotencyTable) -> None:
        """Issue 11 (B15): guards in a JSONata state machine (whole workflow, in a Map and in a
        Parallel), a JSONata chain in a JSONPath state machine, and a JSONata key."""
        echo = "{% {'echo': $states.input, 'done': true} %}"
        IdempotentStateMachine(
            self,
            "JsonataKey",
            table=table,
            definition=sfn.Pass(self, "JsonataKeyWork"),
            key=IdempotencyKey.from_jsonata("[$states.input.order.id, $states.input.region]"),
            **FAST,
        )
        # B1: numbers JSONata's $string cannot write exactly (17 digits, 16-digit integers).
        IdempotentStateMachine(
            self,
            "ExactNumbers",
            table=table,
            key=IdempotencyKey.from_paths("$.id"),
            **FAST,
            definition=sfn.Pass(
                self,
                "ExactNumbersWork",
                parameters={"id.$": "$.id", "sum": 0.30000000000000004, "snowflake": 1234567890123456, "tiny": 5e-324},
            ),
        )
        # A result that is an array (JSONata's array constructor would flatten it).
        IdempotentStateMachine(
            self,
            "ArrayResult",
            table=table,
            key=IdempotencyKey.from_paths("$.id"),
            **FAST,
            definition=sfn.Pass(
                self, "ArrayResultWork", parameters={"list.$": "States.Array($.id, 2, 'x')"}, output_path="$.list"
            ),
        )
        IdempotentStateMachine(
            self,
            "JsonataChain",
            table=table,
            definition=sfn.Pass.jsonata(self, "JsonataChainWork", outputs=echo),
            key=IdempotencyKey.from_paths("$.id"),
            **FAST,
        )
        per_item = sfn.Map.jsonata(
            self,
            "HostEachItem",
            items=sfn.ProvideItems.jsonata("{% $states.input.items %}"),
            outputs="{% $merge([$states.input, {'items_done': $states.result}]) %}",
        ).item_processor(
            IdempotencyGuard(
                self,
                "HostItemOnce",
                table=table,
                key=IdempotencyKey.from_jsonata("$states.input.sku"),
                body=sfn.Pass.jsonata(self, "HostItemWork", outputs="{% {'item': $states.input, 'handled': true} %}"),
            )  # in an inline Map, seen at synth
        )
        in_parallel = (
            sfn.Parallel.jsonata(
                self,
                "HostFork",
                outputs="{% $merge([$states.input, {'fork': $states.result}]) %}",
            )
            .branch(
                IdempotencyGuard(
                    self,
                    "HostLeftOnce",
                    table=table,
                    key=IdempotencyKey.from_paths("$.id"),
                    body=sfn.Pass.jsonata(self, "HostLeftWork", outputs="{% 'left' %}"),
                )
            )
            .branch(sfn.Pass.jsonata(self, "HostRightWork", outputs="{% 'right' %}"))
        )
        IdempotentStateMachine(
            self,
            "JsonataHost",
            table=table,
            query_language=sfn.QueryLanguage.JSONATA,
            definition=per_item.next(in_parallel).next(sfn.Pass.jsonata(self, "HostWork", outputs=echo)),
            key=IdempotencyKey.from_paths("$.id"),
            **FAST,
        )

    def _sized_results(self, table: IdempotencyTable) -> None:
        """Issue 4: results of any size up to the payload limit, kept inline or as large results."""
        make = packaged_lambda(self, "Sized", "sized.handler")
        for construct_id, storage, kind in (
            ("InlineResults", None, sfn.StateMachineType.STANDARD),
            ("LargeResults", ResultStorage.large(), sfn.StateMachineType.STANDARD),
            ("ExpressInlineResults", None, sfn.StateMachineType.EXPRESS),
        ):
            workflow = IdempotentStateMachine(
                self,
                construct_id,
                table=table,
                definition=tasks.LambdaInvoke(
                    self,
                    f"{construct_id}Make",
                    lambda_function=make,
                    payload_response_only=True,
                    retry_on_service_exceptions=False,
                ),
                key=IdempotencyKey.from_paths("$.id"),
                result_storage=storage,
                state_machine_type=kind,
                **FAST,
            )
            if construct_id == "LargeResults":
                workflow.metric_result_missing()


def resumable(self: Stack, table: IdempotencyTable) -> dynamodb.Table:
    """Issue 4: a workflow of three guarded steps A, B, C (plain state machines, per-step
    idempotency), B failing on its first run in "Resume" and never in "ResumeClean"."""
    counters = side_effects_table(self)
    step = packaged_lambda(self, "Step", "step.handler", environment={"COUNTER_TABLE": counters.table_name})
    counters.grant_read_write_data(step)
    for workflow, fail_first in (("Resume", True), ("ResumeClean", False)):
        guards = [
            IdempotencyGuard(
                self,
                f"{workflow}{name}",
                table=table,
                body=tasks.LambdaInvoke(
                    self,
                    f"{workflow}{name}Work",
                    lambda_function=step,
                    payload_response_only=True,
                    retry_on_service_exceptions=False,
                    payload=sfn.TaskInput.from_object(
                        {
                            "input": sfn.JsonPath.entire_payload,
                            "step": name,
                            "workflow": workflow,
                            "fail_first": fail_first and name == "B",
                        }
                    ),
                ),
                # The business key and the run number (1 unless the request says otherwise).
                key=IdempotencyKey.from_jmespath("[order.id, run || `1`]"),
                state_name_prefix=f"{name}.",
            )
            for name in ("A", "B", "C")
        ]
        sfn.StateMachine(
            self,
            workflow,
            definition_body=sfn.DefinitionBody.from_chainable(guards[0].next(guards[1]).next(guards[2])),
        )
    return counters


class ResumableStack(Stack):
    """Issue 4's three guarded steps alone (``resumable``), for the cross-check, which deploys no composition stack."""

    def __init__(self, scope: App, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        self.counters = resumable(self, IdempotencyTable(self, "Idempotency", removal_policy=RemovalPolicy.DESTROY))


class CompositionStack(Stack):
    """B13: two guards in sequence, a guard inside a Map and inside a Parallel, and a guard around a
    chain with Map, Parallel, Choice, Retry and Catch: five guards in one state machine, a stack of its
    own (with the behaviour stack's workflows, one template would pass CloudFormation's 1 MB); and issue 4's
    three guarded steps in plain state machines (``resumable``)."""

    def __init__(self, scope: App, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        table = IdempotencyTable(self, "Idempotency", removal_policy=RemovalPolicy.DESTROY)
        first = IdempotencyGuard(
            self,
            "First",
            table=table,
            body=sfn.Pass(self, "FirstWork", result_path="$.first", result=sfn.Result.from_string("ran")),
            key=IdempotencyKey.from_paths("$.id"),
        )
        second = IdempotencyGuard(
            self,
            "Second",
            table=table,
            body=sfn.Pass(self, "SecondWork", result_path="$.second", result=sfn.Result.from_string("ran")),
            key=IdempotencyKey.from_paths("$.id"),
        )
        per_item = sfn.Map(self, "EachItem", items_path="$.items", result_path="$.items_done").item_processor(
            IdempotencyGuard(
                self,
                "ItemOnce",
                table=table,
                body=sfn.Pass(self, "ItemWork", parameters={"item.$": "$", "handled": True}),
                key=IdempotencyKey.from_paths("$.sku"),
            )  # in an inline Map, seen at synth
        )
        in_parallel = (
            sfn.Parallel(self, "Fork", result_path="$.fork")
            .branch(
                IdempotencyGuard(
                    self,
                    "LeftOnce",
                    table=table,
                    body=sfn.Pass(self, "LeftWork", result=sfn.Result.from_string("left")),
                    key=IdempotencyKey.from_paths("$.id"),
                )
            )
            .branch(sfn.Pass(self, "RightWork", result=sfn.Result.from_string("right")))
        )

        inner_map = sfn.Map(self, "InnerMap", items_path="$.items", result_path="$.inner_map").item_processor(
            sfn.Pass(self, "InnerItem")
        )
        inner_parallel = (
            sfn.Parallel(self, "InnerParallel", result_path="$.inner_parallel")
            .branch(sfn.Pass(self, "InnerLeft", result=sfn.Result.from_number(1)))
            .branch(sfn.Pass(self, "InnerRight", result=sfn.Result.from_number(2)))
        )
        risky = sfn.Fail(self, "InnerFail", error="Inner", cause="caught inside the guarded chain")
        guarded_parallel = sfn.Parallel(self, "CatchMe", result_path="$.caught").branch(risky)
        guarded_parallel.add_retry(errors=["Inner"], max_attempts=1, interval=Duration.seconds(1))
        recovered = sfn.Pass(self, "Recovered")
        guarded_parallel.add_catch(recovered, errors=["Inner"], result_path="$.caught")
        choice = (
            sfn.Choice(self, "InnerChoice")
            .when(sfn.Condition.is_present("$.items"), inner_map)
            .otherwise(sfn.Pass(self, "NoItems"))
            .afterwards()
        )
        complex_chain = choice.next(inner_parallel).next(guarded_parallel)
        recovered.next(sfn.Pass(self, "AfterRecovery"))
        wrapped = IdempotencyGuard(self, "Whole", table=table, body=complex_chain, key=IdempotencyKey.from_paths("$.id"))
        definition = first.next(second).next(per_item).next(in_parallel).next(wrapped)
        IdempotentStateMachine(
            self, "Composed", table=table, definition=definition, key=IdempotencyKey.from_paths("$.id"), **FAST
        )
        self.counters = resumable(self, table)


# B18: every key strategy, in a JSONPath and a JSONata state machine, around a body with a small result
# (so that only the key depends on the input's shape).
SHAPE_KEYS = {
    "WholeInput": IdempotencyKey.whole_input(),
    "Paths": IdempotencyKey.from_paths("$.id"),
    "Jsonata": IdempotencyKey.from_jsonata("$states.input.id"),
    "Jmespath": IdempotencyKey.from_jmespath("id"),
}
DONE = {"done": True}


class ShapesStack(Stack):
    """Workflows ``Shape<Key><Host>`` (host ``JsonPath`` or ``Jsonata``) whose body ``ShapeWork`` outputs
    ``{"done": true}``."""

    def __init__(self, scope: App, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        table = IdempotencyTable(self, "Idempotency", removal_policy=RemovalPolicy.DESTROY)
        for key_name, key in SHAPE_KEYS.items():
            for host, language in (("JsonPath", None), ("Jsonata", sfn.QueryLanguage.JSONATA)):
                name = f"Shape{key_name}{host}"
                if language is None:
                    body: sfn.IChainable = sfn.Pass(
                        self, f"{name}Work", state_name="ShapeWork", result=sfn.Result.from_object(DONE)
                    )
                else:
                    body = sfn.Pass.jsonata(self, f"{name}Work", state_name="ShapeWork", outputs=DONE)
                IdempotentStateMachine(self, name, table=table, definition=body, key=key, query_language=language, **FAST)


def counting_body(scope: Stack, prefix: str, ticks: int, tick: Duration) -> tuple[sfn.IChainable, sfn.Wait, sfn.Choice]:
    """``(body, Tick, More)``: counts ``ticks`` ticks of ``tick`` each, then outputs ``{"ticks": n}``;
    the caller wires ``Tick`` to ``More`` (through an extend_lease() state, say)."""
    start = sfn.Pass.jsonata(scope, f"{prefix}Start", outputs={"n": 0})
    tick_state = sfn.Wait.jsonata(scope, f"{prefix}Tick", time=sfn.WaitTime.duration(tick))
    count = sfn.Pass.jsonata(scope, f"{prefix}Count", outputs="{% {'n': $states.input.n + 1} %}")
    more = sfn.Choice.jsonata(scope, f"{prefix}More")
    more.when(sfn.Condition.jsonata(f"{{% $states.input.n < {ticks} %}}"), count.next(tick_state))
    more.otherwise(sfn.Pass.jsonata(scope, f"{prefix}Done", outputs="{% {'ticks': $states.input.n} %}"))
    return start.next(tick_state), tick_state, more


class ControlStack(Stack):
    """Control over the lock, the holder and reuse (issue 15): a rejecting workflow, and guards
    without an owner check whose body outlasts its lease, with and without extensions."""

    def __init__(self, scope: App, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        table = IdempotencyTable(self, "Idempotency", removal_policy=RemovalPolicy.DESTROY)
        rejecting = IdempotentStateMachine(
            self,
            "Rejecting",
            table=table,
            definition=sfn.Pass(self, "Once"),
            key=IdempotencyKey.from_paths("$.id"),
            on_completed=CompletedPolicy.REJECT,
            **FAST,
        )
        rejecting.metric_rejected()
        # A whole workflow that extends its lease once, counted by its metric.
        IdempotentStateMachine(
            self,
            "KeepingAlive",
            table=table,
            definition=sfn.Pass(self, "Begin").next(ExtendLease(self, "ExtendLease")),
            key=IdempotencyKey.from_paths("$.id"),
            **FAST,
        ).metric_lease_extended()
        for construct_id, definition, storage in (
            ("Marked", sfn.Pass(self, "AsIs"), None),
            ("MarkedAnyValue", sfn.Pass.jsonata(self, "Value", outputs="{% $states.input.value %}"), None),
            ("MarkedLarge", sfn.Pass(self, "AsIsLarge"), ResultStorage.large(inline_threshold=Size.kibibytes(1))),
        ):
            IdempotentStateMachine(
                self,
                construct_id,
                table=table,
                definition=definition,
                key=IdempotencyKey.from_paths("$.id"),
                replay_marker="$.idempotency",
                result_storage=storage,
                **FAST,
            )
        # Leases of 4 s extended every 1 s tick: 3 s to spare for the extension itself, on a busy machine too.
        lease, short = Duration.seconds(4), Duration.seconds(2)
        # Ten ticks of 1 s, nearly three leases, each tick then extending the lease.
        body, tick, more = counting_body(self, "Extended", ticks=10, tick=Duration.seconds(1))
        extended = IdempotencyGuard(
            self, "Extended", table=table, body=body, key=IdempotencyKey.from_paths("$.id"), lease=lease, **FAST
        )
        tick.next(extended.extend_lease()).next(more)  # wired after the guard exists
        sfn.StateMachine(self, "Extending", definition_body=sfn.DefinitionBody.from_chainable(extended))
        # One tick of 6 s, three 2 s leases, with an extension only after it: too late.
        body, tick, more = counting_body(self, "Late", ticks=1, tick=Duration.seconds(6))
        late = IdempotencyGuard(self, "Late", table=table, body=body, key=IdempotencyKey.from_paths("$.id"), lease=short, **FAST)
        tick.next(late.extend_lease()).next(more)
        late_log = logs.LogGroup(self, "ExtendingLateLog", removal_policy=RemovalPolicy.DESTROY)
        sfn.StateMachine(
            self,
            "ExtendingLate",
            definition_body=sfn.DefinitionBody.from_chainable(late),
            logs=sfn.LogOptions(destination=late_log, level=sfn.LogLevel.ALL),
        )
        late.outcome_metrics(late_log).metric_lease_lost()
        # The ten ticks again, in a Parallel branch, and six 1 s items of a Map one at a time: each extends
        # the lease with an ExtendLease placed before the guard exists, which adopts it.
        body, tick, more = counting_body(self, "InBranch", ticks=10, tick=Duration.seconds(1))
        tick.next(ExtendLease(self, "BranchExtend")).next(more)
        in_branch = IdempotencyGuard(
            self,
            "InBranch",
            table=table,
            body=sfn.Parallel.jsonata(self, "Branch", outputs="{% $states.result[0] %}").branch(body),
            key=IdempotencyKey.from_paths("$.id"),
            lease=lease,
            **FAST,
        )
        sfn.StateMachine(self, "ExtendingInBranch", definition_body=sfn.DefinitionBody.from_chainable(in_branch))
        item = sfn.Wait.jsonata(self, "ItemTick", time=sfn.WaitTime.duration(Duration.seconds(1)))
        each = sfn.Map.jsonata(self, "EachItem", items=sfn.ProvideItems.jsonata("{% [1, 2, 3, 4, 5, 6] %}"), max_concurrency=1)
        each.item_processor(item.next(ExtendLease(self, "ItemExtend")))
        per_item = IdempotencyGuard(  # 6 s of items, 4 s leases: 3 s to spare for each extension, as above
            self, "PerItem", table=table, body=each, key=IdempotencyKey.from_paths("$.id"), lease=lease, **FAST
        )
        sfn.StateMachine(self, "ExtendingPerItem", definition_body=sfn.DefinitionBody.from_chainable(per_item))


class RacesStack(Stack):
    """The protocol explorer's counterexamples (issue 51, ``explore/``), replayed with holds on moto
    (tests/emulator/test_explored.py) and on ministack (the cross-check): ``Racing``, a guard of your own
    without the owner check, a 2 s lease, whose body extends its lease (``RacedExtend``) and then charges
    (``RacedCharge``, counted in "SideEffects" under ``Raced#{order id}#Charge``)."""

    def __init__(self, scope: App, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        table = IdempotencyTable(self, "Idempotency", removal_policy=RemovalPolicy.DESTROY)
        counters = side_effects_table(self)
        charge = packaged_lambda(self, "RacedCharge", "step.handler", environment={"COUNTER_TABLE": counters.table_name})
        counters.grant_read_write_data(charge)
        charged = tasks.LambdaInvoke(
            self,
            "RacedChargeStep",
            state_name="RacedCharge",
            lambda_function=charge,
            payload=sfn.TaskInput.from_object({"input.$": "$", "step": "Charge", "workflow": "Raced"}),
            payload_response_only=True,
            retry_on_service_exceptions=False,
        )
        raced = IdempotencyGuard(
            self,
            "Raced",
            table=table,
            body=ExtendLease(self, "RacedExtend").next(charged),
            key=IdempotencyKey.from_paths("$.order.id"),
            lease=Duration.seconds(2),
            **FAST,
        )
        sfn.StateMachine(self, "Racing", definition_body=sfn.DefinitionBody.from_chainable(raced))


# B12: a lease far longer than the tests run, and a short wait, so that a run that waited for its own
# record would end with Idempotency.InFlight within seconds.
LOST_REPLY_TIMING: dict[str, Any] = {
    "lease": Duration.minutes(10),
    "poll_interval": Duration.seconds(1),
    "max_wait": Duration.seconds(20),
}


class LostRepliesStack(Stack):
    """B12: guards of plain state machines (each ``IdempotencyGuard`` on its own, as per-step
    idempotency has it, not once per execution), whose writes' replies the tests lose
    (``Faults.lost_reply_writes``): ``Alone`` (a guard, its body echoing; ``{"fail": true}`` fails
    it), ``AloneCached`` (the same, its failures cached), ``AloneJmespath`` (keyed through the key
    function), ``PerItem`` (a guard in a Map, keyed on each item's ``sku``, its body 2 s long), ``InSequence`` (two
    guards, ``First`` then ``Second``, on the same ``id``), and, for issue 43, bodies that run bare: ``BareTask`` (a
    guard, ``TaskOnce``, of one LambdaInvoke, ``BareMake``, whose result is ``kib`` KiB, raising ``KeyError`` where
    the input names no size) and ``BareFan`` (a guard, ``FanOnce``, of one Parallel, ``BareFanWork``, whose branch
    echoes as ``Alone``'s body does)."""

    def __init__(self, scope: App, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        table = IdempotencyTable(self, "Idempotency", removal_policy=RemovalPolicy.DESTROY)

        def machine(construct_id: str, definition: sfn.IChainable) -> None:
            sfn.StateMachine(self, construct_id, definition_body=sfn.DefinitionBody.from_chainable(definition))

        def guard(construct_id: str, body: sfn.IChainable, key: IdempotencyKey, **options: Any) -> IdempotencyGuard:
            return IdempotencyGuard(self, construct_id, table=table, body=body, key=key, **LOST_REPLY_TIMING, **options)

        by_id = IdempotencyKey.from_paths("$.id")
        machine("Alone", guard("AloneOnce", failing_body(self, "Alone"), by_id))
        machine("AloneCached", guard("CachedOnce", failing_body(self, "Cached"), by_id, on_failure=FailurePolicy.CACHE))
        echo = {"echo.$": "$", "done": True}
        jmespath = guard("JmespathOnce", sfn.Pass(self, "JmespathWork", parameters=echo), IdempotencyKey.from_jmespath("id"))
        machine("AloneJmespath", jmespath)
        # A body of 2 s: a sibling under the same key finds the record in progress.
        item = guard("ItemOnce", slow_body(self, "Item"), IdempotencyKey.from_paths("$.sku"), in_inline_map=True)
        machine("PerItem", sfn.Map(self, "EachItem", items_path="$.items").item_processor(item))
        first = guard("First", sfn.Pass(self, "FirstWork", result_path="$.first", result=sfn.Result.from_string("ran")), by_id)
        second = guard(
            "Second", sfn.Pass(self, "SecondWork", result_path="$.second", result=sfn.Result.from_string("ran")), by_id
        )
        machine("InSequence", first.next(second))
        make = tasks.LambdaInvoke(
            self,
            "BareMake",
            lambda_function=packaged_lambda(self, "Sized", "sized.handler"),
            payload_response_only=True,
            retry_on_service_exceptions=False,
        )
        machine("BareTask", guard("TaskOnce", make, by_id))
        machine("BareFan", guard("FanOnce", sfn.Parallel(self, "BareFanWork").branch(failing_body(self, "Fan")), by_id))


def minimal(app: App) -> Stack:
    stack = Stack(app, "Minimal")
    IdempotentStateMachine(stack, "Orders", table=IdempotencyTable(stack, "Idempotency"), definition=sfn.Pass(stack, "Work"))
    return stack


def everything_on(app: App, *, alarms: bool = True) -> Stack:
    """Every option on; without ``alarms``, the dashboard makes none (ministack, the cross-check's emulator,
    refuses an alarm on metric math: crosscheck/__main__.py)."""
    stack = Stack(app, "EverythingOn")
    table = IdempotencyTable(
        stack,
        "Idempotency",
        encryption_key=kms.Key(stack, "RecordsKey", enable_key_rotation=True),
        removal_policy=RemovalPolicy.RETAIN,
        point_in_time_recovery=True,
    )
    per_line = sfn.Map(stack, "EachLine", items_path="$.lines", result_path="$.lines_done").item_processor(
        IdempotencyGuard(
            stack,
            "LineOnce",
            table=table,
            body=sfn.Pass(stack, "ReserveStock"),
            key=IdempotencyKey.from_paths("$.sku", "$.warehouse"),
            namespace="lines",
            on_in_flight=InFlightPolicy.FAIL,
            on_failure=FailurePolicy.CACHE,
            state_name_prefix="Line/",
        )
    )
    orders = IdempotentStateMachine(
        stack,
        "Orders",
        table=table,
        definition=per_line.next(sfn.Pass(stack, "Ship")),
        key=IdempotencyKey.from_jmespath("[order.id, customer.id]"),
        namespace="orders",
        expires_after=Duration.days(7),
        lease=Duration.minutes(10),
        poll_interval=Duration.seconds(2),
        max_wait=Duration.minutes(10),
        on_in_flight=InFlightPolicy.WAIT,
        on_failure=FailurePolicy.CACHE,
        state_machine_type=sfn.StateMachineType.STANDARD,
        state_machine_name="orders",
        timeout=Duration.hours(1),
        tracing_enabled=True,
    )
    quotes = IdempotentStateMachine(
        stack,
        "Quotes",
        table=table,
        definition=sfn.Pass(stack, "Quote"),
        result_storage=ResultStorage.large(inline_threshold=Size.kibibytes(16)),
        state_machine_type=sfn.StateMachineType.EXPRESS,
        timeout=Duration.minutes(5),
    )
    # The on-call topic's own key must let CloudWatch use it, or its alarms cannot publish (nag: SNS with KMS).
    actions = []
    if alarms:
        on_call_key = kms.Key(stack, "OnCallKey", enable_key_rotation=True)
        on_call_key.grant(iam.ServicePrincipal("cloudwatch.amazonaws.com"), "kms:Decrypt", "kms:GenerateDataKey*")
        actions.append(cloudwatch_actions.SnsAction(sns.Topic(stack, "OnCall", enforce_ssl=True, master_key=on_call_key)))
    IdempotencyDashboard(stack, "Dashboard", workflows=[orders, quotes], alarm_actions=actions)
    return stack
