"""The demo's scenarios (example/demo.py) on real AWS: first run and replay, ten concurrent duplicates,
and a failure that releases its key, against the example stack deployed with `cdk deploy`.

Opt in with `./dev test tests/aws --aws`, with AWS credentials and a region in the environment; without
them every test here is skipped with the reason shown. The `aws_stack` fixture (conftest.py) deploys
the example stack once under a unique name (`IdempotentOrders-it-<random>`) and, whatever happens,
destroys it at the end with `cdk destroy --force` and then deletes what the stack retains by design,
the idempotency table (RETAIN, so that records outlive a stack) and its four log groups: the run
leaves nothing of the stack in the account. Costs a few cents at most; takes about 5-8 minutes, most
of it `cdk deploy` and `cdk destroy`.
"""

from __future__ import annotations

import json
import random
from concurrent.futures import ThreadPoolExecutor

import pytest

from example.demo import BODY_START, WRAPPER_PREFIX, order
from idempotent_constructs.lambda_src import schema

pytestmark = pytest.mark.aws

CHARGE = "Charge"  # the example's Lambda step, guarded by order id inside the workflow
DECLINED_CARD = "4000 0000 0000 0002"  # example/charge/charge.py declines cards starting with 4000


def order_id() -> int:
    """A fresh order id (the demo's are 1001-1003), so that no test meets another's records."""
    return random.randrange(10**6, 10**9)


def test_a_first_run_executes_the_workflow_and_a_duplicate_replays_its_output(aws_stack, run_id):
    payload = order(order_id())
    first = aws_stack.run(payload, name=f"{run_id}-first")
    assert first.status == "SUCCEEDED", (first.error, first.cause)
    assert BODY_START in first.entered_states() and CHARGE in first.entered_states()
    assert {item[schema.STATUS]["S"] for item in aws_stack.records_of(first)} == {schema.COMPLETED}

    replay = aws_stack.run(payload, name=f"{run_id}-duplicate")
    assert replay.status == "SUCCEEDED", (replay.error, replay.cause)
    assert f"{WRAPPER_PREFIX}Replay" in replay.entered_states()
    # Neither the workflow nor its Lambda step ran again, and the output is the first run's.
    assert BODY_START not in replay.entered_states() and CHARGE not in replay.entered_states()
    assert replay.output == first.output
    assert json.dumps(replay.output, sort_keys=True) == json.dumps(first.output, sort_keys=True)


def test_ten_concurrent_duplicates_run_the_workflow_once_and_all_get_its_output(aws_stack, run_id):
    payload = order(order_id())
    with ThreadPoolExecutor(max_workers=10) as pool:
        arns = list(pool.map(lambda i: aws_stack.start(payload, name=f"{run_id}-{i}"), range(10)))
        executions = list(pool.map(aws_stack.wait, arns))

    assert [e.status for e in executions] == ["SUCCEEDED"] * 10, [(e.error, e.cause) for e in executions]
    runners = [e for e in executions if BODY_START in e.entered_states()]
    assert len(runners) == 1
    assert sum(CHARGE in e.entered_states() for e in executions) == 1
    assert len({json.dumps(e.output, sort_keys=True) for e in executions}) == 1
    # Every other one replayed the runner's result, found stored or waited for.
    assert all(f"{WRAPPER_PREFIX}Replay" in e.entered_states() for e in executions if e is not runners[0])


def test_a_failure_releases_the_key_so_the_next_run_executes_again(aws_stack, run_id):
    number = order_id()
    declined = aws_stack.run(order(number, card=DECLINED_CARD), name=f"{run_id}-declined")
    assert declined.status == "FAILED"
    assert declined.error == "CardDeclined", (declined.error, declined.cause)
    assert "was declined" in json.loads(declined.cause)["errorMessage"]
    assert f"{WRAPPER_PREFIX}Release" in declined.entered_states()
    assert aws_stack.records_of(declined) == []  # no record left in progress (or at all) for its keys

    retried = aws_stack.run(order(number), name=f"{run_id}-retried")
    assert retried.status == "SUCCEEDED", (retried.error, retried.cause)
    assert BODY_START in retried.entered_states() and CHARGE in retried.entered_states()
