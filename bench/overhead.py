"""Section 1: per-execution overhead, counted from execution histories in the emulator.

One stack holds our workflows (``from_paths`` and whole-input keys, inline and large results, and
short-lease twins for takeovers) and the baseline; the same user chain runs inside each. For every
path the wrapper's states (everything but the chain's own), retries, Lambda invocations and DynamoDB
calls come from the execution's history; the probe adds what a history cannot show: item sizes (read
and write units), calls made inside Lambda functions, and Lambda run times.
"""

from __future__ import annotations

import datetime as dt
import math
import statistics
import tempfile
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from aws_cdk import App, Duration, Stack
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

from idempotent_constructs import IdempotencyKey, IdempotencyTable, IdempotentStateMachine, ResultStorage
from idempotent_constructs.testing import Deployment, Execution, LocalEmulator

from . import baseline
from .functions import bench_function
from .history import entered_at, overhead
from .probe import Call, Probe

# The user's states, never counted: the overhead section's chain's, and the shapes section's body (bench/shapes.py).
USER_STATES = ("UserDelay", "UserSize", "UserBig", "UserSmall", "UserWork", "UserThen", "UserParallel", "UserMap")
BIG_RESULT_KIB = 100
POLL_INTERVAL = Duration.seconds(1)
TAKEOVER_LEASE = Duration.seconds(1)
HOLDER_SECONDS = 6  # how long a holder's chain would run before it crashes (takeover) or is stopped (blocked)
WAITING_POLLS = 2  # how many times a waiting duplicate polls while the holder is held


def is_wrapper(state: str) -> bool:
    return state not in USER_STATES


def user_chain(scope: Construct, big_result: lambda_.IFunction) -> sfn.IChainable:
    """The user's workflow: waits ``$.delay`` seconds, then returns a small result, or a 100 KiB one
    (from a Lambda function) when ``$.big`` is true. Its states are the same in every workflow and
    are never counted as overhead."""
    delay = sfn.Wait(scope, "Delay", state_name="UserDelay", time=sfn.WaitTime.seconds_path("$.delay"))
    small = sfn.Pass(
        scope, "Small", state_name="UserSmall", parameters={"order.$": "$.order", "status": "shipped", "tracking": "TRACK-0001"}
    )
    big = tasks.LambdaInvoke(
        scope,
        "Big",
        state_name="UserBig",
        lambda_function=big_result,
        payload=sfn.TaskInput.from_object({"kib": BIG_RESULT_KIB}),
        payload_response_only=True,
        retry_on_service_exceptions=False,
    )
    return delay.next(
        sfn.Choice(scope, "Size", state_name="UserSize").when(sfn.Condition.boolean_equals("$.big", True), big).otherwise(small)
    )


@dataclass(frozen=True)
class Variant:
    """One design and key strategy under test."""

    name: str  # "ours/from_paths", ...
    machine: str  # the construct id of its state machine
    takeover_machine: str | None  # its short-lease twin, if takeovers are measured
    poll_state: str  # the state that reads the record while waiting for a holder
    waits: bool = True  # whether a waiting duplicate is measured


VARIANTS = (
    Variant("ours/from_paths", "Paths", "PathsShortLease", "Idempotency.Poll"),
    Variant("ours/whole_input", "Whole", "WholeShortLease", "Idempotency.Poll"),
    Variant("ours/from_jsonata", "Jsonata", None, "Idempotency.Poll", waits=False),
    Variant("ours/from_jmespath", "Jmespath", None, "Idempotency.Poll", waits=False),
    Variant("ours/whole_input+large", "Large", None, "Idempotency.Poll", waits=False),
    Variant("baseline", "Baseline", None, "GetRecord"),
)


