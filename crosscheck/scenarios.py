"""The behaviour scenarios, run on ministack against the stacks as synthesized: each judges from what a
user can see (outputs, error names, the idempotency table, the side-effect counters of the test
Lambda functions), never from execution histories (ministack's lack the states inside a Parallel: D3).

A scenario is a function of ``Stacks`` that raises ``ScenarioFailed`` (through ``Checks.expect``) at
its first broken promise. A check a known divergence stops names it (``unless=``): see
crosscheck/divergences.py.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, cast

from example.charge import charge
from example.demo import order
from idempotent_constructs import IdempotencyKey
from idempotent_constructs.lambda_src import canonical, schema
from idempotent_constructs.testing import Deployment, Execution
from tests.lambdas import sized
from tests.stacks import COMPENSATIONS, SAGA_STEPS, side_effect_runs

from .divergences import D2, D8, Divergence
from .server import Hold, Ministack


class ScenarioFailed(AssertionError):
    pass


@dataclass
class Checks:
    """What one scenario found: the divergences that stopped a check, and stale divergence notes."""

    diverged: list[Divergence] = field(default_factory=list)

    def expect(self, ok: bool, what: str, *, unless: Divergence | None = None) -> None:
        if unless is None:
            if not ok:
                raise ScenarioFailed(what)
        elif ok:
            raise ScenarioFailed(f"{unless.id} no longer diverges ({what}): update crosscheck/divergences.py")
        elif unless not in self.diverged:
            self.diverged.append(unless)


class Undeployed:
    """Stands for a stack that did not deploy: each scenario that uses it fails with why, and the
    scenarios of the other stacks still run."""

    def __init__(self, stack: str, reason: str) -> None:
        self.stack, self.reason = stack, reason

    def __getattr__(self, name: str) -> Any:
        raise ScenarioFailed(f"the {self.stack} stack did not deploy: {self.reason}")


@dataclass
class Stacks:
    orders: Deployment  # the example app (app.py), from `cdk synth`
    behaviour: Deployment  # tests/stacks.py BehaviourStack
    resumable: Deployment  # tests/stacks.py ResumableStack: issue 4's three guarded steps
    everything: Deployment  # tests/stacks.py everything_on
    documents: Deployment  # tests/stacks.py DocumentsStack
    guards: Deployment  # tests/stacks.py LostRepliesStack: guards of plain state machines
    races: Deployment  # tests/stacks.py RacesStack: the protocol explorer's counterexamples

    def raw_output(self, deployment: Deployment, execution: Execution) -> str | None:
        """The output exactly as Step Functions returns it (``Execution.output`` is parsed)."""
        output: str | None = (
            deployment.emulator.client("stepfunctions").describe_execution(executionArn=execution.arn).get("output")
        )
        return output


Scenario = Callable[[Stacks, Checks], None]
SCENARIOS: list[tuple[str, Scenario]] = []


def scenario(title: str) -> Callable[[Scenario], Scenario]:
    def register(function: Scenario) -> Scenario:
        SCENARIOS.append((title, function))
        return function

    return register


def unique() -> str:
    return uuid.uuid4().hex[:12]


def fresh_order() -> dict[str, Any]:
    return order(int(time.time() * 1000) % 10**9 + uuid.uuid4().int % 10**6)


def charged(payload: dict[str, Any]) -> dict[str, Any]:
    """The example workflow's output for an express order."""
    return {"order_id": payload["order"]["id"], "charge": charge.handler(payload), "carrier": "express-air"}


ORDERS_KEY = IdempotencyKey.from_paths("$.order.id", "$.customer.id")
CHARGE_KEY = IdempotencyKey.from_paths("$.order.id")


def succeeded(checks: Checks, execution: Execution, what: str) -> None:
    checks.expect(execution.status == "SUCCEEDED", f"{what}: {execution.status} {execution.error} {execution.cause}")


