"""``python -m bench.guard_floor``: how much of a workflow's synth time its guard's states are (issue 56).

An experiment beside the benchmark, not one of its sections: 20 workflows of the synth section
(``growth.build``) with the real guard, against the same 20 with each guard cut to four states
(``Acquire``, the body's Parallel, ``Complete``, ``Failed``), and 20 bare state machines, interleaved in
one process. The cut guard's definition is not the protocol: it is built only to be synthesized and
timed, so what is left is a workflow's own resources (role, log group, state machine, release-function
watch, cdk-nag acknowledgments), its share of the table and the functions, and the synth-time checks.

And the same 20 with each guard cut to its body's Parallel alone, which registers the real guard's
permissions as it joins the graph (``body``): what a guard whose other states were rendered in Python
would leave to the CDK, short of the Python that renders them. Since issue 56's eighth part the real guard is
that guard (``guard.json_states``); the cuts are made of the CDK's states, so the real guard now makes fewer
calls than the four-state cut, and about as many as the body cut.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import tempfile
import time
from collections.abc import Iterator
from typing import Any

from aws_cdk import aws_iam as iam
from aws_cdk import aws_stepfunctions as sfn

from idempotent_constructs._synth.functions import WORKFLOW_ITEM_ACTIONS, executions_arn
from idempotent_constructs.guard import IdempotencyGuard, finish
from idempotent_constructs.guard.config import GuardConfig
from idempotent_constructs.guard.tasks import ItemTask, _invoke_statement, item_statements

from .growth import build, jsii_calls, synthesize

KINDS = ("real", "cut", "body", "bare")
GUARDS = KINDS[:-1]  # all but bare


def _cut(guard: IdempotencyGuard, body: sfn.IChainable) -> None:
    """``IdempotencyGuard._build`` with four states: what the rest of the guard needs to be synthesized."""
    guard.states_in_python = False  # the CDK's states
    config = guard.config
    failed = sfn.Fail.jsonata(guard, "Failed", state_name=config.name("Failed"))
    acquire = ItemTask(guard, "Acquire", config=config, action="updateItem", arguments="{'a': 1}")
    complete = ItemTask(guard, "Complete", config=config, action="updateItem", arguments="{'a': 2}")
    guard._acquire = acquire
    guard._placement.task = acquire
    guard._wiring = finish.Wiring(guard, body, failed, complete)
    guard._wiring.lead(acquire)
    complete.rendering = guard._wiring.reads
    guard._start_state, guard._end_states = acquire, [complete]


class _Body(sfn.Parallel):
    """The body's Parallel of a guard cut to it, registering, as it joins a graph, what the real guard's states
    register: its item actions on its namespace, the shared functions' invocation, the holder's DescribeExecution."""

    def __init__(self, guard: IdempotencyGuard, body: sfn.IChainable) -> None:
        super().__init__(guard, "Body", state_name=guard.config.name("Body"))
        self.branch(body)
        self.statements = [
            *(item_statements(guard.config, action) for action in _ITEM_ACTIONS),
            [_invoke_statement(guard.key_function.function), _invoke_statement(guard.result_function.function)],
            _owner_statements(guard.config),
        ]
        # Read as its guard's task's (IdempotencyGuard.records_in_its_graph): unset, the guard's own records are named.
        self.graph: sfn.StateGraph | None = None

    def bind_to_graph(self, graph: sfn.StateGraph) -> None:
        super().bind_to_graph(graph)
        for statements in self.statements:
            for statement in statements:
                graph.register_policy_statement(statement)


# The real guard's DynamoDB actions (WORKFLOW_ITEM_ACTIONS), as its tasks name them.
_ITEM_ACTIONS = [action.split(":")[1][0].lower() + action.split(":")[1][1:] for action in WORKFLOW_ITEM_ACTIONS]


def _owner_statements(config: GuardConfig) -> list[iam.PolicyStatement]:
    """What the owner check's task grants: DescribeExecution of the holder's executions (Standard only)."""
    name = config.owner_state_machine_name
    if name is None:
        return []
    return [iam.PolicyStatement(actions=["states:DescribeExecution"], resources=[executions_arn(name)])]


def _body_only(guard: IdempotencyGuard, body: sfn.IChainable) -> None:
    """``IdempotencyGuard._build`` with the body's Parallel alone (``_Body``)."""
    guard.states_in_python = False  # the CDK's states
    parallel = _Body(guard, body)
    guard._acquire = parallel  # type: ignore[assignment]
    guard._wiring = finish.Wiring(guard, body, parallel, parallel)
    guard._start_state, guard._end_states = parallel, [parallel]


