"""The last phase: run the chain (``Body``), keep its result (``Complete``), or handle its failure.

``Complete`` writes the result into the record natively when it can keep it exactly and small
enough; otherwise (numbers ``$string`` would round, a result over the native limit) its request
raises before anything is sent and ``StoreResult`` keeps the result through the result function:
compressed in the record, or in S3. No task is ever built over 256 KiB from a result (contract B16).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, cast

from aws_cdk import aws_stepfunctions as sfn

from .._jsonata import sizes
from .._jsonata.key_expressions import literal
from .._synth import read_once
from .._synth.documents import DocumentState
from ..lambda_src import schema
from ..policies import FailurePolicy
from . import json_graph, lease, record_tasks
from .protocol import CONDITION_FAILED, ID, OWNER, QUERY_FAILED, VALIDATION, expression
from .route import condition
from .tasks import GuardState, ItemTask, fail, in_python, invoke, item_task, kit, reference, retry_transient

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
# The states that catch (Step Functions' catchers are for Task, Parallel and Map states) and so may run bare.
CATCHING = (sfn.TaskStateBase, sfn.Parallel, sfn.MapBase)


class Wiring:
    """How the user's chain joins the guard's states (``body``), settled as the first state that leads to it
    joins a graph (``ItemTask.joining``), and not before: until then the user may still wire the chain on
    (an ``extend_lease()`` state placed in it after the guard was made, say), and nothing is rendered
    before it. ``Complete`` and ``StoreResult`` read the chain's output as the settled shape gives it
    (``reads``). The ``ExtendLease`` states of the chain's Parallel branches, which CDK binds only as the
    Parallel joins a graph, are adopted as they are bound then (``lease``)."""

    def __init__(
        self, guard: IdempotencyGuard, chain: sfn.IChainable, on_failure: sfn.IChainable, complete: sfn.IChainable
    ) -> None:
        self.guard, self.chain, self.on_failure, self.complete = guard, chain, on_failure, complete
        self.sources: list[GuardState] = []  # the states that go to the body: the writes that take the key
        self.settled = False
        self.bare: sfn.State | None = None  # the chain's first state, where the chain runs bare
        self._states: list[sfn.State] = []
        self._entered = ""

    def lead(self, source: GuardState) -> None:
        """``source`` goes to the body, once it is settled."""
        self.sources.append(source)
        source.joining = self.joining

    @property
    def first(self) -> sfn.State | None:
        """The chain's own first state where it runs bare: as settled, or, before, as it would be now."""
        if self.settled:
            return self.bare
        if in_python(self.guard):  # a Parallel's branch, as the guard chose (renders_in_python)
            return None
        if self.guard.config.fails_the_execution:
            return self.chain.start_state
        return bare(self.chain)

    @property
    def entered(self) -> str:
        """The type of the "entered" log event of the state that runs the body: the Parallel's, or that of the
        chain's own first state where it runs bare (known when settled, read once then)."""
        return self._entered if self.settled else _entered(self.first)

    @property
    def states(self) -> list[sfn.State]:
        """The chain's own states (error handlers included), not the guard's that follow them once settled."""
        if self.settled:
            return self._states
        return sfn.State.find_reachable_states(self.chain.start_state, include_error_handlers=True)

    @contextmanager
    def joining(self) -> Iterator[None]:
        """While the first state that goes to the body joins a graph: the body is wired in, and the
        ``ExtendLease`` states bound meanwhile (those of a bare Parallel's branches) are the guard's."""
        if self.settled:
            yield
            return
        first = self.first
        self._states, self._entered = self.states, _entered(first)  # before anything of the guard's follows them
        guarded, self.bare = body(self.guard, self.chain, self.on_failure, first)
        self.settled = True
        for source in self.sources:
            source.next(guarded)
        cast(Any, guarded if in_python(self.guard) else sfn.Chain.start(guarded)).next(self.complete)
        with lease.adopting(self.guard):
            yield
        if isinstance(guarded, json_graph.Body):
            guarded = guarded.parallel
        for state in self._states if self.bare is not None else [cast(sfn.State, guarded)]:
            lease.adopt_inside(self.guard, state)

    def reads(self, state: Any) -> Any:
        """A rendered state after the body (``Complete``, ``StoreResult``), reading the chain's output as
        the settled shape gives it: ``RESULT`` of the Parallel's, ``BARE_RESULT`` of a chain run bare."""
        if self.bare is None:
            return state
        if isinstance(state, str):
            return state.replace(RESULT, BARE_RESULT)
        if isinstance(state, dict):
            return {name: self.reads(value) for name, value in state.items()}
        return [self.reads(value) for value in state] if isinstance(state, list) else state


def _entered(first: sfn.State | None) -> str:
    return "ParallelStateEntered" if first is None else f"{first.to_state_json()['Type']}StateEntered"


def bare(chain: sfn.IChainable) -> sfn.State | None:
    """The chain's one state, where it can run bare as the body: a Task, Parallel or Map state built in
    the CDK, with no Catch of its own (a Catch's handler is a state of the chain too), no ``Assign`` (whose
    variables a branch keeps to itself, and a replay, which does not run it, would not assign) and
    nothing after it. Its own Retry runs as it would in a branch; the guard adds its Catch, for
    ``States.ALL``, last, and the states after it read its output. A document's states are as its file
    says them, so a document runs as a branch."""
    start = chain.start_state
    reachable = sfn.State.find_reachable_states(start, include_error_handlers=True)
    # jsii gives a new Python object for each answer: a state is known by its reference.
    alone = [reference(state) for state in reachable] == [reference(start)]
    return start if alone and isinstance(start, CATCHING) and "Assign" not in start.to_state_json() else None