# --- the example app -------------------------------------------------------------------------------
@scenario(
    "first run (example app): the workflow's output; both records completed under the keys Python computes; Charge runs bare"
)
def first_run(stacks: Stacks, checks: Checks) -> None:
    payload = fresh_order()
    first = stacks.orders.run("Orders", payload)
    succeeded(checks, first, "the first run")
    checks.expect(first.output == charged(payload), f"output {first.output}")
    records = stacks.orders.records_of(first)
    expected_ids = {
        ORDERS_KEY.record_id(payload, namespace="IdempotentOrders/Orders"),
        CHARGE_KEY.record_id(payload, namespace="IdempotentOrders/ChargeOnce"),
    }
    checks.expect(set(records) == expected_ids, f"record ids {sorted(records)}, expected {sorted(expected_ids)}")
    checks.expect(all(r[schema.STATUS]["S"] == schema.COMPLETED for r in records.values()), "records completed")
    whole = records[ORDERS_KEY.record_id(payload, namespace="IdempotentOrders/Orders")]
    checks.expect(json.loads(whole[schema.DATA]["S"]) == first.output, "the record holds the output")
    checks.expect(whole[schema.VALIDATION]["S"] == canonical.digest(payload), "the record's payload digest")


@scenario("replay (example app): a duplicate returns the first output byte for byte; the record is untouched")
def replay(stacks: Stacks, checks: Checks) -> None:
    payload = fresh_order()
    first = stacks.orders.run("Orders", payload)
    succeeded(checks, first, "the first run")
    before = stacks.orders.items()
    duplicate = stacks.orders.run("Orders", payload)
    succeeded(checks, duplicate, "the duplicate")
    checks.expect(stacks.raw_output(stacks.orders, duplicate) == stacks.raw_output(stacks.orders, first), "same bytes")
    checks.expect(stacks.orders.records_of(duplicate) == {}, "the duplicate holds no record")
    checks.expect(stacks.orders.items() == before, "the table is unchanged by the replay")


@scenario("concurrent duplicates (example app): ten at once all succeed with one output; one holds the records")
def concurrent_duplicates(stacks: Stacks, checks: Checks) -> None:
    payload = fresh_order()
    with ThreadPoolExecutor(max_workers=10) as pool:
        arns = list(pool.map(lambda i: stacks.orders.start("Orders", payload, name=f"dup-{unique()}-{i}"), range(10)))
        executions = list(pool.map(stacks.orders.wait, arns))
    for execution in executions:
        succeeded(checks, execution, execution.arn)
    outputs = {stacks.raw_output(stacks.orders, execution) for execution in executions}
    checks.expect(len(outputs) == 1, f"{len(outputs)} distinct outputs")
    checks.expect(json.loads(outputs.pop() or "null") == charged(payload), "the output is the workflow's")
    holders = [execution for execution in executions if stacks.orders.records_of(execution)]
    checks.expect(len(holders) == 1, f"{len(holders)} executions hold records")


@scenario("failure released (example app): a declined card fails, leaves no record; the retry runs and completes")
def failure_released(stacks: Stacks, checks: Checks) -> None:
    payload = fresh_order()
    declined = stacks.orders.run("Orders", {**payload, "payment": {"card": "4000 0000 0000 0002"}})
    checks.expect(declined.status == "FAILED", f"the declined run {declined.status}")
    checks.expect("was declined" in (declined.cause or ""), f"the cause {declined.cause}")
    checks.expect(stacks.orders.records_of(declined) == {}, "no record left by the declined run")
    retried = stacks.orders.run("Orders", payload)
    succeeded(checks, retried, "the retry")
    checks.expect(retried.output == charged(payload), f"the retry's output {retried.output}")
    checks.expect(len(stacks.orders.records_of(retried)) == 2, "the retry holds both records")
    checks.expect(declined.error == "CardDeclined", f"the error name {declined.error}", unless=D2)