class BenchStack(Stack):
    def __init__(self, scope: App, construct_id: str, *, baseline_poll_seconds: int) -> None:
        super().__init__(scope, construct_id)
        big = bench_function(self, "BigResult", "big_result.handler", memory_mb=256)
        table = IdempotencyTable(self, "Idempotency")
        timing = {"poll_interval": POLL_INTERVAL, "max_wait": Duration.minutes(2)}
        keys = {
            "Paths": IdempotencyKey.from_paths("$.order.id"),
            "Whole": IdempotencyKey.whole_input(),
            "Jsonata": IdempotencyKey.from_jsonata("$states.input.order.id"),
            "Jmespath": IdempotencyKey.from_jmespath("order.id"),
        }
        for name, key in keys.items():
            IdempotentStateMachine(
                self, name, table=table, key=key, definition=user_chain(Construct(self, f"{name}Chain"), big), **timing
            )
            if name in ("Paths", "Whole"):
                IdempotentStateMachine(
                    self,
                    f"{name}ShortLease",
                    table=table,
                    key=key,
                    lease=TAKEOVER_LEASE,
                    definition=user_chain(Construct(self, f"{name}ShortLeaseChain"), big),
                    **timing,
                )
        IdempotentStateMachine(
            self,
            "Large",
            table=table,
            key=IdempotencyKey.whole_input(),
            result_storage=ResultStorage.large(),
            definition=user_chain(Construct(self, "LargeChain"), big),
            **timing,
        )
        baseline.BaselineIdempotentWorkflow(
            self, "Baseline", definition=user_chain(Construct(self, "BaselineChain"), big), poll_seconds=baseline_poll_seconds
        )


def request(big: bool = False, delay: int = 0) -> dict[str, Any]:
    """A small, realistic order request with a key no other run uses."""
    return {
        "order": {
            "id": f"ord-{uuid.uuid4().hex[:12]}",
            "total": 129.9,
            "currency": "EUR",
            "lines": [{"sku": "SKU-00042", "quantity": 2, "price": 64.95}],
        },
        "customer": {"id": "cust-7", "email": "ada@example.com"},
        "delay": delay,
        "big": big,
    }


class Runner:
    def __init__(self, deployment: Deployment, probe: Probe) -> None:
        self.deployment = deployment
        self.probe = probe
        # moto's CloudFormation drops a function's architecture: read it from the template.
        self.architectures = {
            deployment.resources[logical_id]: (resource["Properties"].get("Architectures") or ["x86_64"])[0]
            for logical_id, resource in deployment.template["Resources"].items()
            if resource["Type"] == "AWS::Lambda::Function"
        }

    def measure(self, execution: Execution, start: int = 0, end: int | None = None) -> dict[str, Any]:
        """The overhead of ``execution`` (or of the slice ``[start:end]`` of its history), with read and
        write units, Lambda time and the calls only the probe sees."""
        history = execution.history
        counted = overhead(history, is_wrapper, start, end)
        # The probe's calls in the slice: made by a state of the slice, between its first and last event.
        states = _states_in(history, start, end)
        since = _epoch(history[start]["timestamp"]) if start else 0.0
        until = _epoch(history[end]["timestamp"]) if end is not None and end < len(history) else math.inf

        def inside(state: str | None, at: float) -> bool:
            return state in states and is_wrapper(state) and since <= at < until

        calls = [c for c in self.probe.calls_of(execution.arn) if inside(c.state, c.at)]
        invocations = [i for i in self.probe.invocations_of(execution.arn) if inside(i.state, i.at)]
        integration = Counter(c.operation for c in calls if c.service == "dynamodb" and c.function is None)
        result = counted.as_dict()
        result.update(
            {
                "status": execution.status,
                "body_ran": any(state in USER_STATES for state in execution.entered_states()),
                "dynamodb_calls_in_lambda": dict(Counter(c.operation for c in calls if c.service == "dynamodb" and c.function)),
                "s3_calls_in_lambda": dict(Counter(c.operation for c in calls if c.service == "s3")),
                "read_units": sum(read_units(c) for c in calls),
                "write_units": sum(write_units(c) for c in calls),
                "lambda": {
                    "invocations": len(invocations),
                    "by_function": dict(Counter(i.function for i in invocations)),
                    "billed_ms": sum(math.ceil(i.seconds * 1000) for i in invocations),
                    "measured_ms": round(sum(i.seconds * 1000 for i in invocations), 3),
                    "gb_seconds_by_architecture": _gb_seconds(invocations, self.architectures),
                },
                # The probe sees the same integration calls the history names: a check of both counts.
                "history_matches_backend": integration == counted.dynamodb,
            }
        )
        return result

    def run(self, machine: str, payload: dict[str, Any]) -> Execution:
        return self.deployment.run(machine, payload, timeout=180)

    def functions(self) -> dict[str, dict[str, Any]]:
        """Each wrapper Lambda function seen so far: where it is defined, its memory and architecture,
        and its median run time (the duration the cost section bills)."""
        names = {physical: logical for logical, physical in self.deployment.resources.items()}
        durations: dict[str, list[float]] = {}
        memory: dict[str, int] = {}
        for invocation in self.probe.invocations:
            if is_wrapper(invocation.state or ""):
                durations.setdefault(invocation.function, []).append(invocation.seconds * 1000)
                memory[invocation.function] = invocation.memory_mb
        return {
            name: {
                "construct": self.deployment.paths.get(names.get(name, ""), name).removesuffix("/Resource"),
                "memory_mb": memory[name],
                "architecture": self.architectures.get(name, "x86_64"),
                "median_ms": round(statistics.median(values), 3),
                "invocations_timed": len(values),
            }
            for name, values in durations.items()
        }


