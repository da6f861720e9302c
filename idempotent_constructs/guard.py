"""``IdempotencyGuard``: the states that make any chain idempotent (DESIGN section 6).

Shape of the generated states (names carry the guard's prefix)::

    ComputeKey -> Acquire --------------------------------> Body -> Complete -> (next)
                     | exists                               ^  | fails
                     v                                      |  v
                  Inspect -> Route --completed-----------> Replay -> (next)
                     ^          |--released--> Acquire      |  Release -> Failed
                     |          |--ours / lapsed lease ------+ (Takeover when lapsed)
                     |          |--in flight--> Backoff -> Await (poll, retried with backoff) -> Route
                     |          '--other payload--> PayloadMismatch

Everything is JSONPath and carries its metadata in the state payload (no variables, no JSONata)::

    {"value": <the chain's input; after Body, [its output]>,
     "idempotency": {"id", "validation", "owner", "now", "expiration", "lease_expiration", "deadline"},
     "record": <the last GetItem response>}
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

from .errors import Problems
from .functions import KeyFunction, key_function
from .key import IdempotencyKey
from .lambda_src import schema
from .policies import FailurePolicy, InFlightPolicy
from .table import IdempotencyTable

DEFAULT_EXPIRES_AFTER = Duration.hours(24)
DEFAULT_LEASE = Duration.minutes(15)
DEFAULT_POLL_INTERVAL = Duration.seconds(1)
DEFAULT_MAX_WAIT = Duration.minutes(5)
MAX_POLL_DELAY_SECONDS = 30
MAX_STATE_NAME_LENGTH = 80

# Transient errors of the DynamoDB service integration (its names are "DynamoDB.<error code>";
# "DynamoDB.AmazonDynamoDBException" is what it raises when no error code came back).
TRANSIENT_DYNAMODB_ERRORS = [
    "DynamoDB.ProvisionedThroughputExceededException",
    "DynamoDB.ThrottlingException",
    "DynamoDB.RequestLimitExceeded",
    "DynamoDB.InternalServerError",
    "DynamoDB.ServiceUnavailable",
    "DynamoDB.AmazonDynamoDBException",
]
CONDITION_FAILED = "DynamoDB.ConditionalCheckFailedException"
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
_NOW = "$$.State.EnteredTime"


def _attr(name: str, kind: str = "S") -> str:
    return f"{_ITEM}.{name}.{kind}"


def _s(path: str) -> tasks.DynamoAttributeValue:
    return tasks.DynamoAttributeValue.from_string(sfn.JsonPath.string_at(path))


def _n(path: str) -> tasks.DynamoAttributeValue:
    return tasks.DynamoAttributeValue.number_from_string(sfn.JsonPath.string_at(path))


def _literal(value: str) -> tasks.DynamoAttributeValue:
    return tasks.DynamoAttributeValue.from_string(value)


def poll_schedule(poll_interval: int, max_wait: int) -> tuple[int, int]:
    """``(max_attempts, max_delay)`` of the poll retrier: delays double from ``poll_interval`` up to
    ``max_delay`` and add up to at least ``max_wait`` (the first wait is the ``Backoff`` state)."""
    max_delay = max(poll_interval, min(MAX_POLL_DELAY_SECONDS, max_wait))
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
        state_name_prefix: str | None = None,
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
        :param state_name_prefix: prefix of every generated state name. Default: ``"{construct_id}."``.
        """
        super().__init__(scope, construct_id)
        self.key = key or IdempotencyKey.whole_input()
        self.namespace = namespace if namespace is not None else self.node.path
        self.expires_after = expires_after or DEFAULT_EXPIRES_AFTER
        self.lease = lease or DEFAULT_LEASE
        self.poll_interval = poll_interval or DEFAULT_POLL_INTERVAL
        self.max_wait = max_wait or DEFAULT_MAX_WAIT
        self.on_in_flight = on_in_flight or InFlightPolicy.WAIT
        self.on_failure = on_failure or FailurePolicy.RELEASE
        self.prefix = state_name_prefix if state_name_prefix is not None else f"{construct_id}."
        self.table: dynamodb.ITable = table.table if isinstance(table, IdempotencyTable) else table
        self._validate()

        self.key_function: KeyFunction = key_function(self)
        self._build(body)

    # --- validation -------------------------------------------------------------------------------
    def _validate(self) -> None:
        problems = Problems(self)
        problems.extend(self.key.problems())
        if not self.namespace or "#" in self.namespace:
            problems.add(
                f"namespace: {self.namespace!r} must be a non-empty string without '#' "
                "('#' separates the namespace from the key hash); choose another namespace"
            )
        longest = f"{self.prefix}PayloadMismatch"
        if len(longest) > MAX_STATE_NAME_LENGTH:
            problems.add(
                f"state_name_prefix: {self.prefix!r} makes state names longer than Step Functions' "
                f"{MAX_STATE_NAME_LENGTH} characters; use a shorter construct id or state_name_prefix"
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

    @staticmethod
    def _retry_transient(task: sfn.TaskStateBase, errors: list[str] = TRANSIENT_DYNAMODB_ERRORS) -> None:
        # Ten retries, jittered, at most 10 s apart: a call fails for good only if eleven attempts in
        # about a minute all fail (at a 30% fault rate, about 2 in a million).
        task.add_retry(
            errors=errors,
            interval=Duration.seconds(1),
            backoff_rate=2,
            max_attempts=10,
            max_delay=Duration.seconds(10),
            jitter_strategy=sfn.JitterType.FULL,
        )

    def _key_attr(self) -> dict[str, tasks.DynamoAttributeValue]:
        return {schema.ID: _s(f"{_META}.id")}

    def _acquire_item(self) -> dict[str, tasks.DynamoAttributeValue]:
        return {
            schema.ID: _s(f"{_META}.id"),
            schema.STATUS: _literal(schema.INPROGRESS),
            schema.EXPIRATION: _n(f"{_META}.expiration"),
            schema.IN_PROGRESS_EXPIRATION: _n(f"{_META}.lease_expiration"),
            schema.IN_PROGRESS_DEADLINE: _s(f"{_META}.deadline"),
            schema.OWNER: _s(f"{_META}.owner"),
            schema.VALIDATION: _s(f"{_META}.validation"),
        }

    def _build(self, body: sfn.IChainable) -> None:
        name = self._name
        spec: dict[str, Any] = {
            "input": sfn.JsonPath.entire_payload,
            "execution": sfn.JsonPath.string_at("$$.Execution.Id"),
            "namespace": self.namespace,
            "kind": self.key.kind,
            "lease_seconds": int(self.lease.to_seconds()),
            "expires_after_seconds": int(self.expires_after.to_seconds()),
        }
        if self.key.expression is not None:
            spec["expression"] = self.key.expression
        compute_key = tasks.LambdaInvoke(
            self,
            "ComputeKey",
            state_name=name("ComputeKey"),
            lambda_function=self.key_function.function.current_version,
            payload=sfn.TaskInput.from_object(spec),
            payload_response_only=True,
            retry_on_service_exceptions=False,
        )
        self._retry_transient(compute_key, TRANSIENT_LAMBDA_ERRORS)

        acquire = tasks.DynamoPutItem(
            self,
            "Acquire",
            state_name=name("Acquire"),
            table=self.table,
            item=self._acquire_item(),
            # Absent, or present but expired (DynamoDB's TTL deletion can lag by days): B11.
            condition_expression="attribute_not_exists(#id) OR #expiration < :now",
            expression_attribute_names={"#id": schema.ID, "#expiration": schema.EXPIRATION},
            expression_attribute_values={":now": _n(f"{_META}.now")},
            result_path=sfn.JsonPath.DISCARD,
        )
        takeover = tasks.DynamoPutItem(
            self,
            "Takeover",
            state_name=name("Takeover"),
            table=self.table,
            item=self._acquire_item(),
            # Fenced on the holder we saw: if anyone changed the record since, look again.
            condition_expression="#owner = :previous",
            expression_attribute_names={"#owner": schema.OWNER},
            expression_attribute_values={":previous": _s(_attr(schema.OWNER))},
            result_path=sfn.JsonPath.DISCARD,
        )
        inspect = tasks.DynamoGetItem(
            self,
            "Inspect",
            state_name=name("Inspect"),
            table=self.table,
            key=self._key_attr(),
            consistent_read=True,
            result_path=f"$.{schema.RECORD}",
        )
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
        mismatch = sfn.Fail(
            self,
            "PayloadMismatch",
            state_name=name("PayloadMismatch"),
            error=schema.PAYLOAD_MISMATCH,
            cause="The idempotency key was already used with a different payload.",
        )
        in_flight = sfn.Fail(
            self,
            "InFlight",
            state_name=name("InFlight"),
            error=schema.IN_FLIGHT,
            cause="Another execution holds this idempotency key and is still running.",
        )

        guarded = sfn.Parallel(
            self,
            "Body",
            state_name=name("Body"),
            input_path=f"$.{schema.VALUE}",
            result_path=f"$.{schema.VALUE}",
        )
        guarded.branch(body)
        complete = self._finish(
            "Complete",
            schema.COMPLETED,
            {
                schema.DATA: tasks.DynamoAttributeValue.from_string(
                    sfn.JsonPath.json_to_string(sfn.JsonPath.object_at(f"$.{schema.VALUE}[0]"))
                )
            },
            output_path=f"$.{schema.VALUE}[0]",
        )
        lease_lost = sfn.Fail(
            self,
            "LeaseLost",
            state_name=name("LeaseLost"),
            error=schema.LEASE_LOST,
            cause="Another execution took this idempotency key over; this run's result was not stored.",
        )
        failed = sfn.Fail(
            self,
            "Failed",
            state_name=name("Failed"),
            error_path="$.error.Error",
            cause_path="$.error.Cause",
        )
        on_failure, replay_failure = self._failure_states()

        for task in (acquire, takeover, inspect, complete, on_failure):
            self._retry_transient(task)

        # Wiring.
        compute_key.next(acquire)
        acquire.add_catch(inspect, errors=[CONDITION_FAILED], result_path=sfn.JsonPath.DISCARD)
        acquire.next(guarded)
        takeover.add_catch(inspect, errors=[CONDITION_FAILED], result_path=sfn.JsonPath.DISCARD)
        takeover.next(guarded)
        inspect.next(route)
        guarded.add_catch(on_failure, errors=["States.ALL"], result_path="$.error")
        guarded.next(complete)
        complete.add_catch(lease_lost, errors=[CONDITION_FAILED], result_path=sfn.JsonPath.DISCARD)
        # Not ours any more (taken over after our lease lapsed): leave the record alone.
        on_failure.add_catch(failed, errors=[CONDITION_FAILED], result_path=sfn.JsonPath.DISCARD)
        on_failure.next(failed)

        held_by_other = sfn.Condition.and_(
            sfn.Condition.string_equals(_attr(schema.STATUS), schema.INPROGRESS),
            sfn.Condition.timestamp_less_than_json_path(_NOW, _attr(schema.IN_PROGRESS_DEADLINE)),
        )
        route.when(sfn.Condition.is_not_present(_ITEM), acquire)
        route.when(
            sfn.Condition.not_(
                sfn.Condition.string_equals_json_path(_attr(schema.VALIDATION), f"{_META}.validation")
            ),
            mismatch,
        )
        route.when(sfn.Condition.string_equals(_attr(schema.STATUS), schema.COMPLETED), replay)
        if replay_failure is not None:
            route.when(sfn.Condition.string_equals(_attr(schema.STATUS), schema.FAILED), replay_failure)
        # Our own record: a retried Acquire whose first attempt did succeed.
        route.when(sfn.Condition.string_equals_json_path(_attr(schema.OWNER), f"{_META}.owner"), guarded)
        route.when(held_by_other, self._wait_for_holder(route, held_by_other, in_flight))
        route.otherwise(takeover)

        self._start_state = compute_key
        self._end_states = [complete, replay]
        self.states = {
            "compute_key": compute_key,
            "acquire": acquire,
            "inspect": inspect,
            "route": route,
            "body": guarded,
            "complete": complete,
            "replay": replay,
            "on_failure": on_failure,
            "takeover": takeover,
        }

    def _finish(
        self,
        state: str,
        status: str,
        fields: dict[str, tasks.DynamoAttributeValue],
        output_path: str | None = None,
    ) -> tasks.DynamoUpdateItem:
        """A fenced write that ends the holder's run: sets ``status``, ``fields`` and the record's
        final expiration, on condition that we still own the record."""
        names = {f"#{name}": name for name in fields}
        values = {f":{name}": value for name, value in fields.items()}
        assignments = "".join(f", #{name} = :{name}" for name in fields)
        return tasks.DynamoUpdateItem(
            self,
            state,
            state_name=self._name(state),
            table=self.table,
            key=self._key_attr(),
            # The lease attributes stay: Choice rules read them, and a rule must never meet a missing
            # path (Step Functions fails the execution with States.Runtime on one).
            update_expression=f"SET #status = :status, #expiration = :expiration{assignments}",
            condition_expression="#owner = :owner",
            expression_attribute_names={
                "#status": schema.STATUS,
                "#expiration": schema.EXPIRATION,
                "#owner": schema.OWNER,
                **names,
            },
            expression_attribute_values={
                ":status": _literal(status),
                ":expiration": _n(f"{_META}.expiration"),
                ":owner": _s(f"{_META}.owner"),
                **values,
            },
            result_path=sfn.JsonPath.DISCARD,
            output_path=output_path,
        )

    def _failure_states(self) -> tuple[sfn.TaskStateBase, sfn.Fail | None]:
        """What the Body's catch goes to, and (for CACHE) the state that replays a stored failure."""
        name = self._name
        if self.on_failure is FailurePolicy.RELEASE:
            release = tasks.DynamoDeleteItem(
                self,
                "Release",
                state_name=name("Release"),
                table=self.table,
                key=self._key_attr(),
                condition_expression="#owner = :owner",
                expression_attribute_names={"#owner": schema.OWNER},
                expression_attribute_values={":owner": _s(f"{_META}.owner")},
                result_path=sfn.JsonPath.DISCARD,
            )
            return release, None
        record_failure = self._finish(
            "RecordFailure", schema.FAILED, {schema.ERROR: _s("$.error.Error"), schema.CAUSE: _s("$.error.Cause")}
        )
        replay_failure = sfn.Fail(
            self,
            "ReplayFailure",
            state_name=name("ReplayFailure"),
            error_path=_attr(schema.ERROR),
            cause_path=_attr(schema.CAUSE),
        )
        return record_failure, replay_failure

    @property
    def start_state(self) -> sfn.State:
        return self._start_state

    @property
    def end_states(self) -> list[sfn.INextable]:
        return self._end_states

    def _wait_for_holder(
        self, route: sfn.Choice, held_by_other: sfn.Condition, in_flight: sfn.Fail
    ) -> sfn.IChainable:
        """The states a duplicate enters while another execution holds its key."""
        if self.on_in_flight is InFlightPolicy.FAIL:
            return in_flight
        name = self._name
        interval = int(self.poll_interval.to_seconds())
        attempts, max_delay = poll_schedule(interval, int(self.max_wait.to_seconds()))
        # One poll is one retry of this Parallel: its branch reads the record and fails while the
        # holder is still running, so backoff and the max_wait bound cost no extra states.
        poll = tasks.DynamoGetItem(
            self,
            "Poll",
            state_name=name("Poll"),
            table=self.table,
            key=self._key_attr(),
            consistent_read=True,
            result_path=f"$.{schema.RECORD}",
        )
        self._retry_transient(poll)
        busy = sfn.Fail(self, "Busy", state_name=name("Busy"), error=schema.STILL_IN_FLIGHT)
        settled = sfn.Succeed(self, "Settled", state_name=name("Settled"))
        # Rules are evaluated in order and stop at the first match, so no rule reads a path of an
        # absent record (a missing path fails the execution, And or not).
        check = (
            sfn.Choice(self, "Check", state_name=name("Check"))
            .when(sfn.Condition.is_not_present(_ITEM), settled)
            .when(
                sfn.Condition.and_(
                    sfn.Condition.not_(
                        sfn.Condition.string_equals_json_path(_attr(schema.OWNER), f"{_META}.owner")
                    ),
                    held_by_other,
                ),
                busy,
            )
            .otherwise(settled)
        )
        wait = sfn.Parallel(
            self, "Await", state_name=name("Await"), output_path="$[0]"
        ).branch(poll.next(check))
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