# --- the behaviour stack ---------------------------------------------------------------------------
@scenario("concurrent duplicates (three guarded Lambda steps): ten at once run each step exactly once")
def steps_run_once(stacks: Stacks, checks: Checks) -> None:
    request = {"order": {"id": unique()}}
    with ThreadPoolExecutor(max_workers=10) as pool:
        arns = list(pool.map(lambda i: stacks.resumable.start("ResumeClean", request, name=f"once-{unique()}-{i}"), range(10)))
        executions = list(pool.map(stacks.resumable.wait, arns))
    for execution in executions:
        succeeded(checks, execution, execution.arn)
    checks.expect(all(e.output == {**request, "A": "done", "B": "done", "C": "done"} for e in executions), "outputs")
    checks.expect(
        side_effect_runs(stacks.resumable, f"ResumeClean#{request['order']['id']}", *"ABC") == {"A": 1, "B": 1, "C": 1},
        "each step ran once",
    )


@scenario("per-step resume: a run failed at step B, run again, replays A, runs B again and C once")
def per_step_resume(stacks: Stacks, checks: Checks) -> None:
    request = {"order": {"id": unique(), "amount": 42}}
    failed = stacks.resumable.run("Resume", request)
    checks.expect(failed.status == "FAILED", f"the first run {failed.status}")
    checks.expect(
        side_effect_runs(stacks.resumable, f"Resume#{request['order']['id']}", *"ABC") == {"A": 1, "B": 1, "C": 0},
        "A and B ran, C did not",
    )
    resumed = stacks.resumable.run("Resume", request)
    succeeded(checks, resumed, "the run again")
    checks.expect(
        side_effect_runs(stacks.resumable, f"Resume#{request['order']['id']}", *"ABC") == {"A": 1, "B": 2, "C": 1},
        "A replayed, B ran again, C ran",
    )
    checks.expect(resumed.output == {**request, "A": "done", "B": "done", "C": "done"}, f"output {resumed.output}")
    checks.expect(failed.error == "StepFailed", f"the error name {failed.error}", unless=D2)


@scenario("payload mismatch: the same key with another payload fails with Idempotency.PayloadMismatch")
def mismatch(stacks: Stacks, checks: Checks) -> None:
    key = unique()
    first = stacks.behaviour.run("ByFieldA", {"a": key, "amount": 1})
    succeeded(checks, first, "the first run")
    before = stacks.behaviour.items("Idempotency")
    other = stacks.behaviour.run("ByFieldA", {"a": key, "amount": 2})
    checks.expect((other.status, other.error) == ("FAILED", schema.PAYLOAD_MISMATCH), f"{other.status} {other.error}")
    # The cause names the member that differs, never a value of it.
    checks.expect(
        (other.cause or "").endswith("; the members that differ: amount") and key not in (other.cause or ""),
        f"the member named, no payload or result in the cause: {other.cause}",
    )
    checks.expect(stacks.behaviour.items("Idempotency") == before, "nothing written")
    # Replay's Items raise where there is nothing to replay, and its own Catch takes the run to Route.
    states = [state for state in other.entered_states() if state.startswith("Idempotency.")]
    route = ["Idempotency.Inspect", "Idempotency.Replay", "Idempotency.Route", "Idempotency.PayloadMismatch"]
    checks.expect(states[-4:] == route, f"states {states}")


@scenario("missing key: a key path absent from the input fails (the key function tells KeyMissing), nothing written")
def missing_key(stacks: Stacks, checks: Checks) -> None:
    before = stacks.behaviour.items("Idempotency")
    missing = stacks.behaviour.run("ByFieldA", {"b": unique()})
    checks.expect(missing.status == "FAILED", f"{missing.status}")
    checks.expect(stacks.behaviour.items("Idempotency") == before, "nothing written")
    checks.expect(missing.error == schema.KEY_MISSING, f"the error name {missing.error}", unless=D2)