def _epoch(moment: Any) -> float:
    return (moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)).timestamp()


def _states_in(history: list[dict[str, Any]], start: int, end: int | None) -> set[str]:
    """The states entered in ``history[start:end]``, and the one running when the slice starts."""
    names: set[str] = set()
    current = None
    for index, event in enumerate(history[: len(history) if end is None else end]):
        if "stateEnteredEventDetails" in event:
            current = event["stateEnteredEventDetails"]["name"]
        if index >= start and current is not None:
            names.add(current)
    return names


def read_units(call: Call) -> float:
    """Read request units of a GetItem: one per started 4 KB of the item (an absent item counts as
    one), half of that for an eventually consistent read."""
    if call.service != "dynamodb" or call.operation != "GetItem":
        return 0.0
    size = call.sizes[0][0]
    units = max(1, math.ceil(size / 4096))
    return float(units if call.consistent else units / 2)


def write_units(call: Call) -> int:
    """Write request units of a write (rules in bench/cost.py): one per started KB of the larger of
    the item before and after; a write whose condition fails, one per started KB of the existing item;
    at least one per item, and twice that in a transaction."""
    if call.service != "dynamodb" or call.operation == "GetItem":
        return 0
    units = 0
    for (before, after), new in zip(call.sizes, call.new_sizes or [0] * len(call.sizes), strict=False):
        size = before if call.failed else max(before, after, new)
        units += max(1, math.ceil(size / 1024))
    return units * (2 if call.operation.startswith("Transact") else 1)


def _gb_seconds(invocations: list[Any], architectures: dict[str, str]) -> dict[str, float]:
    """GB-seconds as Lambda bills them: each invocation's duration rounded up to 1 ms, times its memory."""
    totals: dict[str, float] = {}
    for invocation in invocations:
        billed = math.ceil(invocation.seconds * 1000) / 1000
        architecture = architectures.get(invocation.function, invocation.architecture)
        totals[architecture] = totals.get(architecture, 0.0) + billed * invocation.memory_mb / 1024
    return totals


# --- scenarios -------------------------------------------------------------------------------------
def first_and_replay(runner: Runner, variant: Variant, big: bool) -> tuple[dict, dict]:
    payload = request(big=big)
    first = runner.run(variant.machine, payload)
    replay = runner.run(variant.machine, payload)
    measured_first, measured_replay = runner.measure(first), runner.measure(replay)
    measured_replay["same_output"] = replay.output == first.output
    return measured_first, measured_replay


