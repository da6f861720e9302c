"""Deployments and executions as a test reads them: resources by construct path, starts, waits, histories
and records. Works against the embedded emulator, ministack and AWS alike (``Emulator``)."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..lambda_src import schema

EXPRESS: dict[str, bool] = {}  # by state machine ARN, for one emulator: a state machine's type never changes


def is_express(client: Any, execution_arn: str, state_machine_arn: str | None = None) -> bool:
    """Whether the execution belongs to an Express state machine (moto's ARNs do not tell);
    ``state_machine_arn``, when the caller has described the execution already."""
    state_machine = state_machine_arn or client.describe_execution(executionArn=execution_arn)["stateMachineArn"]
    if state_machine not in EXPRESS:
        EXPRESS[state_machine] = client.describe_state_machine(stateMachineArn=state_machine)["type"] == "EXPRESS"
    return EXPRESS[state_machine]


def execution_history(client: Any, execution_arn: str) -> list[dict[str, Any]]:
    """Every history event of an execution, oldest first, read with ``client`` (a Step Functions
    client). For an Express execution, the emulator's own record of it: AWS keeps no history for Express
    (GetExecutionHistory is "not supported by EXPRESS state machines"), so a test that reads one shows what
    the emulator saw and cannot run unchanged on AWS, where it would assert on the output and the table."""
    events: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"executionArn": execution_arn, "maxResults": 1000}
    while True:
        page = client.get_execution_history(**kwargs)
        events.extend(page["events"])
        if not page.get("nextToken"):
            return events
        kwargs["nextToken"] = page["nextToken"]


@dataclass
class Execution:
    """A finished execution: status, parsed output, error and cause, and its history events (for an Express
    execution, ``express``, the emulator's own record: AWS keeps none)."""

    arn: str
    status: str
    input: Any
    output: Any = None
    error: str | None = None
    cause: str | None = None
    history: list[dict[str, Any]] = field(default_factory=list)

    express: bool = False

    def entered_states(self) -> list[str]:
        """Names of the states entered, in order."""
        return [event["stateEnteredEventDetails"]["name"] for event in self.history if "stateEnteredEventDetails" in event]

    def lambda_invocations(self) -> int:
        """Lambda invocations that were scheduled (attempts included)."""
        return sum(1 for event in self.history if event["type"] == "LambdaFunctionScheduled") + sum(
            1
            for event in self.history
            if event["type"] == "TaskScheduled" and event["taskScheduledEventDetails"]["resourceType"] == "lambda"
        )


def wait_for_execution(
    client: Any,
    execution_arn: str,
    *,
    history: Callable[[str], list[dict[str, Any]]],
    timeout: float,
    pause: float = 0.05,
    max_pause: float = 0.5,
) -> Execution:
    """Poll ``describe_execution`` (backing off from ``pause`` to ``max_pause``) until the execution
    ends; return it with its ``history``. Works against the emulator and against AWS."""
    deadline = time.monotonic() + timeout
    while True:
        described = client.describe_execution(executionArn=execution_arn)
        if described["status"] in schema.EXECUTION_ENDED:
            break
        if time.monotonic() > deadline:
            raise TimeoutError(f"{execution_arn} still {described['status']} after {timeout} s")
        time.sleep(pause)
        pause = min(pause * 1.5, max_pause)
    output = described.get("output")
    # The outcome of an Express execution is what StartSyncExecution would return (moto has none).
    express = is_express(client, execution_arn, described["stateMachineArn"])
    return Execution(
        arn=execution_arn,
        status=described["status"],
        input=json.loads(described["input"]),
        output=json.loads(output) if output is not None else None,
        error=described.get("error"),
        cause=described.get("cause"),
        history=history(execution_arn),
        express=express,
    )


class Emulator(Protocol):
    """What a ``Deployment`` needs of the emulator it was deployed to: ``LocalEmulator`` (moto), or the
    cross-check's ministack server."""

    def client(self, service: str) -> Any: ...

    def history(self, execution_arn: str) -> list[dict[str, Any]]: ...


class Deployment:
    """A stack deployed into an emulator."""

    def __init__(self, emulator: Emulator, stack_name: str, template: dict[str, Any], paths: dict[str, str]) -> None:
        self.emulator = emulator
        self.stack_name = stack_name
        self.template = template
        self.paths = paths  # logical id -> construct path
        # The resource types of the template the emulator skipped, not modelling them (LocalEmulator.deploy).
        self.unmodelled: tuple[str, ...] = ()
        pages = emulator.client("cloudformation").get_paginator("list_stack_resources").paginate(StackName=stack_name)
        self.resources = {
            resource["LogicalResourceId"]: resource["PhysicalResourceId"]
            for page in pages
            for resource in page["StackResourceSummaries"]
        }

    def _logical_ids(self, resource_type: str) -> list[str]:
        return [logical_id for logical_id, resource in self.template["Resources"].items() if resource["Type"] == resource_type]

    def physical_id(self, resource_type: str, name: str = "") -> str:
        """The physical id of the one resource of ``resource_type`` whose construct path contains
        ``name`` as whole segments ("Orders" finds "Stack/Orders/StateMachine/Resource")."""
        return str(self.resources[self.logical_id(resource_type, name)])

    def logical_id(self, resource_type: str, name: str = "") -> str:
        """The logical id of the one resource of ``resource_type`` whose construct path contains ``name``."""
        matches = [
            logical_id
            for logical_id in self._logical_ids(resource_type)
            if f"/{name}/" in f"/{self._path(logical_id)}/" or not name
        ]
        if len(matches) != 1:
            candidates = [self._path(logical_id) for logical_id in self._logical_ids(resource_type)]
            found = f"{len(matches)} of them match" if name else f"there are {len(matches)}"
            ids = sorted({path.split("/")[1] for path in candidates if "/" in path})
            raise LookupError(
                f"{self.stack_name} has {len(candidates)} {resource_type} ({', '.join(candidates) or 'none'}) and {found}"
                f"{f' {name!r}' if name else ''}: name the one you mean by a construct id in its path"
                + (
                    f", one of {', '.join(repr(i) for i in ids)} (records_of(execution, table=...), table_name(...), run(...))"
                    if ids
                    else ""
                )
            )
        return matches[0]

    def _path(self, logical_id: str) -> str:
        return self.paths.get(logical_id, logical_id)

    def state_machine_arn(self, name: str = "") -> str:
        return self.physical_id("AWS::StepFunctions::StateMachine", name)

    def table_name(self, name: str = "") -> str:
        return self.physical_id("AWS::DynamoDB::Table", name)

    def start(self, state_machine: str, payload: Any, name: str | None = None) -> str:
        """Start an execution; returns its ARN. ``state_machine`` is an ARN or a construct path part."""
        arn = state_machine if state_machine.startswith("arn:") else self.state_machine_arn(state_machine)
        # Gap: moto reuses a default execution name, so a second unnamed start collides: always name.
        response = self.emulator.client("stepfunctions").start_execution(
            stateMachineArn=arn, input=json.dumps(payload), name=name or uuid.uuid4().hex
        )
        return str(response["executionArn"])

    def wait(self, execution_arn: str, timeout: float = 120.0) -> Execution:
        """Wait until the execution has finished and return it with its history."""
        # Back off from 50 ms: every call goes through the emulator, and many waiting callers would
        # otherwise take the CPU from the executions they wait for.
        return wait_for_execution(self.emulator.client("stepfunctions"), execution_arn, history=self.history, timeout=timeout)

    def redrive(self, execution: Execution | str, timeout: float = 120.0) -> Execution:
        """Redrive an execution that failed, was aborted or timed out (RedriveExecution: it goes on from its
        unsuccessful state, under the same ARN) and wait until the redriven attempt has ended."""
        arn = execution if isinstance(execution, str) else execution.arn
        client = self.emulator.client("stepfunctions")
        count = client.describe_execution(executionArn=arn).get("redriveCount", 0)
        client.redrive_execution(executionArn=arn)
        deadline = time.monotonic() + timeout
        # Until DescribeExecution says redriven: on AWS it may still describe the attempt before for a moment.
        while client.describe_execution(executionArn=arn).get("redriveCount", 0) <= count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{arn} still not described as redriven after {timeout} s")
            time.sleep(0.1)
        return self.wait(arn, timeout)

    def wait_for_state(self, execution_arn: str, state_name: str, timeout: float = 60.0, *, times: int = 1) -> None:
        """Wait until a running execution has entered the state named ``state_name`` ``times`` times."""
        deadline = time.monotonic() + timeout
        while (
            sum(event.get("stateEnteredEventDetails", {}).get("name") == state_name for event in self.history(execution_arn))
            < times
        ):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{execution_arn} did not enter {state_name} {times} times within {timeout} s")
            time.sleep(0.1)

    def run(self, state_machine: str, payload: Any, name: str | None = None, timeout: float = 120.0) -> Execution:
        """Start an execution and wait for it."""
        return self.wait(self.start(state_machine, payload, name), timeout)

    def history(self, execution_arn: str) -> list[dict[str, Any]]:
        return self.emulator.history(execution_arn)

    def records_of(self, execution: Execution | str, table: str = "") -> dict[str, dict[str, Any]]:
        """The idempotency records an execution (or its ARN) holds or finished, by id."""
        arn = execution if isinstance(execution, str) else execution.arn
        return {
            item[schema.ID]["S"]: item
            for item in self.items(table)
            if schema.owned_by(item.get(schema.OWNER, {}).get("S", ""), arn)
        }

    def items(self, table: str = "") -> list[dict[str, Any]]:
        """Every item of a table of this stack, in DynamoDB JSON."""
        client = self.emulator.client("dynamodb")
        paginator = client.get_paginator("scan")
        name = self.table_name(table)
        return [item for page in paginator.paginate(TableName=name, ConsistentRead=True) for item in page["Items"]]
