"""``IdempotencyGuard``: the states that make any chain idempotent (DESIGN section 6).

Shape of the generated states (names carry the guard's prefix)::

    ComputeKey -> Acquire -----------------------------------------> Body -> Complete -> (next)
                     | exists                                         | fails
                  Inspect -> Route -- completed --> Replay -> (next)  Caught -> Release | RecordFailure
                                |---- completed, stored elsewhere --> Restore -> (next)
                                |---- failed (CACHE) --> ReplayFailure                    -> Failed
                                |---- gone --> Renew -> Acquire
                                |---- ours --> Body
                                |---- held within its lease --> Backoff -> Await -> Route
                                |---- held past its lease --> [OwnerCheck -> OwnerRunning] -> Await
                                |                                           '-> RenewForTakeover
                                |---- otherwise --> RenewForTakeover -> Takeover -> Body
                                '---- other payload --> PayloadMismatch

Await is a Parallel whose branch (Poll -> Check -> Busy | Settled, with PollOwner past a lease)
fails while the holder is busy; its Retry is the backoff and its MaxAttempts the max_wait bound.

Everything is JSONPath and carries its metadata in the state payload (no variables, no JSONata)::

    {"value": <the chain's input; after Body, [its output]>,
     "idempotency": {"id", "validation", "owner", "now", "expiration", "lease_expiration", "deadline"},
     "record": <the last GetItem response>}
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_cdk import Aws, Duration, Size, Token
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

from .errors import Problems
from .functions import (
    KeyFunction,
    ResultFunction,
    executions_arn,
    item_statement,
    key_statement,
    key_function,
    records_of,
    result_function,
    results_bucket,
)
from .key import IdempotencyKey, namespace_problems
from .lambda_src import schema
from .policies import FailurePolicy, InFlightPolicy, ResultStorage
from .table import IdempotencyTable

DEFAULT_EXPIRES_AFTER = Duration.hours(24)
DEFAULT_LEASE = Duration.minutes(15)
DEFAULT_POLL_INTERVAL = Duration.seconds(1)
DEFAULT_MAX_WAIT = Duration.minutes(5)
MAX_POLL_DELAY_SECONDS = 30
MAX_POLLS = 100
# History events of one busy poll past its lease (the most expensive kind): the Parallel's retry,
# the branch's states and the GetItem and DescribeExecution tasks. Measured in the emulator.
EVENTS_PER_POLL = 20
MAX_STATE_NAME_LENGTH = 80
# Every state a guard may generate, by the name it carries after the guard's prefix.
STATE_NAMES = (
    "ComputeKey", "Acquire", "Body", "Complete", "Inspect", "Route", "Replay", "Restore", "ResultMissing",
    "Renew", "RenewForTakeover", "Takeover", "OwnerCheck", "OwnerRunning", "Backoff", "Await", "Poll", "Check",
    "PollOwner", "StillRunning", "Busy", "Settled", "InFlight", "PayloadMismatch", "LeaseLost", "Caught",
    "NameStepError", "CacheOrRelease", "Release", "RecordFailure", "Failed", "ReplayFailure",
)
# A compressed result in the record travels base64-encoded through the Inspect state's payload.
MAX_INLINE_THRESHOLD = Size.kibibytes(64)

# Transient errors of the DynamoDB service integration ("DynamoDB.<error>"). AWS documents the prefix,
# not the names: each is listed as the API's error code and as the SDK's exception name where the two
# differ. "DynamoDB.AmazonDynamoDBException" is not among them: it is what the integration raises for
# errors without a name of their own, permanent ones too (a validation error, access denied), which
# retrying cannot mend.
TRANSIENT_DYNAMODB_ERRORS = [
    "DynamoDB.ProvisionedThroughputExceededException",
    "DynamoDB.ThrottlingException",
    "DynamoDB.RequestLimitExceeded",
    "DynamoDB.RequestLimitExceededException",
    "DynamoDB.InternalServerError",
    "DynamoDB.InternalServerErrorException",
    "DynamoDB.ServiceUnavailable",
    "DynamoDB.ServiceUnavailableException",
]
CONDITION_FAILED = "DynamoDB.ConditionalCheckFailedException"
# Transient errors of the Step Functions API, called through the AWS SDK integration.
# ("Sfn.SfnException" is the generic name a throttled or failed call may arrive with.)
TRANSIENT_SFN_ERRORS = [
    "Sfn.SfnException",
    "Sfn.ThrottlingException",
    "Sfn.SdkClientException",
    "Sfn.InternalServerException",
]
# The holder's execution is gone (its history expired): nothing runs any more.
OWNER_GONE_ERRORS = ["Sfn.ExecutionDoesNotExistException", "Sfn.ExecutionDoesNotExist"]
# Standard execution statuses after which nothing runs (PENDING_REDRIVE is about to run again).
ENDED_STATUSES = ("SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED")
# A Standard execution may run a year: a record in progress must not expire before its holder.
STANDARD_HOLD = Duration.days(366)
# Transient errors of a Lambda invocation (the service's, never the function's own errors).
TRANSIENT_LAMBDA_ERRORS = [
    "Lambda.ClientExecutionTimeoutException",
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
]

_ITEM = f"$.{schema.RECORD}.Item"
_META = f"$.{schema.META}"
_OWNER_STATE = "$.owner_state"
_NOW = "$$.State.EnteredTime"


def _attr(name: str, kind: str = "S") -> str:
    return f"{_ITEM}.{name}.{kind}"


def _s(path: str) -> tasks.DynamoAttributeValue:
    return tasks.DynamoAttributeValue.from_string(sfn.JsonPath.string_at(path))


def _n(path: str) -> tasks.DynamoAttributeValue:
    return tasks.DynamoAttributeValue.number_from_string(sfn.JsonPath.string_at(path))


def _literal(value: str) -> tasks.DynamoAttributeValue:
    return tasks.DynamoAttributeValue.from_string(value)


_IN_PROGRESS = sfn.Condition.string_equals(_attr(schema.STATUS), schema.INPROGRESS)
_HELD_WITHIN_LEASE = sfn.Condition.and_(
    _IN_PROGRESS, sfn.Condition.timestamp_less_than_json_path(_NOW, _attr(schema.IN_PROGRESS_DEADLINE))
)
_LAPSED_IN_PROGRESS = sfn.Condition.and_(
    _IN_PROGRESS,
    sfn.Condition.not_(sfn.Condition.timestamp_less_than_json_path(_NOW, _attr(schema.IN_PROGRESS_DEADLINE))),
)
# The owner check's verdict lets a takeover go ahead when the holder's execution has ended, or when
# it is this very execution (a branch that was cancelled mid-body: its own lease is all there is).
_OWNER_DONE = sfn.Condition.or_(
    *(sfn.Condition.string_equals(f"{_OWNER_STATE}.Status", status) for status in ENDED_STATUSES),
    sfn.Condition.string_equals_json_path(f"{_OWNER_STATE}.ExecutionArn", f"{_META}.execution"),
)


class _ItemTask(sfn.CustomState):
    """A task of Step Functions' optimized DynamoDB integration on one item of a guard's namespace.

    The CDK's Dynamo* tasks grant their action on the whole table. This task grants, to whichever
    state machine it joins, its one action on the table only for items whose id starts with
    ``{namespace}#`` (a ``dynamodb:LeadingKeys`` condition), plus the use of the table's customer
    managed KMS key if it has one. So a workflow can never read or write another namespace's records.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        action: str,
        table: dynamodb.ITable,
        namespace: str,
        parameters: dict[str, Any],
        result_path: str | None = None,
        output_path: str | None = None,
    ) -> None:
        state: dict[str, Any] = {
            "Type": "Task",
            "Resource": f"arn:{Aws.PARTITION}:states:::dynamodb:{action}",
            "Parameters": sfn.FieldUtils.render_object({"TableName": table.table_name, **parameters}),
        }
        if result_path is None:
            # A CustomState cannot say "ResultPath": null; keep a constant in a field nothing reads.
            state.update(ResultSelector={"done": True}, ResultPath="$.written")
        else:
            state["ResultPath"] = result_path
        if output_path is not None:
            state["OutputPath"] = output_path
        super().__init__(scope, construct_id, state_json=state)
        self.graph: sfn.StateGraph | None = None  # the graph it joined: its state machine's, or a branch's
        self.statements = [item_statement(table, namespace, f"dynamodb:{action[0].upper()}{action[1:]}")]
        if table.encryption_key is not None:
            self.statements.append(key_statement(table.encryption_key))

    def bind_to_graph(self, graph: sfn.StateGraph) -> None:
        super().bind_to_graph(graph)
        for statement in self.statements:
            graph.register_policy_statement(statement)
        self.graph = graph