@scenario("an input beyond the native key's bounds (nested 16 levels): keyed by the key function, run once, replayed")
def deep_input(stacks: Stacks, checks: Checks) -> None:
    nested: dict[str, Any] = {"leaf": True}
    for level in range(15):
        nested = {"a": nested, "i": level}
    payload = {"a": unique(), "deep": nested}
    first = stacks.behaviour.run("ByFieldA", payload)
    succeeded(checks, first, "the first run")
    replay = stacks.behaviour.run("ByFieldA", payload)
    succeeded(checks, replay, "the replay")
    checks.expect(first.output == replay.output == payload, "the output is the input, twice")
    records = stacks.behaviour.records_of(first, "Idempotency")
    expected = IdempotencyKey.from_paths("$.a").record_id(payload, namespace="shared-namespace")
    checks.expect(set(records) == {expected}, f"record ids {sorted(records)}, expected {expected}")
    checks.expect(records[expected][schema.VALIDATION]["S"] == canonical.digest(payload), "the record's payload digest")
    checks.expect(stacks.behaviour.records_of(replay, "Idempotency") == {}, "the replay holds no record")


@scenario("missing key, JMESPath (the key function): fails before anything is written")
def missing_jmespath_key(stacks: Stacks, checks: Checks) -> None:
    before = stacks.behaviour.items("Idempotency")
    missing = stacks.behaviour.run("Flaky", {"customer": unique()})
    checks.expect(missing.status == "FAILED", f"{missing.status}")
    checks.expect(stacks.behaviour.items("Idempotency") == before, "nothing written")
    checks.expect(missing.error == schema.KEY_MISSING, f"the error name {missing.error}", unless=D2)


@scenario("expiry: a completed record past its expiration counts as absent; the body runs and replaces it")
def expiry(stacks: Stacks, checks: Checks) -> None:
    payload = {"id": unique()}
    record_id = IdempotencyKey.whole_input().record_id(payload, namespace="Behaviour/Echo")
    table = stacks.behaviour.table_name("Idempotency")
    dynamodb = stacks.behaviour.emulator.client("dynamodb")
    dynamodb.put_item(
        TableName=table,
        Item={
            schema.ID: {"S": record_id},
            schema.STATUS: {"S": schema.COMPLETED},
            schema.EXPIRATION: {"N": str(int(time.time()) - 60)},
            schema.IN_PROGRESS_EXPIRATION: {"N": str((int(time.time()) - 120) * 1000)},
            schema.OWNER: {"S": "arn:aws:states:us-east-1:000000000000:execution:x:old#holder"},
            schema.VALIDATION: {"S": canonical.digest(payload)},
            schema.DATA: {"S": '{"stale": true}'},
        },
    )
    fresh = stacks.behaviour.run("Echo", payload)
    succeeded(checks, fresh, "the run")
    checks.expect(fresh.output == payload, f"the body's output, not the stale one: {fresh.output}")
    record = dynamodb.get_item(TableName=table, Key={schema.ID: {"S": record_id}}, ConsistentRead=True)["Item"]
    checks.expect(schema.owned_by(record[schema.OWNER]["S"], fresh.arn), "the new run owns the record")
    checks.expect(int(record[schema.EXPIRATION]["N"]) > time.time(), "its expiration is in the future")


@scenario("large results: 24 KiB gzip and 100 KiB in S3 (large()), 222 KiB gzip inline, replayed exactly")
def large_results(stacks: Stacks, checks: Checks) -> None:
    stored = {schema.DATA, schema.DATA_GZIP, schema.DATA_LOCATION}
    for workflow, kib, repetitive, form in (
        ("LargeResults", 24, True, schema.DATA_GZIP),
        ("LargeResults", 100, False, schema.DATA_LOCATION),
        ("InlineResults", 222, False, schema.DATA_GZIP),
    ):
        payload = {"id": unique(), "kib": kib, "repetitive": repetitive}
        first = stacks.behaviour.run(workflow, payload)
        succeeded(checks, first, f"{workflow} {kib} KiB")
        replayed = stacks.behaviour.run(workflow, payload)
        succeeded(checks, replayed, f"{workflow} {kib} KiB replay")
        checks.expect(first.output == replayed.output == sized.handler(payload), f"{workflow} {kib} KiB round trip")
        (record,) = stacks.behaviour.records_of(first, "Idempotency").values()
        checks.expect(set(record) & stored == {form}, f"{workflow} {kib} KiB stored as {set(record) & stored}")


