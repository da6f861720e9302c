"""The last phase: run the chain (``Body``), keep its result (``Complete``), or handle its failure.

``Complete`` writes the result into the record natively when it can keep it exactly and small
enough; otherwise (numbers ``$string`` would round, a result over the native limit) its request
raises before anything is sent and ``StoreResult`` keeps the result through the result function:
compressed in the record, or in S3. No task is ever built over 256 KiB from a result (contract B16).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks

from .._jsonata import sizes
from .._jsonata.key_expressions import literal
from .._synth.documents import DocumentState
from ..lambda_src import schema
from ..policies import FailurePolicy
from . import lease, record_tasks
from .protocol import CONDITION_FAILED, ID, OWNER, QUERY_FAILED, TRANSIENT_DYNAMODB_ERRORS, VALIDATION, expression
from .tasks import ItemTask, fail, invoke, retry_transient

if TYPE_CHECKING:
    from . import IdempotencyGuard

# The error a failed run ends with, from the error output the failure states receive. Step Functions'
# own errors (States.*) cannot be raised again by a Fail state, so they travel as
# Idempotency.BodyFailed with the original error and cause as JSON in the cause.
ERROR = (
    "($e := $states.input; $substring($e.Error, 0, 7) = 'States.' ? "
    f"{{'Error': '{schema.BODY_FAILED}', 'Cause': $string($e)}} : $e)"
)
ERROR_OUTPUT = expression("$states.errorOutput")
TOO_LARGE = "The result is too close to Step Functions' 256 KiB payload limit to be kept; it was not stored."
# The chain's output, as the states after Body receive it: the Parallel's one-item result, or the output
# of a body that runs bare (``bare``).
RESULT = "$states.input[0]"
BARE_RESULT = "$states.input"
# Step Functions' catchers are for Task, Parallel and Map states; of these only a Task runs bare (``bare``):
# the ``ExtendLease`` states of a Parallel's branches or a Map's item processor, wired in up to the guard's
# binding, are adopted while the guard's own Body is bound (``Body.bind_to_graph``), which a state of the
# user's cannot do.


class Body(sfn.Parallel):
    """The Parallel that holds the user's chain; when it is bound into a graph, and CDK binds its
    branch only then, the guard adopts the ``ExtendLease`` states of the chain (``lease``)."""

    def __init__(self, guard: IdempotencyGuard) -> None:
        super().__init__(guard, "Body", state_name=guard.config.name("Body"))
        self.guard = guard

    def bind_to_graph(self, graph: sfn.StateGraph) -> None:
        with lease.adopting(self.guard):
            super().bind_to_graph(graph)
        for branch in self._branches:  # CDK's protected field: the branch's graph, bound now
            lease.adopt_within(self.guard, branch.start_state)


def bare(chain: sfn.IChainable) -> sfn.TaskStateBase | None:
    """The chain's one state, where it can run bare as the body: a Task state built in the CDK, with no
    Catch of its own (a Catch's handler is a state of the chain too) and nothing after it. Its own Retry
    runs as it would in a branch; the guard adds its Catch, for ``States.ALL``, last, and the states after
    it read its output. A document's states are as its file says them, so a document runs as a branch."""
    start = chain.start_state
    reachable = sfn.State.find_reachable_states(start, include_error_handlers=True)
    # jsii gives a new Python object for each answer: a state is known by its construct path.
    alone = [state.node.path for state in reachable] == [start.node.path]
    return start if alone and isinstance(start, sfn.TaskStateBase) else None


def body(
    guard: IdempotencyGuard, chain: sfn.IChainable, on_failure: sfn.IChainable
) -> tuple[sfn.Chain | sfn.TaskStateBase | sfn.Parallel | sfn.CustomState, sfn.State | None]:
    """``(what runs the user's chain, its first state where the chain runs bare)``.

    Under ``FailurePolicy.RELEASE_WHEN_EXECUTION_FAILS`` the chain itself runs bare, its failures left to
    fail the execution (the release function frees the key from the failure's event); every path of it
    ends at one of its end states, which ``Complete`` follows (``bare_chain_problems``).

    In a guard that runs once per execution (an
    ``IdempotentStateMachine``'s, or ``once_per_execution``), a chain of one Task state (``bare``) is that
    state itself, its failures caught into ``on_failure``: a first run enters two states of the guard's,
    ``Acquire`` and ``Complete``, and the state's output is the chain's. Only there: the state is wired to
    ``Complete`` now, so nothing may follow it later, and a guard of your own may be given the rest of
    its body after it is made (an ``extend_lease()`` state in a loop, say).

    Any other chain is the only branch of a Parallel: its input is the guard's input, and whatever it
    raises is caught in one place. The Parallel declares no query language and uses no field of either:
    its branch is in the language of the states around the guard (a JSONata state may not hold JSONPath
    states), and its output is ``[the chain's output]`` in both.

    A document on its own (an ``AslFragment``, or its ``DocumentState``, with nothing wired to it) is the branch itself, rather
    than a Parallel of its own inside this one: the same output, one state fewer on every run (a
    document holds no ``ExtendLease`` state to adopt)."""
    if guard.config.on_failure is FailurePolicy.RELEASE_WHEN_EXECUTION_FAILS:
        return sfn.Chain.start(chain), chain.start_state
    parallel: sfn.TaskStateBase | sfn.Parallel | sfn.CustomState
    state = chain.start_state if isinstance(chain, sfn.StateMachineFragment) else chain  # an AslFragment's is its document
    if guard.config.once_per_execution and (alone := bare(chain)) is not None:
        alone.add_catch(on_failure, errors=["States.ALL"])
        return alone, alone
    if isinstance(state, DocumentState) and state.stands_alone:
        # A CustomState is named by its construct id: the guard's name for Body.
        parallel = state.as_branch_of(guard, guard.config.name("Body"))
    else:
        parallel = Body(guard).branch(chain)
    parallel.add_catch(on_failure, errors=["States.ALL"])
    return parallel, None


def bare_chain_problems(chain: sfn.IChainable) -> list[str]:
    """What keeps ``chain`` from running bare (``FailurePolicy.RELEASE_WHEN_EXECUTION_FAILS``): a path that
    ends elsewhere than at one of its end states (a Succeed, a Catch's handler that ends, the branches of a
    Choice passed as it is, whose end states the CDK gives only through ``afterwards()``) would end the
    execution, and succeed, without ``Complete``, its record left in progress until its lease lapses."""
    if isinstance(chain.start_state, DocumentState):
        return [
            "on_failure: FailurePolicy.RELEASE_WHEN_EXECUTION_FAILS runs the chain bare, which a document is not; use FailurePolicy.RELEASE"
        ]
    ends = {cast(sfn.State, state).node.path for state in chain.end_states}
    stray = [
        state.state_id
        for state in sfn.State.find_reachable_states(chain.start_state, include_error_handlers=True)
        if state.node.path not in ends
        and (json := state.to_state_json()).get("Type") != "Fail"
        and (json.get("End") or json.get("Type") == "Succeed")
    ]
    return (
        [
            f"on_failure: FailurePolicy.RELEASE_WHEN_EXECUTION_FAILS runs the chain bare, so that Complete follows its end "
            f"states, but it also ends at {', '.join(map(repr, stray))} (a Succeed, a Catch's handler that ends, a branch "
            "of a Choice passed without .afterwards()), where the execution would succeed with its key held; end every "
            "path at the chain's end, or use FailurePolicy.RELEASE"
        ]
        if stray
        else []
    )


def complete(guard: IdempotencyGuard, on_failure: sfn.IChainable, result: str) -> tuple[ItemTask, tasks.LambdaInvoke]:
    """``(Complete, StoreResult)``: both end the guard with the chain's output, ``result`` (``RESULT``, or
    ``BARE_RESULT`` after a body that runs bare)."""
    config, facts = guard.config, guard.facts
    lease_lost = fail(
        guard,
        config,
        "LeaseLost",
        error=schema.LEASE_LOST,
        cause="Another execution took this idempotency key over; this run's result was not stored.",
    )
    task = ItemTask(
        guard,
        "Complete",
        config=config,
        action="updateItem",
        arguments=record_tasks.complete(config, facts, result),
        output=expression(result),
    )
    retry_transient(task, TRANSIENT_DYNAMODB_ERRORS, after_body=True)
    task.catch(lease_lost, [CONDITION_FAILED], output=None)
    payload: dict[str, Any] = {
        "action": "store",
        "table": config.table.table_name,
        "inline_threshold": config.native_limit,
        "record_limit": config.native_limit if config.result_storage.is_large else schema.RECORD_GZIP_LIMIT,
        "expires_after_seconds": int(config.expires_after.to_seconds()),
        "result": expression(sizes.within_payload(result, TOO_LARGE)),
        "idempotency": expression(record_tasks.jsonata_object({field: facts(field) for field in (ID, OWNER, VALIDATION)})),
    }
    if guard.results_bucket is not None:
        payload["bucket"] = guard.results_bucket.bucket_name
    store = invoke(guard, config, "StoreResult", guard.result_function, payload, after_body=True, outputs=expression(result))
    # Retrying is safe (the object name is fixed per holder and the record write is fenced), except
    # for the answers retrying cannot change: the function's two, and a result refused before the task
    # is built (QUERY_FAILED, below), which States.ALL would retry for minutes while the key is held.
    store.add_retry(errors=[schema.LEASE_LOST, schema.RESULT_TOO_LARGE, QUERY_FAILED], max_attempts=0)
    retry_transient(store, ["States.ALL"], after_body=True)
    store.add_catch(lease_lost, errors=[schema.LEASE_LOST])
    store.add_catch(on_failure, errors=[schema.RESULT_TOO_LARGE], outputs=ERROR_OUTPUT)
    # Too large to send to the function at all: refused before the task is built.
    store.add_catch(
        on_failure,
        errors=[QUERY_FAILED],
        outputs=expression(f"{{'Error': '{schema.RESULT_TOO_LARGE}', 'Cause': {literal(TOO_LARGE)}}}"),
    )
    task.catch(store, [QUERY_FAILED])
    return task, store


def failure(guard: IdempotencyGuard) -> tuple[sfn.IChainable, sfn.Fail | None]:
    """What a failed run goes to (ending in ``Failed``), and for CACHE the state that replays a
    stored failure."""
    config, facts = guard.config, guard.facts
    failed = fail(
        guard,
        config,
        "Failed",
        error=expression("$states.input.Error"),
        cause=expression("$exists($states.input.Cause) ? $states.input.Cause : ''"),
    )
    writes: list[ItemTask] = []
    release = record_failure = None
    # A chain left to fail the execution still has its own failures after it: a result too large to keep.
    if config.on_failure is not FailurePolicy.CACHE or config.cache_errors:
        release = ItemTask(
            guard,
            "Release",
            config=config,
            action="deleteItem",
            arguments=record_tasks.release(config, facts),
            output=expression(ERROR),
        )
        writes.append(release)
    if config.on_failure is FailurePolicy.CACHE:
        record_failure = ItemTask(
            guard,
            "RecordFailure",
            config=config,
            action="updateItem",
            arguments=record_tasks.record_failure(config, facts, ERROR),
            output=expression(ERROR),
        )
        writes.append(record_failure)
    for write in writes:
        retry_transient(write, TRANSIENT_DYNAMODB_ERRORS, after_body=True)
        # Not ours any more (taken over after our lease lapsed): leave the record alone.
        write.catch(failed, [CONDITION_FAILED], output=expression(ERROR))
        write.next(failed)
    if record_failure is None:
        assert release is not None
        return release, None
    replay_failure = fail(
        guard,
        config,
        "ReplayFailure",
        error=expression(facts.record(schema.ERROR)),
        cause=expression(f"$exists({facts.record(schema.CAUSE)}) ? {facts.record(schema.CAUSE)} : ''"),
    )
    if not config.cache_errors:
        return record_failure, replay_failure
    assert release is not None, "cache_errors: the errors not listed are released"
    listed = ", ".join(literal(error) for error in config.cache_errors)
    choose = (
        sfn.Choice.jsonata(guard, "CacheOrRelease", state_name=config.name("CacheOrRelease"))
        .when(sfn.Condition.jsonata(expression(f"{ERROR}.Error in [{listed}]")), record_failure)
        .otherwise(release)
    )
    return choose, replay_failure