def _attributes(values: dict[str, tasks.DynamoAttributeValue]) -> dict[str, Any]:
    return {name: value.to_object() for name, value in values.items()}


def poll_schedule(poll_interval: int, max_wait: int) -> tuple[int, int]:
    """``(max_attempts, max_delay)`` of the poll retrier: delays double from ``poll_interval`` up to
    ``max_delay`` and add up to at least ``max_wait`` (the first wait is the ``Backoff`` state).

    ``max_delay`` is 30 s, or more for long waits, so that a waiter never polls more than
    ``MAX_POLLS`` times: its history stays below MAX_POLLS * EVENTS_PER_POLL events, far from
    Step Functions' 25,000, whatever ``max_wait`` is.
    """
    max_delay = max(poll_interval, min(MAX_POLL_DELAY_SECONDS, max_wait), -(-max_wait // (MAX_POLLS // 2)))
    waited, delay, attempts = poll_interval, poll_interval, 0
    while waited < max_wait:
        attempts += 1
        waited += delay
        delay = min(delay * 2, max_delay)
    return attempts, max_delay


class IdempotencyGuard(sfn.StateMachineFragment):
    """Wraps any chain so that it runs once per idempotency key; usable wherever a chain is.

    The chain receives exactly the input it would receive unwrapped, and the guard's output, on the
    first run and on every replay, is the chain's own output. Several guards may live in one state
    machine, inside Map and Parallel states too; their state names carry the guard's prefix.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        table: IdempotencyTable | dynamodb.ITable,
        body: sfn.IChainable,
        key: IdempotencyKey | None = None,
        namespace: str | None = None,
        expires_after: Duration | None = None,
        lease: Duration | None = None,
        poll_interval: Duration | None = None,
        max_wait: Duration | None = None,
        on_in_flight: InFlightPolicy | None = None,
        on_failure: FailurePolicy | None = None,
        cache_errors: Sequence[str] | None = None,
        state_name_prefix: str | None = None,
        owner_state_machine_name: str | None = None,
        result_storage: ResultStorage | None = None,
    ) -> None:
        """
        :param table: where the records live.
        :param body: the chain to protect.
        :param key: how the key is derived. Default: ``IdempotencyKey.whole_input()``.
        :param namespace: prefix of this guard's record ids. Default: the guard's construct path,
            which is stable across deploys and differs between guards and stacks.
        :param expires_after: how long a record is kept, counted from the start of the run that wrote
            it; after that a duplicate runs the chain again. Default: 24 hours.
        :param lease: how long a holder is trusted to finish before a duplicate may take the key over.
            Default: 15 minutes.
        :param poll_interval: first delay between polls of a duplicate that waits; delays double up to
            30 seconds. Default: 1 second.
        :param max_wait: how long a duplicate waits for the holder before failing with
            ``Idempotency.InFlight``. Default: 5 minutes.
        :param on_in_flight: ``WAIT`` or ``FAIL`` while another execution holds the key. Default: ``WAIT``.
        :param on_failure: ``RELEASE`` or ``CACHE`` when the chain fails. Default: ``RELEASE``.
        :param cache_errors: with ``CACHE``, the error names to remember; any other error releases the
            key. Default: every error is remembered.
        :param state_name_prefix: prefix of every generated state name. Default: ``"{construct_id}."``.
        :param owner_state_machine_name: the name of the Standard state machine this guard runs in.
            When given, a duplicate that finds a lapsed lease asks Step Functions whether the holder's
            execution still runs (``states:DescribeExecution`` on that state machine's executions,
            granted automatically) and never takes over a running holder. Default: none; a lapsed
            lease is taken over. ``IdempotentStateMachine`` sets it for Standard workflows.
        :param result_storage: how results are kept for replays. Default: ``ResultStorage.inline()``,
            the result as JSON in the record (no Lambda call; results up to about 100 KiB). Use
            ``ResultStorage.large()`` for results up to the 256 KiB payload limit.
        """
        super().__init__(scope, construct_id)
        self.key = key or IdempotencyKey.whole_input()
        self.namespace = namespace if namespace is not None else self.node.path
        self._namespace_given = namespace is not None
        self.expires_after = expires_after or DEFAULT_EXPIRES_AFTER
        self.lease = lease or DEFAULT_LEASE
        self.poll_interval = poll_interval or DEFAULT_POLL_INTERVAL
        self.max_wait = max_wait or DEFAULT_MAX_WAIT
        self.on_in_flight = on_in_flight or InFlightPolicy.WAIT
        self.on_failure = on_failure or FailurePolicy.RELEASE
        self.prefix = state_name_prefix if state_name_prefix is not None else f"{construct_id}."
        self.table: dynamodb.ITable = table.table if isinstance(table, IdempotencyTable) else table
        self.owner_state_machine_name = owner_state_machine_name
        self._item_tasks: list[_ItemTask] = []
        self.cache_errors = list(cache_errors) if cache_errors is not None else None
        self.result_storage = result_storage or ResultStorage.inline()
        self._validate()

        self.key_function: KeyFunction = key_function(self)
        self.result_function: ResultFunction | None = None
        self.results_bucket: s3.IBucket | None = None
        if self.result_storage.is_large:
            self.result_function = result_function(self)
            if self.result_storage.bucket is None:
                shared = results_bucket(self)
                shared.retain(self.namespace, self.lease.plus(self.expires_after))
                self.results_bucket = shared.bucket
            else:
                self.results_bucket = self.result_storage.bucket
            self.result_function.serve(self.table, self.namespace, self.results_bucket)
        self._build(body)

    # --- validation -------------------------------------------------------------------------------
    def _validate(self) -> None:
        problems = Problems(self)
        problems.extend(self.key.problems())
        if self.cache_errors is not None:
            if self.on_failure is not FailurePolicy.CACHE:
                problems.add(
                    f"cache_errors: {self.cache_errors!r} is given but on_failure is {self.on_failure.name}; "
                    "pass on_failure=FailurePolicy.CACHE or drop cache_errors"
                )
            if not self.cache_errors or any(not e or e.startswith("States.") for e in self.cache_errors):
                problems.add(
                    f"cache_errors: {self.cache_errors!r} must list error names, none empty and none starting "
                    f"with 'States.' (those arrive as {schema.BODY_FAILED!r}; list that name instead)"
                )
        problems.extend(
            problem + ("" if self._namespace_given else " (this is the default, the construct path: pass namespace=...)")
            for problem in namespace_problems(self.namespace)
        )
        threshold = self.result_storage.inline_threshold
        if not Token.is_unresolved(threshold.to_bytes()) and not (
            1024 <= threshold.to_bytes() <= MAX_INLINE_THRESHOLD.to_bytes()
        ):
            problems.add(
                f"result_storage: an inline_threshold of {threshold.to_bytes()} bytes is outside 1 KiB to 64 KiB "
                "(a compressed result travels through the state payload on replay); use Size.kibibytes(n) with 1 <= n <= 64"
            )
        longest = self.prefix + max(STATE_NAMES, key=len)
        if len(longest) > MAX_STATE_NAME_LENGTH:
            problems.add(
                f"state_name_prefix: {self.prefix!r} makes state names such as {longest!r} ({len(longest)} characters) "
                f"longer than Step Functions' {MAX_STATE_NAME_LENGTH}; use a shorter construct id or state_name_prefix"
            )
        for name, value in (
            ("expires_after", self.expires_after),
            ("lease", self.lease),
            ("poll_interval", self.poll_interval),
            ("max_wait", self.max_wait),
        ):
            millis = value.to_milliseconds()
            if millis < 1000 or millis % 1000:
                problems.add(
                    f"{name}: {value.to_human_string()} is not a whole number of seconds of at least 1; "
                    f"use Duration.seconds(n) with n >= 1"
                )
        problems.raise_if_any()

    # --- states -----------------------------------------------------------------------------------
    def _name(self, name: str) -> str:
        return f"{self.prefix}{name}"

    def state_name(self, state: str) -> str:
        """The name of one of this guard's states in the definition, such as ``state_name("Replay")``."""
        return self._name(state)

    @staticmethod
    def _retry_transient(
        task: sfn.CustomState | sfn.TaskStateBase, errors: list[str] = TRANSIENT_DYNAMODB_ERRORS, *, after_body: bool = False
    ) -> None:
        # Ten retries, jittered, at most 10 s apart: a call fails for good only if eleven attempts in
        # about a minute all fail (at a 30% fault rate, about 2 in a million). A write after the body
        # ran gets about ten minutes: giving up there would leave the key to a second run.
        task.add_retry(
            errors=errors,
            interval=Duration.seconds(1),
            backoff_rate=2,
            max_attempts=25 if after_body else 10,
            max_delay=Duration.seconds(30 if after_body else 10),
            jitter_strategy=sfn.JitterType.FULL,
        )

    def _key_attr(self) -> dict[str, tasks.DynamoAttributeValue]:
        return {schema.ID: _s(f"{_META}.id")}

    def _acquire_item(self) -> dict[str, tasks.DynamoAttributeValue]:
        return {
            schema.ID: _s(f"{_META}.id"),
            schema.STATUS: _literal(schema.INPROGRESS),
            schema.EXPIRATION: _n(f"{_META}.hold_expiration"),
            schema.IN_PROGRESS_EXPIRATION: _n(f"{_META}.lease_expiration"),
            schema.IN_PROGRESS_DEADLINE: _s(f"{_META}.deadline"),
            schema.OWNER: _s(f"{_META}.owner"),
            schema.VALIDATION: _s(f"{_META}.validation"),
        }

    def _compute_key(self, state: str, source: str, meta_only: bool) -> tasks.LambdaInvoke:
        """A call of the key function on ``source``; ``meta_only`` keeps the payload and replaces
        only the metadata (a fresh clock and owner token before a late acquire or takeover)."""
        spec: dict[str, Any] = {
            "input": sfn.JsonPath.object_at(source) if source != "$" else sfn.JsonPath.entire_payload,
            "execution": sfn.JsonPath.string_at("$$.Execution.Id"),
            "namespace": self.namespace,
            "kind": self.key.kind,
            "lease_seconds": int(self.lease.to_seconds()),
            "expires_after_seconds": int(self.expires_after.to_seconds()),
            # How long a record in progress is kept: with the owner check, as long as a Standard
            # execution may run, so that TTL never deletes the record of a holder that still runs.
            "hold_seconds": int(
                STANDARD_HOLD.to_seconds()
                if self.owner_state_machine_name is not None
                else self.lease.to_seconds() + self.expires_after.to_seconds()
            ),
        }
        if self.key.expression is not None:
            spec["expression"] = self.key.expression
        if meta_only:
            spec["meta_only"] = True
        return self._invoke(state, self.key_function, spec, result_path=_META if meta_only else None)

    def _invoke(
        self, state: str, function: KeyFunction | ResultFunction, payload: dict[str, Any], *, after_body: bool = False, **options: Any
    ) -> tasks.LambdaInvoke:
        """A call of one of the stack's shared functions, through its published version (so the role
        names exactly that version), retried on the Lambda service's transient errors."""
        task = tasks.LambdaInvoke(
            self,
            state,
            state_name=self._name(state),
            lambda_function=function.function.current_version,
            payload=sfn.TaskInput.from_object(payload),
            payload_response_only=True,
            retry_on_service_exceptions=False,
            **options,
        )
        self._retry_transient(task, TRANSIENT_LAMBDA_ERRORS, after_body=after_body)
        return task

    def _item_task(self, state: str, action: str, parameters: dict[str, Any], **options: Any) -> _ItemTask:
        task = _ItemTask(
            self, state, action=action, table=self.table, namespace=self.namespace, parameters=parameters, **options
        )
        task.add_prefix(self.prefix)
        self._item_tasks.append(task)
        return task

    def records_in_its_graph(self) -> list[tuple[dynamodb.ITable, str]]:
        """``(table, namespace)`` of the records an execution of the graph this guard is bound into
        can hold: this guard's, and those of every guard in the graph's branches and item processors
        (for a guard that is a state machine's definition: all of the state machine's)."""
        graph = self._item_tasks[0].graph  # all of a guard's states join one graph
        return records_of(graph) if graph is not None else [(self.table, self.namespace)]

    def _put(self, state: str, condition: str, names: dict[str, str], values: dict[str, Any]) -> _ItemTask:
        task = self._item_task(
            state,
            "putItem",
            {
                "Item": _attributes(self._acquire_item()),
                "ConditionExpression": condition,
                "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": _attributes(values),
            },
        )
        self._retry_transient(task)
        return task

    def _get(self, state: str) -> _ItemTask:
        task = self._item_task(
            state,
            "getItem",
            {"Key": _attributes(self._key_attr()), "ConsistentRead": True},
            result_path=f"$.{schema.RECORD}",
        )
        self._retry_transient(task)
        return task

    def _owner_check(self, state: str) -> tasks.CallAwsService:
        """Asks Step Functions whether the holder's execution still runs (Standard only)."""
        task = tasks.CallAwsService(
            self,
            state,
            state_name=self._name(state),
            service="sfn",
            action="describeExecution",
            iam_action="states:DescribeExecution",
            iam_resources=[executions_arn(self.owner_state_machine_name)],
            parameters={
                "ExecutionArn": sfn.JsonPath.array_get_item(
                    sfn.JsonPath.string_split(sfn.JsonPath.string_at(_attr(schema.OWNER)), "#"), 0
                ),
                # Without the holder's input and output: the response would carry them, JSON-escaped
                # again, and a response over 256 KiB fails the waiter (States.DataLimitExceeded).
                "IncludedData": "METADATA_ONLY",
            },
            result_selector={"Status.$": "$.Status", "ExecutionArn.$": "$.ExecutionArn"},
            result_path=_OWNER_STATE,
        )
        self._retry_transient(task, TRANSIENT_SFN_ERRORS)
        return task

    def _fail(self, state: str, error: str, cause: str) -> sfn.Fail:
        return sfn.Fail(self, state, state_name=self._name(state), error=error, cause=cause)

    def _build(self, body: sfn.IChainable) -> None:
        name = self._name
        compute_key = self._compute_key("ComputeKey", "$", meta_only=False)
        acquire = self._put(
            "Acquire",
            # Absent, or finished and expired (DynamoDB's TTL deletion can lag by days): B11. A record
            # in progress is never overwritten here; a lapsed one goes through Route's takeover.
            "attribute_not_exists(#id) OR (#expiration < :now AND #status <> :inprogress)",
            {"#id": schema.ID, "#expiration": schema.EXPIRATION, "#status": schema.STATUS},
            {":now": _n(f"{_META}.now"), ":inprogress": _literal(schema.INPROGRESS)},
        )
        # Fenced on the record as we saw it, owner and status: if anyone changed it since (finished
        # it, released it, took it over), look again.
        takeover = self._put(
            "Takeover",
            "#owner = :previous AND #status = :previous_status",
            {"#owner": schema.OWNER, "#status": schema.STATUS},
            {":previous": _s(_attr(schema.OWNER)), ":previous_status": _s(_attr(schema.STATUS))},
        )
        # After waiting, the clock readings of ComputeKey are stale: take fresh ones before writing.
        renew = self._compute_key("Renew", f"$.{schema.VALUE}", meta_only=True)
        renew_for_takeover = self._compute_key("RenewForTakeover", f"$.{schema.VALUE}", meta_only=True)
        inspect = self._get("Inspect")
        route = sfn.Choice(self, "Route", state_name=name("Route"))
        replay = sfn.Pass(
            self,
            "Replay",
            state_name=name("Replay"),
            parameters={
                schema.VALUE: sfn.JsonPath.string_to_json(sfn.JsonPath.string_at(_attr(schema.DATA)))
            },
            output_path=f"$.{schema.VALUE}",
        )
        mismatch = self._fail("PayloadMismatch", schema.PAYLOAD_MISMATCH, "The idempotency key was already used with a different payload.")
        in_flight = self._fail("InFlight", schema.IN_FLIGHT, "Another execution holds this idempotency key and is still running.")
        guarded = sfn.Parallel(
            self,
            "Body",
            state_name=name("Body"),
            input_path=f"$.{schema.VALUE}",
            result_path=f"$.{schema.VALUE}",
        )
        guarded.branch(body)
        complete = self._store_result() if self.result_storage.is_large else self._finish(
            "Complete",
            schema.COMPLETED,
            {
                schema.DATA: tasks.DynamoAttributeValue.from_string(
                    sfn.JsonPath.json_to_string(sfn.JsonPath.object_at(f"$.{schema.VALUE}[0]"))
                )
            },
            output_path=f"$.{schema.VALUE}[0]",
        )
        lease_lost = self._fail("LeaseLost", schema.LEASE_LOST, "Another execution took this idempotency key over; this run's result was not stored.")
        failed = sfn.Fail(
            self,
            "Failed",
            state_name=name("Failed"),
            error_path="$.error.Error",
            cause_path="$.error.Cause",
        )
        on_failure, replay_failure = self._failure_states(failed)

        # Wiring.
        compute_key.next(acquire)
        acquire.add_catch(inspect, errors=[CONDITION_FAILED], result_path=sfn.JsonPath.DISCARD)
        acquire.next(guarded)
        renew.next(acquire)
        renew_for_takeover.next(takeover)
        takeover.add_catch(inspect, errors=[CONDITION_FAILED], result_path=sfn.JsonPath.DISCARD)
        takeover.next(guarded)
        inspect.next(route)
        guarded.add_catch(self._name_step_errors(on_failure), errors=["States.ALL"], result_path="$.error")
        guarded.next(complete)
        complete.add_catch(
            lease_lost,
            errors=[schema.LEASE_LOST if self.result_storage.is_large else CONDITION_FAILED],
            result_path=sfn.JsonPath.DISCARD,
        )

        wait = self._wait_for_holder(route, in_flight)
        route.when(sfn.Condition.is_not_present(_ITEM), renew)
        # Another payload's record, unless it is in progress past its lease: a crashed holder's
        # payload must not block the key (it is taken over below, after the owner check).
        route.when(
            sfn.Condition.and_(
                sfn.Condition.not_(
                    sfn.Condition.string_equals_json_path(_attr(schema.VALIDATION), f"{_META}.validation")
                ),
                sfn.Condition.not_(_LAPSED_IN_PROGRESS),
            ),
            mismatch,
        )
        completed = sfn.Condition.string_equals(_attr(schema.STATUS), schema.COMPLETED)
        if self.result_storage.is_large:
            restore = self._invoke(
                "Restore",
                self.result_function,
                {"action": "restore", "table": self.table.table_name, "id": sfn.JsonPath.string_at(f"{_META}.id")},
            )
            self._retry_function_errors(restore, final=schema.RESULT_MISSING)
        else:
            restore = None
        route.when(sfn.Condition.and_(completed, sfn.Condition.is_present(_attr(schema.DATA))), replay)
        # A result kept elsewhere: restore it, or (a guard keeping results inline meets a record of
        # one with large results) say so, rather than read a missing path (an uncatchable error).
        route.when(
            completed,
            restore
            or self._fail(
                "ResultMissing",
                schema.RESULT_MISSING,
                "The record was completed by a guard with ResultStorage.large(); this guard keeps results inline.",
            ),
        )
        if replay_failure is not None:
            route.when(sfn.Condition.string_equals(_attr(schema.STATUS), schema.FAILED), replay_failure)
        # Our own record: a retried Acquire whose first attempt did succeed.
        route.when(sfn.Condition.string_equals_json_path(_attr(schema.OWNER), f"{_META}.owner"), guarded)
        route.when(_HELD_WITHIN_LEASE, wait)
        if self.owner_state_machine_name is not None:
            owner_check = self._owner_check("OwnerCheck")
            # Gone: take over. Any other error: we cannot tell, so the holder counts as running.
            owner_check.add_catch(renew_for_takeover, errors=OWNER_GONE_ERRORS, result_path=sfn.JsonPath.DISCARD)
            owner_check.add_catch(wait, errors=["States.ALL"], result_path=sfn.JsonPath.DISCARD)
            route.when(_IN_PROGRESS, owner_check)
            owner_check.next(
                sfn.Choice(self, "OwnerRunning", state_name=name("OwnerRunning"))
                .when(_OWNER_DONE, renew_for_takeover)
                .otherwise(wait)
            )
        route.otherwise(renew_for_takeover)

        self._start_state = compute_key
        self._end_states = [complete, replay] + ([restore] if restore is not None else [])

    def _store_result(self) -> tasks.LambdaInvoke:
        """Complete through the result function, which picks the record, compressed, or S3; it
        raises ``Idempotency.LeaseLost`` itself when the record is no longer ours."""
        payload: dict[str, Any] = {
            "action": "store",
            "table": self.table.table_name,
            "inline_threshold": self.result_storage.inline_threshold.to_bytes(),
            "result": sfn.JsonPath.object_at(f"$.{schema.VALUE}[0]"),
            schema.META: sfn.JsonPath.object_at(_META),
        }
        if self.results_bucket is not None:
            payload["bucket"] = self.results_bucket.bucket_name
        task = self._invoke(
            "Complete", self.result_function, payload, after_body=True,
            result_path=sfn.JsonPath.DISCARD, output_path=f"$.{schema.VALUE}[0]",
        )
        self._retry_function_errors(task, final=schema.LEASE_LOST)
        return task

    def _retry_function_errors(self, task: tasks.LambdaInvoke, *, final: str) -> None:
        """The result function's own errors (throttled DynamoDB or S3, a timeout) are retried like a
        write after the body, except ``final``, which retrying cannot change. Retrying is safe: the
        object name is fixed per holder and the record write is fenced."""
        task.add_retry(errors=[final], max_attempts=0)
        self._retry_transient(task, ["States.ALL"], after_body=True)

    def _name_step_errors(self, on_failure: sfn.IChainable) -> sfn.IChainable:
        """Step Functions' own errors (``States.*``) cannot be raised again by a Fail state, so they
        travel as ``Idempotency.BodyFailed`` with the original error and cause as JSON in the cause."""
        rename = sfn.Pass(
            self,
            "NameStepError",
            state_name=self._name("NameStepError"),
            parameters={
                schema.VALUE: sfn.JsonPath.object_at(f"$.{schema.VALUE}"),
                schema.META: sfn.JsonPath.object_at(_META),
                "error": {"Error": schema.BODY_FAILED, "Cause": sfn.JsonPath.json_to_string(sfn.JsonPath.object_at("$.error"))},
            },
        )
        rename.next(on_failure)
        return (
            sfn.Choice(self, "Caught", state_name=self._name("Caught"))
            .when(sfn.Condition.string_matches("$.error.Error", "States.*"), rename)
            .otherwise(on_failure)
        )

    def _finish(
        self,
        state: str,
        status: str,
        fields: dict[str, tasks.DynamoAttributeValue],
        output_path: str | None = None,
    ) -> _ItemTask:
        """The fenced write that ends a run: the whole record with ``status`` and ``fields``, on
        condition that we still own it, or that it is gone (released after this execution failed,
        which a redrive of it then completes). Every attribute is written, lease ones included: the
        Choice rules read them, and a rule must never meet a missing path (States.Runtime)."""
        attributes = {name: value for name, value in self._acquire_item().items() if name != schema.ID}
        attributes.update({schema.STATUS: _literal(status), schema.EXPIRATION: _n(f"{_META}.expiration"), **fields})
        task = self._item_task(
            state,
            "updateItem",
            {
                "Key": _attributes(self._key_attr()),
                "UpdateExpression": "SET " + ", ".join(f"#{name} = :{name}" for name in attributes),
                "ConditionExpression": "attribute_not_exists(#id) OR #owner = :owner",
                "ExpressionAttributeNames": {"#id": schema.ID, **{f"#{name}": name for name in attributes}},
                "ExpressionAttributeValues": _attributes({f":{name}": value for name, value in attributes.items()}),
            },
            output_path=output_path,
        )
        self._retry_transient(task, after_body=True)
        return task

    def _failure_states(self, failed: sfn.Fail) -> tuple[sfn.IChainable, sfn.Fail | None]:
        """What the Body's catch goes to (ending in ``failed``), and for CACHE the state that replays
        a stored failure."""
        name = self._name
        writes: list[sfn.State] = []
        release: sfn.State | None = None
        record_failure: sfn.State | None = None
        if self.on_failure is FailurePolicy.RELEASE or self.cache_errors:
            release = self._item_task(
                "Release",
                "deleteItem",
                {
                    "Key": _attributes(self._key_attr()),
                    "ConditionExpression": "#owner = :owner",
                    "ExpressionAttributeNames": {"#owner": schema.OWNER},
                    "ExpressionAttributeValues": _attributes({":owner": _s(f"{_META}.owner")}),
                },
            )
            self._retry_transient(release, after_body=True)
            writes.append(release)
        if self.on_failure is FailurePolicy.CACHE:
            record_failure = self._finish(
                "RecordFailure", schema.FAILED, {schema.ERROR: _s("$.error.Error"), schema.CAUSE: _s("$.error.Cause")}
            )
            writes.append(record_failure)
        for write in writes:
            # Not ours any more (taken over after our lease lapsed): leave the record alone.
            write.add_catch(failed, errors=[CONDITION_FAILED], result_path=sfn.JsonPath.DISCARD)
            write.next(failed)
        if record_failure is None:
            return release, None
        replay_failure = sfn.Fail(
            self,
            "ReplayFailure",
            state_name=name("ReplayFailure"),
            error_path=_attr(schema.ERROR),
            cause_path=_attr(schema.CAUSE),
        )
        if not self.cache_errors:
            return record_failure, replay_failure
        listed = [sfn.Condition.string_equals("$.error.Error", error) for error in self.cache_errors]
        cached = sfn.Condition.or_(*listed) if len(listed) > 1 else listed[0]
        choose = (
            sfn.Choice(self, "CacheOrRelease", state_name=name("CacheOrRelease"))
            .when(cached, record_failure)
            .otherwise(release)
        )
        return choose, replay_failure

    @property
    def start_state(self) -> sfn.State:
        return self._start_state

    @property
    def end_states(self) -> list[sfn.INextable]:
        return self._end_states

    def _wait_for_holder(self, route: sfn.Choice, in_flight: sfn.Fail) -> sfn.IChainable:
        """The states a duplicate enters while another execution holds its key."""
        if self.on_in_flight is InFlightPolicy.FAIL:
            return in_flight
        name = self._name
        interval = int(self.poll_interval.to_seconds())
        attempts, max_delay = poll_schedule(interval, int(self.max_wait.to_seconds()))
        # One poll is one retry of this Parallel: its branch reads the record and fails while the
        # holder is still running, so backoff and the max_wait bound cost no extra states.
        poll = self._get("Poll")
        busy = sfn.Fail(self, "Busy", state_name=name("Busy"), error=schema.STILL_IN_FLIGHT)
        settled = sfn.Succeed(self, "Settled", state_name=name("Settled"))
        # Rules are evaluated in order and stop at the first match, so no rule reads a path of an
        # absent record (a missing path fails the execution, And or not).
        check = (
            sfn.Choice(self, "Check", state_name=name("Check"))
            .when(sfn.Condition.is_not_present(_ITEM), settled)
            .when(sfn.Condition.string_equals_json_path(_attr(schema.OWNER), f"{_META}.owner"), settled)
            .when(_HELD_WITHIN_LEASE, busy)
        )
        if self.owner_state_machine_name is not None:
            # Past the lease: still busy while the holder's execution runs (polls past a lease only).
            poll_owner = self._owner_check("PollOwner")
            poll_owner.add_catch(settled, errors=OWNER_GONE_ERRORS, result_path=sfn.JsonPath.DISCARD)
            poll_owner.add_catch(busy, errors=["States.ALL"], result_path=sfn.JsonPath.DISCARD)
            poll_owner.next(
                sfn.Choice(self, "StillRunning", state_name=name("StillRunning"))
                .when(_OWNER_DONE, settled)
                .otherwise(busy)
            )
            check.when(_IN_PROGRESS, poll_owner)
        check.otherwise(settled)
        wait = sfn.Parallel(self, "Await", state_name=name("Await"), output_path="$[0]").branch(poll.next(check))
        wait.add_retry(
            errors=[schema.STILL_IN_FLIGHT],
            interval=self.poll_interval,
            backoff_rate=2,
            max_attempts=attempts,
            max_delay=Duration.seconds(max_delay),
        )
        wait.add_catch(in_flight, errors=[schema.STILL_IN_FLIGHT], result_path=sfn.JsonPath.DISCARD)
        wait.next(route)
        backoff = sfn.Wait(
            self, "Backoff", state_name=name("Backoff"), time=sfn.WaitTime.duration(self.poll_interval)
        )
        return backoff.next(wait)