_CUTS = {"cut": _cut, "body": _body_only}


@contextlib.contextmanager
def _guards(kind: str) -> Iterator[None]:
    real = IdempotencyGuard._build
    if kind in _CUTS:
        IdempotencyGuard._build = _CUTS[kind]  # type: ignore[method-assign]
    try:
        yield
    finally:
        IdempotencyGuard._build = real  # type: ignore[method-assign]


def _once(kind: str, count: int) -> float:
    with _guards(kind), tempfile.TemporaryDirectory(prefix="bench-floor-") as outdir:
        started = time.perf_counter()
        synthesize(build(count, kind != "bare", outdir))
        return time.perf_counter() - started


def permissions(kind: str, count: int = 2) -> dict[str, Any]:
    """In a stack of ``count`` workflows whose guards are ``kind``'s: the workflows' roles' policies, by logical id (a
    cut guard that stands for what the CDK would still do must grant what the real one grants), and the size of
    the definitions' shared texts (which tells a cut guard's from the real one's)."""
    with _guards(kind), tempfile.TemporaryDirectory(prefix="bench-floor-") as outdir:
        template, _ = synthesize(build(count, True, outdir))
    roles = {
        name: resource["Properties"].get("Policies")
        for name, resource in template["Resources"].items()
        if resource["Type"] == "AWS::IAM::Role" and name.startswith("Workflow")
    }
    return {"policies": roles, "definition_bytes": len(json.dumps(template.get("Mappings", {})))}


def measure(count: int = 20, repetitions: int = 7) -> dict[str, Any]:
    """Seconds (median of ``repetitions``, interleaved) and calls into jsii a workflow for each kind, and
    each guard's ratio to bare."""
    calls = {}
    for kind in KINDS:
        _once(kind, count)  # jsii loads what this kind uses first
        with jsii_calls() as counted:
            _once(kind, count)
        calls[kind] = round(counted[0] / count, 1) if counted else None
    times: dict[str, list[float]] = {kind: [] for kind in KINDS}
    for repetition in range(repetitions):
        for kind in KINDS if repetition % 2 == 0 else reversed(KINDS):
            times[kind].append(_once(kind, count))
    medians = {kind: statistics.median(values) for kind, values in times.items()}
    return {
        "workflows": count,
        "repetitions": repetitions,
        "median_seconds": {kind: round(value, 3) for kind, value in medians.items()},
        "jsii_calls_per_workflow": calls,
        "ratio": {kind: round(medians[kind] / medians["bare"], 1) for kind in GUARDS},
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.guard_floor", description=__doc__.splitlines()[0])
    parser.add_argument("--workflows", type=int, default=20)
    parser.add_argument("--repetitions", type=int, default=7)
    arguments = parser.parse_args()
    found = measure(arguments.workflows, arguments.repetitions)
    bare = found["median_seconds"]["bare"]
    for kind in GUARDS:
        print(
            f"{kind} guard: {found['median_seconds'][kind]:.3f} s for {found['workflows']} workflows, "
            f"{found['jsii_calls_per_workflow'][kind]} calls a workflow; bare {bare:.3f} s "
            f"({found['jsii_calls_per_workflow']['bare']} calls); {found['ratio'][kind]} times bare"
        )


if __name__ == "__main__":
    main()