def waiting(runner: Runner, emulator: LocalEmulator, variant: Variant, replay: dict[str, Any]) -> dict[str, Any]:
    """A duplicate that arrives while the holder runs (within its lease) and waits for it: the holder is
    held before its last state (``emulator.hold``) until the duplicate has polled ``WAITING_POLLS`` times,
    however loaded the machine."""
    deployment = runner.deployment
    payload = request(delay=0)
    with emulator.hold("UserSmall", state_machine=deployment.state_machine_arn(variant.machine)) as body:
        holder = deployment.start(variant.machine, payload)
        body.arrived(timeout=120)
        started = deployment.start(variant.machine, payload)
        # Our first read of the record is Acquire; the baseline's is its first poll state.
        reads = WAITING_POLLS if variant.poll_state.startswith("Idempotency.") else WAITING_POLLS + 1
        deployment.wait_for_state(started, variant.poll_state, timeout=120, times=reads)
    duplicate = deployment.wait(started, timeout=180)
    held = deployment.wait(holder)
    whole = runner.measure(duplicate)
    reads = entered_at(duplicate.history, variant.poll_state)
    # Polls: the reads of the record after the first look at it (our Inspect is another state).
    polls = len(reads) if variant.poll_state.startswith("Idempotency.") else len(reads) - 1
    cycle = runner.measure(duplicate, reads[0], reads[1]) if len(reads) >= 2 else None
    extra_states = whole["states_entered"] - replay["states_entered"]
    extra_transitions = whole["transitions"] - replay["transitions"]
    return {
        "holder_status": held.status,
        "duplicate": whole,
        "polls": polls,
        "extra_states_over_replay": extra_states,
        "extra_transitions_over_replay": extra_transitions,
        "states_per_poll": round(extra_states / polls, 2) if polls else None,
        "transitions_per_poll": round(extra_transitions / polls, 2) if polls else None,
        "cycle": cycle,
        "same_output": duplicate.output == held.output,
    }


def takeover(runner: Runner, emulator: LocalEmulator, variant: Variant, big: bool, holder_seconds: int) -> dict[str, Any]:
    """A duplicate that arrives after the holder crashed (aborted, its status event lost) and its
    lease lapsed: the owner check finds it gone, and the duplicate takes the key over."""
    deployment = runner.deployment
    payload = request(big=big, delay=holder_seconds)
    holder = deployment.start(variant.takeover_machine, payload)
    deployment.wait_for_state(holder, "UserDelay")
    emulator.client("stepfunctions").stop_execution(executionArn=holder)
    (record,) = deployment.records_of(holder, "Idempotency").values()
    lease_end = int(record["in_progress_expiration"]["N"]) / 1000
    time.sleep(max(0.0, lease_end - time.time()) + 0.3)
    duplicate = runner.run(variant.takeover_machine, payload)
    measured = runner.measure(duplicate)
    measured["holder_status"] = deployment.wait(holder).status
    return measured


def blocked(runner: Runner, emulator: LocalEmulator, variant: Variant, poll_seconds: int, holder_seconds: int) -> dict[str, Any]:
    """The baseline has no lease: a duplicate of a crashed holder waits until TTL deletes the record.
    Watch it for two poll periods, then stop it."""
    deployment = runner.deployment
    payload = request(delay=holder_seconds)
    holder = deployment.start(variant.machine, payload)
    deployment.wait_for_state(holder, "UserDelay")
    client = emulator.client("stepfunctions")
    client.stop_execution(executionArn=holder)
    started = time.time()
    duplicate = deployment.start(variant.machine, payload)
    time.sleep(2 * poll_seconds + 0.5)
    status = client.describe_execution(executionArn=duplicate)["status"]
    watched = time.time() - started
    history = deployment.history(duplicate)
    if status == "RUNNING":
        client.stop_execution(executionArn=duplicate)
    return {
        "status": status,
        "watched_seconds": round(watched, 1),
        "still_waiting": status == "RUNNING",
        "polls": max(0, len(entered_at(history, variant.poll_state)) - 1),
        "body_ran": any(e.get("stateEnteredEventDetails", {}).get("name") in USER_STATES for e in history),
    }