@scenario("JSONata host: guards as the whole workflow, in a JSONata Map and Parallel; first run and replay")
def jsonata_host(stacks: Stacks, checks: Checks) -> None:
    payload = {"id": unique(), "items": [{"sku": unique()}, {"sku": unique()}]}
    first = stacks.behaviour.run("JsonataHost", payload)
    succeeded(checks, first, "the first run")
    echoed = {**payload, "items_done": [{"item": i, "handled": True} for i in payload["items"]], "fork": ["left", "right"]}
    checks.expect(first.output == {"echo": echoed, "done": True}, f"output {first.output}")
    replayed = stacks.behaviour.run("JsonataHost", payload)
    succeeded(checks, replayed, "the replay")
    checks.expect(stacks.raw_output(stacks.behaviour, replayed) == stacks.raw_output(stacks.behaviour, first), "same bytes")
    checks.expect(len(stacks.behaviour.records_of(first, "Idempotency")) == 4, "four guards' records")


@scenario("crashed holder: an aborted holder's key is released by the release function, not at lease end")
def aborted_holder_released(stacks: Stacks, checks: Checks) -> None:
    payload = {"id": unique()}
    record_id = IdempotencyKey.from_paths("$.id").record_id(payload, namespace="Behaviour/LongLease")
    holder = stacks.behaviour.start("LongLease", payload)  # a 5 s body under a 10 min lease
    record = wait_for_record(stacks, record_id, lambda item: item is not None, timeout=30)
    checks.expect(record[schema.STATUS]["S"] == schema.INPROGRESS, "the holder holds the key")
    stopped = time.monotonic()
    stacks.behaviour.emulator.client("stepfunctions").stop_execution(executionArn=holder)
    wait_for_record(stacks, record_id, lambda item: item is None, timeout=30)
    released_after = time.monotonic() - stopped
    checks.expect(released_after < 30, f"released after {released_after:.1f} s")
    again = stacks.behaviour.run("LongLease", payload, timeout=60)
    succeeded(checks, again, "the next run")
    checks.expect(again.output == {"echo": payload, "done": True}, f"the next run ran the body: {again.output}")
    RELEASE_TIMINGS[0] = released_after


@scenario("stale reads: the release function retries while DescribeExecution still reads RUNNING, then releases")
def release_after_stale_reads(stacks: Stacks, checks: Checks) -> None:
    # Two stale reads fail two attempts; Lambda's third asynchronous attempt finds the execution ended.
    released_after = abort_holder(stacks, checks, stale_reads=2, released=True)
    checks.expect(released_after >= 3, f"released after {released_after:.1f} s: before two retry delays (1 s + 2 s)")


@scenario("stale reads past every retry: the event lands in the release function's dead-letter queue")
def release_dead_letter(stacks: Stacks, checks: Checks) -> None:
    abort_holder(stacks, checks, stale_reads=3, released=False)


RELEASE_TIMINGS: dict[int, float] = {}  # stale reads -> seconds from StopExecution to the key's release


def abort_holder(stacks: Stacks, checks: Checks, *, stale_reads: int, released: bool) -> float:
    """Abort a LongLease holder whose first ``stale_reads`` DescribeExecution reads after it ended say
    RUNNING (crosscheck/launcher.py makes them so); returns the seconds until its key was released, or,
    when ``released`` is false, checks that the key stays held and the event reaches the queue."""
    payload = {"id": unique()}
    record_id = IdempotencyKey.from_paths("$.id").record_id(payload, namespace="Behaviour/LongLease")
    queue_url = stacks.behaviour.physical_id("AWS::SQS::Queue", "DeadLetters")
    sqs = stacks.behaviour.emulator.client("sqs")
    holder = stacks.behaviour.start("LongLease", payload, name=f"stale-reads-{stale_reads}-{unique()}")
    wait_for_record(stacks, record_id, lambda item: item is not None, timeout=30)
    stopped = time.monotonic()
    stacks.behaviour.emulator.client("stepfunctions").stop_execution(executionArn=holder)
    if released:
        wait_for_record(stacks, record_id, lambda item: item is None, timeout=60)
        RELEASE_TIMINGS[stale_reads] = time.monotonic() - stopped
        return RELEASE_TIMINGS[stale_reads]
    deadline, messages = time.monotonic() + 30, list[dict[str, Any]]()
    while not messages and time.monotonic() < deadline:
        messages = sqs.receive_message(QueueUrl=queue_url, WaitTimeSeconds=1).get("Messages", [])
    checks.expect(len(messages) == 1, f"{len(messages)} messages in the dead-letter queue after 30 s")
    landed = json.loads(messages[0]["Body"])
    checks.expect(landed["requestPayload"]["detail"]["executionArn"] == holder, "the message is the holder's event")
    record = wait_for_record(stacks, record_id, lambda item: item is not None, timeout=1)
    checks.expect(record[schema.STATUS]["S"] == schema.INPROGRESS, "the key waits for its lease")
    return time.monotonic() - stopped