def body(
    guard: IdempotencyGuard, chain: sfn.IChainable, on_failure: sfn.IChainable, first: sfn.State | None
) -> tuple[Any, sfn.State | None]:
    """``(what runs the user's chain, its first state where the chain runs bare)``, as ``Wiring`` settles it
    (``first``: that state, as ``Wiring.first`` finds it).

    Under ``FailurePolicy.RELEASE_WHEN_EXECUTION_FAILS`` and ``KEEP_FOR_REDRIVE`` the chain itself runs bare,
    its failures left to fail the execution (the release function frees the key from the failure's event, or
    the key is kept for a redrive); every path of it ends at one of its end states, which ``Complete`` follows
    (``bare_chain_problems``).

    A chain of one Task, Parallel or Map state (``bare``) is that state itself, its failures caught into
    ``on_failure``: a first run enters two states of the guard's, ``Acquire`` and ``Complete``, and the
    state's output is the chain's.

    Any other chain is the only branch of a Parallel: its input is the guard's input, and whatever it
    raises is caught in one place. The Parallel declares no query language and uses no field of either:
    its branch is in the language of the states around the guard (a JSONata state may not hold JSONPath
    states), and its output is ``[the chain's output]`` in both.

    A document on its own (an ``AslFragment``, or its ``DocumentState``, with nothing wired to it) is the branch itself, rather
    than a Parallel of its own inside this one: the same output, one state fewer on every run (a
    document holds no ``ExtendLease`` state to adopt)."""
    if guard.config.fails_the_execution:
        return sfn.Chain.start(chain), first
    parallel: sfn.Parallel | sfn.CustomState
    state = chain.start_state if isinstance(chain, sfn.StateMachineFragment) else chain  # an AslFragment's is its document
    if first is not None:
        first.add_catch(on_failure, errors=["States.ALL"])  # type: ignore[attr-defined]
        return first, first
    if isinstance(state, DocumentState) and state.stands_alone:
        # A CustomState is named by its construct id: the guard's name for Body.
        parallel = state.as_branch_of(guard, guard.config.name("Body"))
    else:
        parallel = sfn.Parallel(guard, "Body", state_name=guard.config.name("Body")).branch(chain)
    if in_python(guard):  # the CDK's Parallel, in the graph of the guard's states as Python renders them
        assert isinstance(parallel, sfn.Parallel)  # not a document alone (renders_in_python)
        placed = json_graph.Body(parallel, guard.config.name("Body"))
        placed.add_catch(on_failure, errors=["States.ALL"])
        return placed, None
    parallel.add_catch(on_failure, errors=["States.ALL"])
    return parallel, None


def bare_chain_problems(chain: sfn.IChainable, policy: FailurePolicy) -> list[str]:
    """What keeps ``chain`` from running bare (``FailurePolicy.RELEASE_WHEN_EXECUTION_FAILS`` and
    ``KEEP_FOR_REDRIVE``, the ``policy``): a path that ends elsewhere than at one of its end states (a Succeed,
    a Catch's handler that ends, the branches of a Choice passed as it is, whose end states the CDK gives only
    through ``afterwards()``) would end the execution, and succeed, without ``Complete``, its record left in
    progress until its lease lapses."""
    if isinstance(chain.start_state, DocumentState):
        return [
            f"on_failure: FailurePolicy.{policy.name} runs the chain bare, which a document is not; use FailurePolicy.RELEASE"
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
            f"on_failure: FailurePolicy.{policy.name} runs the chain bare, so that Complete follows its end "
            f"states, but it also ends at {', '.join(map(repr, stray))} (a Succeed, a Catch's handler that ends, a branch "
            "of a Choice passed without .afterwards()), where the execution would succeed with its key held; end every "
            "path at the chain's end, or use FailurePolicy.RELEASE"
        ]
        if stray
        else []
    )


def complete(guard: IdempotencyGuard, on_failure: sfn.IChainable) -> tuple[GuardState, GuardState]:
    """``(Complete, StoreResult)``: both end the guard with the chain's output, read as ``RESULT`` (the
    Parallel's) and rendered as the guard's ``Wiring`` settles it."""
    config, facts, result = guard.config, guard.facts, RESULT
    lease_lost = fail(
        guard,
        config,
        "LeaseLost",
        error=schema.LEASE_LOST,
        cause="Another execution took this idempotency key over; this run's result was not stored",
        record=facts,
    )
    task = item_task(
        guard,
        "Complete",
        config=config,
        action="updateItem",
        arguments=record_tasks.complete(config, facts, result),
        output=expression(result),
        after_body=True,
    )
    task.catch(lease_lost, [CONDITION_FAILED], output=None)
    payload: dict[str, Any] = {
        "action": "store",
        "table": read_once.table(config.table).name,
        "inline_threshold": config.native_limit,
        "record_limit": config.native_limit if config.result_storage.is_large else schema.RECORD_GZIP_LIMIT,
        "expires_after_seconds": int(read_once.seconds(config.expires_after)),
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
        release = item_task(
            guard,
            "Release",
            config=config,
            action="deleteItem",
            arguments=record_tasks.release(config, facts),
            output=expression(ERROR),
            after_body=True,
        )
        writes.append(release)
    if config.on_failure is FailurePolicy.CACHE:
        record_failure = item_task(
            guard,
            "RecordFailure",
            config=config,
            action="updateItem",
            arguments=record_tasks.record_failure(config, facts, ERROR),
            output=expression(ERROR),
            after_body=True,
        )
        writes.append(record_failure)
    for write in writes:
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
        kit(guard)
        .Choice.jsonata(guard, "CacheOrRelease", state_name=config.name("CacheOrRelease"))
        .when(condition(f"{ERROR}.Error in [{listed}]"), record_failure)
        .otherwise(release)
    )
    return choose, replay_failure
