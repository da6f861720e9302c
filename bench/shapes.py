"""Section: the states the wrapper enters on a first run and on a replay, shape by shape, side by side in
one run, Standard and Express, with the dollars each costs per million runs (issue 43).

One stack and one body function (``Work``: it returns its input), the same body in every workflow: one
Task (``UserWork``), or that Task and a Pass (``UserThen``), the user's states, never counted. The
shapes: an ``IdempotentStateMachine`` of one Task (the Task runs bare between Acquire and Complete), of
one Map over the order's lines (the Task per line; the Map runs bare), of two states (in the Body
Parallel: every whole workflow's shape before issue 43) and of two states run bare, its failures freed
from the execution's event (``FailurePolicy.RELEASE_WHEN_EXECUTION_FAILS``, Standard); an
``IdempotencyGuard`` of your own around the Task (run bare; its writes take their state entry's owner
token), around a Parallel of the Task (run bare), the same guard around the Task drawing its token first
(``in_inline_map``: every guard's shape before issue 43, and a guard's in an inline Map now) and one run
once per execution; and the aws-samples baseline (``bench/baseline.py``, Standard, as the sample is).

Dollars per million: Standard bills state transitions ($0.025 per 1,000, ``cost.PRICES``), with the
DynamoDB units and Lambda time the probe measures (``cost.path_cost``). Express bills requests and
duration, not transitions (https://aws.amazon.com/step-functions/pricing/: $1.00 per million requests,
and per GB-second of the run): the request is the execution's whether it is wrapped or not, and the
duration a state adds is AWS's to measure, not the emulator's, so an Express row prices only the
DynamoDB units and Lambda time of the wrapper's states.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from typing import Any

from aws_cdk import App, Duration, Stack
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

from idempotent_constructs import FailurePolicy, IdempotencyGuard, IdempotencyKey, IdempotencyTable, IdempotentStateMachine
from idempotent_constructs.testing import LocalEmulator

from . import baseline
from .cost import path_cost
from .functions import bench_function
from .overhead import Runner, request
from .probe import Probe

KEY = IdempotencyKey.from_paths("$.order.id")
KINDS = {"standard": sfn.StateMachineType.STANDARD, "express": sfn.StateMachineType.EXPRESS}


@dataclass(frozen=True)
class Shape:
    name: str  # as the report shows it
    machine: str  # the construct id of its state machine, before its kind's suffix
    before_issue_43: bool = False  # the shape the library made before issue 43 (and still makes where it says)
    kinds: tuple[str, ...] = ("standard", "express")


SHAPES = (
    Shape("IdempotentStateMachine, one Task", "WholeTask"),
    Shape("IdempotentStateMachine, one Map", "WholeMap"),
    Shape("IdempotentStateMachine, two states (Body Parallel)", "WholeChain", before_issue_43=True),
    Shape("IdempotentStateMachine, two states, released when the execution fails", "WholeReleased", kinds=("standard",)),
    Shape("IdempotencyGuard, one Task", "Guard"),
    Shape("IdempotencyGuard, one Parallel", "GuardParallel"),
    Shape("IdempotencyGuard drawing its token first (Begin)", "GuardBegin", before_issue_43=True),
    Shape("IdempotencyGuard once per execution, one Task", "GuardOnce"),
    Shape("aws-samples baseline, one Task", "Baseline", kinds=("standard",)),
)


def work(scope: Construct, function: lambda_.IFunction, then: bool = False, around: str = "") -> sfn.IChainable:
    """The body: the function's Task (``UserWork``), and a Pass after it (``UserThen``) if ``then``; or, ``around``
    it, a ``"Parallel"`` (``UserParallel``) whose one branch it is, or a ``"Map"`` (``UserMap``) that runs it for
    each of the order's lines."""
    task = tasks.LambdaInvoke(
        scope,
        "Work",
        state_name="UserWork",
        lambda_function=function,
        payload_response_only=True,
        retry_on_service_exceptions=False,
    )
    if around == "Parallel":
        return sfn.Parallel(scope, "Parallel", state_name="UserParallel").branch(task)
    if around == "Map":
        return sfn.Map(scope, "Map", state_name="UserMap", items_path="$.order.lines").item_processor(task)
    return task.next(sfn.Pass(scope, "Then", state_name="UserThen")) if then else task