def wait_for_record(stacks: Stacks, record_id: str, until: Callable[[Any], bool], timeout: float) -> Any:
    client, table = stacks.behaviour.emulator.client("dynamodb"), stacks.behaviour.table_name("Idempotency")
    deadline = time.monotonic() + timeout
    while True:
        item = client.get_item(TableName=table, Key={schema.ID: {"S": record_id}}, ConsistentRead=True).get("Item")
        if until(item):
            return item
        if time.monotonic() > deadline:
            raise ScenarioFailed(f"record {record_id} still {item and item[schema.STATUS]['S']} after {timeout} s")
        time.sleep(0.1)


@scenario("fewest states (issue 43): a workflow of one Task runs it between Acquire and Complete; replayed in 3")
def one_task_bare(stacks: Stacks, checks: Checks) -> None:
    payload = {"id": unique(), "kib": 1}
    first = stacks.behaviour.run("InlineResults", payload)
    succeeded(checks, first, "the first run")
    states = first.entered_states()
    checks.expect(states == ["Idempotency.Acquire", "InlineResultsMake", "Idempotency.Complete"], f"states {states}")
    replay = stacks.behaviour.run("InlineResults", payload)
    succeeded(checks, replay, "the replay")
    checks.expect(replay.output == first.output, "the replay's output is the first run's")
    states = replay.entered_states()
    checks.expect(states == ["Idempotency.Acquire", "Idempotency.Inspect", "Idempotency.Replay"], f"replay states {states}")


@scenario("fewest states (issue 43): a guard of your own runs its one Task, or one Parallel, bare; replayed in 3")
def guard_of_your_own_bare(stacks: Stacks, checks: Checks) -> None:
    for machine, prefix, body, size in (
        ("BareTask", "TaskOnce", "BareMake", {"kib": 1}),
        ("BareFan", "FanOnce", "BareFanWork", {}),
    ):
        payload = {"id": unique(), **size}
        first = stacks.guards.run(machine, payload)
        succeeded(checks, first, f"{machine}'s first run")
        # ministack's history holds no state of a Parallel's branches (D3): the guard's and its body's are top level.
        states = [state for state in first.entered_states() if state.startswith(f"{prefix}.") or state == body]
        checks.expect(states == [f"{prefix}.Acquire", body, f"{prefix}.Complete"], f"{machine}'s states {states}")
        replay = stacks.guards.run(machine, payload)
        succeeded(checks, replay, f"{machine}'s replay")
        checks.expect(replay.output == first.output, f"{machine}'s replay gives the first run's output")
        states = replay.entered_states()
        checks.expect(states == [f"{prefix}.Acquire", f"{prefix}.Inspect", f"{prefix}.Replay"], f"{machine}'s replay {states}")
    failed = stacks.guards.run("BareFan", {"id": unique(), "fail": True})
    checks.expect((failed.status, failed.error) == ("FAILED", "Boom"), f"the failing run {failed.status} {failed.error}")
    states = [state for state in failed.entered_states() if state.startswith("FanOnce.")]
    checks.expect(states == ["FanOnce.Acquire", "FanOnce.Release", "FanOnce.Failed"], f"the failing run's states {states}")


