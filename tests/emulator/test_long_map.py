"""Emulator: docs/samples/long_map, an import of more rows than a guarded inline Map holds, run through a guard in a
Distributed Map: every row id's side effect once, duplicate ids among the rows, and a parent history of a few events.

The count of rows is ``LONG_MAP_ROWS``: 1,500 by default (about 70 s on 2 cores), past the 1,315 rows at which an
inline Map of this guard reaches the 25,000-event history limit. Issue 55's 5,000 rows (about 400 s), run alone::

    LONG_MAP_ROWS=5000 .venv/bin/python -m pytest -q tests/emulator/test_long_map.py

What the emulator does with a Distributed Map (moto 5.2.5, ``moto/stepfunctions/parser/asl/component/state/exec/
state_map``): it runs the item processor on threads of the parent execution, a thread per item or ``MaxConcurrency``
of them. It writes the parent's ``MapRunStarted`` and ``MapRunSucceeded`` and answers ListMapRuns and DescribeMapRun
(with item counts), but starts no child execution: the children's events go to an event list of their own that no
one keeps (no history to read, none listed), and the children read the parent's ``$states.context.Execution``.
Nor does it enforce the 25,000-event history limit, or ``ToleratedFailureCount`` or ``ToleratedFailurePercentage``:
a child that fails leaves a null in the Map's result and the Map succeeds, where AWS fails it
(``States.ExceedToleratedFailureThreshold``, none tolerated by default); DescribeMapRun's ``failed`` count tells.
A worker thread recurses once an item: past about 9,900 items a thread, it dies (RecursionError) and the execution
runs on for ever.

So the Map here runs one child at a time (``max_concurrency=1``), at most ``MOST_ROWS`` of them, and a duplicate id
meets the record its first row completed. Children that run at once share the parent's execution id, so two that
enter ``Acquire`` in the same millisecond write the same owner token, and the later one takes the earlier one's
record for its own and runs the side effect again: on AWS each child is an execution of its own and no two tokens
are alike. Duplicates of one key running at the same time are shown between executions of their own
(tests/emulator/test_whole_workflow.py, test_explored.py), not here.
"""

from __future__ import annotations

import importlib.util
import os
import re
import time
from types import ModuleType

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_stepfunctions as sfn

from idempotent_constructs import IdempotencyTable
from idempotent_constructs.guard import history
from idempotent_constructs.testing import Deployment, state_machine_definitions
from tests.samples import SAMPLES

ROWS = int(os.environ.get("LONG_MAP_ROWS", "1500"))
REPEATED = ROWS // 5  # the last fifth of the rows repeat ids of the first four fifths
MOST_ROWS = 9_000  # of one worker thread (see above)
# The parent's whole history: the execution's, the Map state's and its Map run's events, however many rows.
PARENT_EVENTS = [
    "ExecutionStarted",
    "MapStateEntered",
    "MapStateStarted",
    "MapRunStarted",
    "MapRunSucceeded",
    "MapStateSucceeded",
    "MapStateExited",
    "ExecutionSucceeded",
]


def sample() -> ModuleType:
    """docs/samples/long_map/rows.py."""
    spec = importlib.util.spec_from_file_location("docs_samples.long_map.rows", SAMPLES / "long_map" / "rows.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def rows(emulator) -> Deployment:
    return emulator.deploy_stack(sample().RowsStack(App(), "LongMap", max_concurrency=1))


def runs(deployment: Deployment, prefix: str) -> dict[str, int]:
    """How often the side effect ran, by row id (those that start with ``prefix``)."""
    return {item["id"]["S"]: int(item["runs"]["N"]) for item in deployment.items("Effects") if item["id"]["S"].startswith(prefix)}


def item_counts(deployment: Deployment, execution_arn: str) -> dict[str, int]:
    client = deployment.emulator.client("stepfunctions")
    (map_run,) = client.list_map_runs(executionArn=execution_arn)["mapRuns"]
    counts = client.describe_map_run(mapRunArn=map_run["mapRunArn"])["itemCounts"]
    return {name: counts[name] for name in ("total", "succeeded", "failed", "timedOut", "aborted")}


def test_an_import_of_more_rows_than_an_inline_map_holds_runs_each_row_ids_side_effect_once(rows, unique, capsys):
    assert ROWS <= MOST_ROWS, f"LONG_MAP_ROWS={ROWS}: the emulator runs at most about {MOST_ROWS:,} rows one at a time"
    distinct = ROWS - REPEATED
    payload = {"rows": [{"id": f"{unique}-{n % distinct}"} for n in range(ROWS)]}
    started = time.monotonic()
    execution = rows.run("Import", payload, timeout=ROWS)  # about 0.05 to 0.1 s a row on 2 cores
    seconds = time.monotonic() - started
    with capsys.disabled():
        print(f"\nlong map: {ROWS:,} rows ({distinct:,} distinct ids) in {seconds:.1f} s")
    assert execution.status == "SUCCEEDED" and execution.output == {"rows": ROWS}
    # The emulator lets a failed child pass (see above): its count says none failed.
    assert item_counts(rows, execution.arn) == {"total": ROWS, "succeeded": ROWS, "failed": 0, "timedOut": 0, "aborted": 0}
    assert runs(rows, f"{unique}-") == {f"{unique}-{n}": 1 for n in range(distinct)}
    assert [event["type"] for event in execution.history] == PARENT_EVENTS


def inline_import() -> Stack:
    """The sample's guard in an inline Map: every row's events in the execution's one history."""
    stack = Stack(App(), "InlineRows")
    table = IdempotencyTable(stack, "Idempotency")
    effects = dynamodb.Table(stack, "Effects", partition_key=dynamodb.Attribute(name="id", type=dynamodb.AttributeType.STRING))
    each = sfn.Map.jsonata(stack, "Rows", items=sfn.ProvideItems.jsonata("{% $states.input.rows %}"))
    each.item_processor(sample().once_per_row(stack, table, effects))
    sfn.StateMachine(stack, "Import", definition_body=sfn.DefinitionBody.from_chainable(each))
    return stack


def test_an_inline_map_of_as_many_rows_would_pass_the_history_limit_where_the_distributed_maps_history_stays_put(
    emulator, rows, unique
):
    inline = emulator.deploy_stack(inline_import())
    (definition,) = state_machine_definitions(inline.template).values()
    (note,) = history.notes(definition, express=False)
    found = re.search(r"about (\d+) history events an item, .* more than about ([\d,]+) items", note)
    per_row, most = int(found[1]), int(found[2].replace(",", ""))
    assert (per_row, most) == (19, 1_315) and most < ROWS  # the rows of this import are past it

    def events(deployment: Deployment, count: int) -> int:
        payload = {"rows": [{"id": f"{unique}-{deployment.stack_name}-{count}-{n}"} for n in range(count)]}
        execution = deployment.run("Import", payload)
        assert execution.status == "SUCCEEDED"
        return len(execution.history)

    inline_events, distributed_events = {n: events(inline, n) for n in (4, 12)}, {n: events(rows, n) for n in (4, 12)}
    # Counted by the emulator, which enforces no limit: 19 more events a row inline, as synth estimates.
    assert (inline_events[12] - inline_events[4]) / 8 == per_row
    assert inline_events[4] + per_row * (ROWS - 4) > history.HISTORY_LIMIT
    assert distributed_events[4] == distributed_events[12] == len(PARENT_EVENTS)
