"""Counting an execution's overhead from its history: states entered, retries (billed as transitions),
Lambda invocations and service calls by type, for the states that a predicate says are the wrapper's."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# Step Functions' resource names of the DynamoDB integrations -> the API operation they call.
_DYNAMODB_OPERATIONS = {
    "getItem": "GetItem",
    "putItem": "PutItem",
    "updateItem": "UpdateItem",
    "deleteItem": "DeleteItem",
    "transactWriteItems": "TransactWriteItems",
    "transactGetItems": "TransactGetItems",
    "query": "Query",
    "batchGetItem": "BatchGetItem",
    "batchWriteItem": "BatchWriteItem",
}
# Events that start one attempt of a state that can be retried.
_ATTEMPTS = {"TaskScheduled", "LambdaFunctionScheduled", "ParallelStateStarted", "MapStateStarted"}


@dataclass
class Overhead:
    """What the wrapper's states did in (a slice of) one execution."""

    states: list[str] = field(default_factory=list)
    retries: int = 0
    lambda_invocations: int = 0
    dynamodb: Counter = field(default_factory=Counter)  # operation -> calls (attempts included)
    other_calls: Counter = field(default_factory=Counter)  # e.g. "sfn:DescribeExecution"

    @property
    def transitions(self) -> int:
        """State transitions as Step Functions bills them: every state entered, plus every retry."""
        return len(self.states) + self.retries

    def as_dict(self) -> dict[str, Any]:
        return {
            "states_entered": len(self.states),
            "states": list(self.states),
            "retries": self.retries,
            "transitions": self.transitions,
            "lambda_invocations": self.lambda_invocations,
            "dynamodb_calls": dict(sorted(self.dynamodb.items())),
            "dynamodb_calls_total": sum(self.dynamodb.values()),
            "other_calls": dict(sorted(self.other_calls.items())),
        }


def overhead(events: list[dict[str, Any]], is_wrapper: Callable[[str], bool], start: int = 0, end: int | None = None) -> Overhead:
    """Count the wrapper's share of ``events[start:end]`` (the whole history is read for context).

    Each call is attributed to the task state that was entered last, each Parallel or Map attempt to
    the innermost one still open; any attempt after the first since the state was entered is a retry.
    """
    end = len(events) if end is None else end
    result = Overhead()
    task: str | None = None
    open_containers: list[str] = []
    since_entry: Counter = Counter()
    for index, event in enumerate(events[:end]):
        counted = index >= start
        kind = event["type"]
        if "stateEnteredEventDetails" in event:
            name = event["stateEnteredEventDetails"]["name"]
            if counted and is_wrapper(name):
                result.states.append(name)
            if kind.startswith("Task"):
                task = name
            if kind in ("ParallelStateEntered", "MapStateEntered"):
                open_containers.append(name)
            since_entry[name] = 0
            continue
        if kind in ("ParallelStateExited", "MapStateExited") and open_containers:
            open_containers.pop()
        if kind not in _ATTEMPTS:
            continue
        container = kind in ("ParallelStateStarted", "MapStateStarted")
        owner = (open_containers[-1] if open_containers else None) if container else task
        if owner is None:
            continue
        since_entry[owner] += 1
        if not counted or not is_wrapper(owner):
            continue
        if since_entry[owner] > 1:
            result.retries += 1
        if kind == "LambdaFunctionScheduled":
            result.lambda_invocations += 1
        elif kind == "TaskScheduled":
            details = event["taskScheduledEventDetails"]
            resource_type, resource = details["resourceType"], details["resource"]
            if resource_type == "lambda":
                result.lambda_invocations += 1
            elif resource_type in ("dynamodb", "aws-sdk:dynamodb"):
                result.dynamodb[_DYNAMODB_OPERATIONS.get(resource, resource)] += 1
            else:
                service = resource_type.removeprefix("aws-sdk:")
                result.other_calls[f"{service}:{resource[:1].upper()}{resource[1:]}"] += 1
    return result


def entered_at(events: list[dict[str, Any]], name: str) -> list[int]:
    """Positions in ``events`` of each entry into the state ``name``."""
    return [index for index, event in enumerate(events) if event.get("stateEnteredEventDetails", {}).get("name") == name]