@scenario("released when the execution fails (issue 43): the chain's error fails it; its event frees the key")
def released_when_the_execution_fails(stacks: Stacks, checks: Checks) -> None:
    payload = {"order": {"id": unique()}, "fail": True}
    record_id = IdempotencyKey.from_paths("$.order.id").record_id(payload, namespace="Behaviour/ReleasedAfter")
    failed = stacks.behaviour.run("ReleasedAfter", payload)
    checks.expect((failed.status, failed.error) == ("FAILED", "Boom"), f"the failed run {failed.status} {failed.error}")
    wait_for_record(stacks, record_id, lambda item: item is None, timeout=30)
    retried = stacks.behaviour.run("ReleasedAfter", {**payload, "fail": False})
    succeeded(checks, retried, "the retry")
    states = retried.entered_states()
    checks.expect(states[0] == "Idempotency.Acquire" and states[-1] == "Idempotency.Complete", f"states {states}")
    checks.expect("ReleasedAfterFine" in states and len(states) == 4, f"the retry ran the chain bare: {states}")


# --- the everything-on stack -----------------------------------------------------------------------
@scenario("everything on: JMESPath key, guarded Map lines, KMS table; first run and replay")
def everything_on(stacks: Stacks, checks: Checks) -> None:
    line = {"sku": unique(), "warehouse": "w1"}
    payload = {"order": {"id": unique()}, "customer": {"id": "c-1"}, "lines": [line]}
    first = stacks.everything.run("Orders", payload)
    succeeded(checks, first, "the first run")
    replayed = stacks.everything.run("Orders", payload)
    succeeded(checks, replayed, "the replay")
    checks.expect(replayed.output == first.output, "same output")
    expected = {
        IdempotencyKey.from_jmespath("[order.id, customer.id]").record_id(payload, namespace="orders"),
        IdempotencyKey.from_paths("$.sku", "$.warehouse").record_id(line, namespace="lines"),
    }
    checks.expect(set(stacks.everything.records_of(first)) == expected, "record ids as Python computes them")


@scenario("everything on: an Express workflow with large() result storage; first run and replay")
def everything_on_express(stacks: Stacks, checks: Checks) -> None:
    payload = {"quote": unique()}
    first = stacks.everything.run("Quotes", payload)
    succeeded(checks, first, "the first run")
    replayed = stacks.everything.run("Quotes", payload)
    succeeded(checks, replayed, "the replay")
    checks.expect(first.output == replayed.output == payload, f"outputs {first.output} {replayed.output}")


# --- existing workflows: Amazon States Language files (tests/asl) ----------------------------------------


def trip(run_type: str = "success") -> dict[str, str]:
    return {"trip_id": unique(), "depart_city": "Detroit", "arrive_city": "Frankfurt", "run_type": run_type}


@scenario("existing workflow (aws-samples' saga, an ASL file with substitutions): run once to its Succeed, replayed")
def saga_replayed(stacks: Stacks, checks: Checks) -> None:
    request = trip()
    first = stacks.documents.run("Saga", request)
    succeeded(checks, first, "the first run")
    checks.expect(
        side_effect_runs(stacks.documents, request["trip_id"], *SAGA_STEPS) == dict.fromkeys(SAGA_STEPS, 1), "each step ran"
    )
    replay = stacks.documents.run("Saga", request)
    succeeded(checks, replay, "the duplicate")
    checks.expect(stacks.raw_output(stacks.documents, replay) == stacks.raw_output(stacks.documents, first), "same bytes")
    checks.expect(
        side_effect_runs(stacks.documents, request["trip_id"], *SAGA_STEPS) == dict.fromkeys(SAGA_STEPS, 1), "no step ran again"
    )