class ShapesStack(Stack):
    def __init__(self, scope: App, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        function = bench_function(self, "Echo", "echo.handler", memory_mb=128)
        table = IdempotencyTable(self, "Idempotency")
        for suffix, kind in KINDS.items():

            def body(name: str, then: bool = False, around: str = "") -> sfn.IChainable:
                return work(Construct(self, f"{name}{suffix}Body"), function, then, around)  # noqa: B023 (used at once)

            for name, then, around in (("WholeTask", False, ""), ("WholeMap", False, "Map"), ("WholeChain", True, "")):
                IdempotentStateMachine(
                    self, f"{name}{suffix}", table=table, key=KEY, definition=body(name, then, around), state_machine_type=kind
                )
            for name, around, options in (
                ("Guard", "", {}),
                ("GuardParallel", "Parallel", {}),
                ("GuardBegin", "", {"in_inline_map": True}),
                # Its wait is written as given, not fitted to an Express run (guard_options: once_per_execution).
                ("GuardOnce", "", {"once_per_execution": True, "max_wait": Duration.minutes(1)}),
            ):
                guard = IdempotencyGuard(
                    self, f"{name}{suffix}Guard", table=table, key=KEY, body=body(name, around=around), **options
                )
                sfn.StateMachine(
                    self, f"{name}{suffix}", definition_body=sfn.DefinitionBody.from_chainable(guard), state_machine_type=kind
                )
        # Standard only: an Express execution sends no status event to free its key by.
        released = FailurePolicy.RELEASE_WHEN_EXECUTION_FAILS
        chain = work(Construct(self, "WholeReleasedBody"), function, then=True)
        IdempotentStateMachine(self, "WholeReleasedstandard", table=table, key=KEY, definition=chain, on_failure=released)
        baseline.BaselineIdempotentWorkflow(self, "Baselinestandard", definition=work(Construct(self, "BaselineBody"), function))


def run(*, smoke: bool, log=print) -> dict[str, Any]:
    """Each shape's first run and replay, measured from their histories, and priced."""
    results: dict[str, Any] = {"shapes": {}}
    with LocalEmulator() as emulator, tempfile.TemporaryDirectory(prefix="bench-shapes-") as outdir:
        started = time.perf_counter()
        deployment = emulator.deploy_stack(ShapesStack(App(outdir=outdir), "Shapes"))
        log(f"  deployed the shapes stack in {time.perf_counter() - started:.1f} s")
        with Probe(emulator) as probe:
            runner = Runner(deployment, probe)
            measured: dict[tuple[str, str], tuple[dict[str, Any], dict[str, Any]]] = {}
            for shape in SHAPES:
                for kind in shape.kinds:
                    payload = request()
                    first = runner.run(f"{shape.machine}{kind}", payload)
                    replay = runner.run(f"{shape.machine}{kind}", payload)
                    measured[(shape.name, kind)] = (runner.measure(first), runner.measure(replay))
                    measured[(shape.name, kind)][1]["same_output"] = replay.output == first.output
            functions = runner.functions()
    for shape in SHAPES:
        for kind in shape.kinds:
            first, replay = measured[(shape.name, kind)]
            row = {"before_issue_43": shape.before_issue_43}
            for path, figures in (("first_run", first), ("replay", replay)):
                dollars = path_cost(figures, functions)
                if kind == "express":  # no transitions billed (the module's docstring)
                    dollars = {**dollars, "total": round(dollars["total"] - dollars["transitions"], 4), "transitions": 0.0}
                row[path] = {
                    "status": figures["status"],
                    "states_entered": figures["states_entered"],
                    "states": figures["states"],
                    "transitions": figures["transitions"],
                    "lambda_invocations": figures["lambda_invocations"],
                    "dollars_per_million": dollars["total"],
                }
            row["replay"]["same_output"] = replay["same_output"]
            results["shapes"].setdefault(shape.name, {})[kind] = row
    results["checks"] = checks(results)
    return results


def checks(results: dict[str, Any]) -> list[str]:
    """What must hold for the figures to mean anything: every run succeeded and every replay gave the first
    run's output."""
    found = []
    for name, kinds in results["shapes"].items():
        for kind, row in kinds.items():
            if row["first_run"]["status"] != "SUCCEEDED" or row["replay"]["status"] != "SUCCEEDED":
                found.append(f"{name} ({kind}): a run did not succeed")
            if not row["replay"]["same_output"]:
                found.append(f"{name} ({kind}): the replay's output is not the first run's")
    return found