def run(*, smoke: bool, log=print) -> dict[str, Any]:
    """Deploy the bench stack into a fresh emulator and measure every path of every variant."""
    baseline_poll = 1 if smoke else baseline.POLL_SECONDS
    holder_seconds = HOLDER_SECONDS
    results: dict[str, Any] = {
        "baseline_poll_seconds": baseline_poll,
        "holder_seconds": holder_seconds,
        "waiting_polls": WAITING_POLLS,
        "big_result_kib": BIG_RESULT_KIB,
        "variants": {},
    }
    with LocalEmulator() as emulator, tempfile.TemporaryDirectory(prefix="bench-assembly-") as outdir:
        started = time.perf_counter()
        stack = BenchStack(App(outdir=outdir), "Bench", baseline_poll_seconds=baseline_poll)
        deployment = emulator.deploy_stack(stack)
        log(f"  deployed the bench stack in {time.perf_counter() - started:.1f} s")
        with Probe(emulator) as probe:
            runner = Runner(deployment, probe)
            if not smoke:  # warm-up (not measured): imports the handlers, creates moto's clients
                for variant in VARIANTS:
                    first_and_replay(runner, variant, big=False)
                probe.reset()
            started = time.perf_counter()
            for variant in VARIANTS:
                entry = results["variants"].setdefault(variant.name, {})
                entry["first_run"], entry["replay"] = first_and_replay(runner, variant, big=False)
                entry["first_run_100k"], entry["replay_100k"] = first_and_replay(runner, variant, big=True)
            log(f"  first runs and replays measured in {time.perf_counter() - started:.1f} s")
            # Run times from these sequential runs only: the concurrent ones below share the CPU.
            results["lambda_functions"] = runner.functions()
            started = time.perf_counter()
            jobs: dict[tuple[str, str], Any] = {}
            with emulator.status_change_events.dropped(), ThreadPoolExecutor(max_workers=8) as pool:
                for variant in VARIANTS:
                    replay = results["variants"][variant.name]["replay"]
                    if variant.waits:
                        jobs[(variant.name, "waiting")] = pool.submit(waiting, runner, emulator, variant, replay)
                    if variant.takeover_machine:
                        for path, big in (("takeover", False), ("takeover_100k", True)):
                            jobs[(variant.name, path)] = pool.submit(takeover, runner, emulator, variant, big, holder_seconds)
                    if variant.name == "baseline":
                        jobs[(variant.name, "blocked")] = pool.submit(
                            blocked, runner, emulator, variant, baseline_poll, holder_seconds
                        )
                for (name, path), job in jobs.items():
                    results["variants"][name][path] = job.result()
            log(f"  waiting duplicates and takeovers measured in {time.perf_counter() - started:.1f} s")
            for name, function in runner.functions().items():
                results["lambda_functions"].setdefault(name, function)
    results["checks"] = checks(results)
    return results


def checks(results: dict[str, Any]) -> list[str]:
    """What must hold for the figures to mean anything; each failure is reported (and fails the run)."""
    problems = []
    for name, entry in results["variants"].items():
        for path in ("first_run", "first_run_100k", "takeover", "takeover_100k"):
            if path in entry and not (entry[path]["status"] == "SUCCEEDED" and entry[path]["body_ran"]):
                problems.append(f"{name} {path}: {entry[path]['status']}, body ran: {entry[path]['body_ran']}")
        for path in ("replay", "replay_100k"):
            measured = entry[path]
            if not (measured["status"] == "SUCCEEDED" and not measured["body_ran"] and measured["same_output"]):
                problems.append(f"{name} {path}: not a replay of the first run's output")
        for path, measured in entry.items():
            if isinstance(measured, dict) and measured.get("history_matches_backend") is False:
                problems.append(f"{name} {path}: the history's DynamoDB calls differ from the backend's")
        wait = entry.get("waiting")
        if wait and not (wait["same_output"] and wait["polls"] >= 1 and wait["cycle"] and not wait["duplicate"]["body_ran"]):
            problems.append(f"{name} waiting: the duplicate did not wait for the holder's output ({wait['polls']} polls)")
        if "blocked" in entry and not entry["blocked"]["still_waiting"]:
            problems.append(f"{name} blocked: the duplicate of a crashed holder did not keep waiting")
    return problems