@scenario("existing workflow (the saga): compensated to its Fail, it fails with the Fail's error, released; the retry completes")
def saga_released(stacks: Stacks, checks: Checks) -> None:
    request = trip("failProcessPaymentOnce")
    failed = stacks.documents.run("Saga", request)
    checks.expect((failed.status, failed.error) == ("FAILED", "Job Failed"), f"{failed.status} {failed.error}")
    ran = side_effect_runs(stacks.documents, request["trip_id"], "ProcessPayment", "ConfirmFlight", *COMPENSATIONS)
    checks.expect(ran == {"ProcessPayment": 1, "ConfirmFlight": 0, **dict.fromkeys(COMPENSATIONS, 1)}, f"compensated: {ran}")
    checks.expect(stacks.documents.records_of(failed, "Idempotency") == {}, "the key is released")
    retried = stacks.documents.run("Saga", request)
    succeeded(checks, retried, "the retry")
    checks.expect(
        side_effect_runs(stacks.documents, request["trip_id"], "ProcessPayment") == {"ProcessPayment": 2}, "payment ran again"
    )


@scenario("existing JSONata workflow (an ASL text): whole and as a guarded step, run once through its Succeed, replayed")
def jsonata_document(stacks: Stacks, checks: Checks) -> None:
    for workflow in ("Refund", "GuardedRefund"):
        trip_id = unique()
        request = {"trip_id": trip_id, "amount": 30}
        first = stacks.documents.run(workflow, request)
        succeeded(checks, first, f"{workflow}'s first run")
        expected = {"trip_id": trip_id, "refunded": 30, "by": "done"}
        checks.expect(first.output == expected, f"{workflow}'s output {first.output}", unless=D8)
        replay = stacks.documents.run(workflow, request)
        checks.expect(replay.output == first.output, f"{workflow}'s replay {replay.output}")
        checks.expect(side_effect_runs(stacks.documents, trip_id, "Refund") == {"Refund": 1}, f"{workflow} refunded once")


# --- the races stack: the protocol explorer's counterexamples ---------------------------------------
@scenario(
    "explored (issue 51): a holder that extends its lease between a duplicate's read and its takeover keeps its key; "
    "the side effect runs once"
)
def extension_before_takeover(stacks: Stacks, checks: Checks) -> None:
    """The explorer's trace, ordered by holds as on moto (tests/emulator/test_explored.py): the holder past its
    2 s lease, the duplicate about to take over what it read, the holder's extension first; the duplicate's
    refused takeover held where it goes (its second Inspect) until the holder has finished."""
    server = cast(Ministack, stacks.races.emulator)
    order_id = unique()
    payload, holder, duplicate = {"order": {"id": order_id}}, f"race-{order_id}-holder", f"race-{order_id}-duplicate"
    with (
        server.hold(holder, "Raced.RacedExtend") as extension,
        server.hold(duplicate, "Raced.Takeover") as takeover,
        server.hold(holder, "RacedCharge") as charge,
        server.hold(duplicate, "RacedCharge") as taken,
    ):
        holder_arn = stacks.races.start("Racing", payload, name=holder)
        extension.arrived()
        time.sleep(2.5)  # the holder's lease has lapsed
        duplicate_arn = stacks.races.start("Racing", payload, name=duplicate)
        takeover.arrived()  # past its first Inspect
        with server.hold(duplicate, "Raced.Inspect") as inspect:
            extension.release()
            charge.arrived()  # extended, about to charge
            takeover.release()
            refused = wait_for_first(inspect, taken)
            charge.release()
            taken.release()
            first = stacks.races.wait(holder_arn)
        second = stacks.races.wait(duplicate_arn)
    runs = side_effect_runs(stacks.races, f"Raced#{order_id}", "Charge")
    checks.expect(refused is inspect, "the duplicate's takeover was not refused: it went on to charge")
    checks.expect(runs == {"Charge": 1}, f"the side effect ran {runs['Charge']} times")
    succeeded(checks, first, "the holder")
    succeeded(checks, second, "the duplicate")
    checks.expect(second.output == first.output == {**payload, "Charge": "done"}, f"outputs {first.output} {second.output}")


def wait_for_first(*holds: Hold, timeout: float = 60.0) -> Hold:
    """The first of ``holds`` whose execution waits at its state."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for hold in holds:
            if hold.reached:
                return hold
        time.sleep(0.05)
    raise ScenarioFailed(f"none of {len(holds)} held states was reached within {timeout:.0f} s")
