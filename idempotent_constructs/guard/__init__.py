"""``IdempotencyGuard``: the states that make any chain idempotent (docs/explanation/how-it-runs.md).

Shape of the generated states (names carry the guard's prefix; all JSONata)::

    [Begin | ComputeKey] -> Acquire --------------------------------------> Body -> Complete -> (next)
                      | key missing: KeyMissing                            |        '-> StoreResult -> (next)
                      | taken                                              | fails
                    Inspect -> Replay [-> Restore] -> (next)               [CacheOrRelease] -> Release | RecordFailure -> Failed
                                | no result to replay
                              Route -- gone --> Acquire
                                |---- other payload --> PayloadMismatch
                                |---- completed, not given back --> NotAnObject | Unreadable
                                |---- failed (CACHE) --> ReplayFailure
                                |---- held within its lease --> Backoff -> Await -> Replay
                                |---- held past its lease --> [OwnerCheck -> OwnerRunning] -> Await
                                |                                           '-> Takeover
                                '---- otherwise --> Takeover -> Body

A body of one Task, Parallel or Map state runs bare: the state itself, with the guard's Catch, stands
for ``Body``, and a first run is ``Acquire -> (the state) -> Complete`` (``finish.Wiring`` settles it as
the guard joins a graph, so that a body wired on after the guard was made runs whole). Any other first
run is ``Acquire -> Body -> Complete``; a replay ``Acquire -> Inspect -> Replay`` (``Replay`` routes what it
cannot replay to ``Route``: ``route.route``):
the key, the payload digest, the owner token and the clock are computed in JSONata, with no Lambda
call (a JMESPath key adds ``ComputeKey``). Each write that takes the key writes an owner token that its
retries write again, that of its state's entry, so that a retried ``Acquire`` whose first reply was
lost recognises its own record (contract B12); a guard in an inline Map, whose iterations may enter a
state in the same millisecond, starts with ``Begin``, which draws one first (``placement``: seen at synth).
Modules: ``guard_options`` (the options model),
``config`` (their values), ``protocol`` (the shared names), ``record_tasks`` (the DynamoDB requests),
``tasks`` (the task kinds), ``owner_check``, and one per phase: ``acquire``, ``route``, ``wait``, ``finish``; a whole
workflow's guard makes its states with ``json_states`` (bound and rendered as ``json_graph`` does), not the CDK's.
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Duration
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from .._synth import options, quota_plugin, read_once, state_names
from .._synth.documents import DocumentState
from .._synth.functions import (
    KeyFunction,
    ResultFunction,
    kept_for_redrive,
    key_function,
    records_of,
    result_function,
    results_bucket,
)
from .._synth.outcome_metrics import GuardOutcomes
from ..errors import IdempotencyConfigurationError
from ..key import IdempotencyKey
from ..payload import IdempotencyPayload
from ..policies import CompletedPolicy, FailurePolicy, InFlightPolicy, ResultStorage
from ..table import IdempotencyTable
from . import acquire, finish, history, marker, placement, route, wait
from .advice import advise
from .config import (
    DEFAULT_LEASE,
    EVENTS_PER_POLL,
    MAX_POLLS,
    WHOLE_WORKFLOWS,
    AtSynth,
    GuardConfig,
    poll_schedule,
    waiting_seconds,
)
from .guard_options import GUARD, GUARD_MODEL
from .lease import ExtendLease, adopt_within
from .protocol import ID, STATE_NAMES, TRANSIENT_DYNAMODB_ERRORS, Facts
from .tasks import GuardState

__all__ = [
    "DEFAULT_LEASE",
    "EVENTS_PER_POLL",
    "MAX_POLLS",
    "STATE_NAMES",
    "TRANSIENT_DYNAMODB_ERRORS",
    "ExtendLease",
    "IdempotencyGuard",
    "poll_schedule",
    "waiting_seconds",
]


class IdempotencyGuard(sfn.StateMachineFragment):
    """Wraps any chain so that it runs once per idempotency key; usable wherever a chain is.

    The chain receives exactly the input it would receive unwrapped, and the guard's output, on the
    first run and on every replay, is the chain's own output. Several guards may live in one state
    machine, inside Map and Parallel states too, whatever its query language (each generated state
    declares JSONata); their state names carry the guard's prefix.
    """

    @GUARD_MODEL.documented(GUARD)
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        table: IdempotencyTable | dynamodb.ITable,
        body: sfn.IChainable,
        key: IdempotencyKey | None = None,
        payload: IdempotencyPayload | None = None,
        namespace: str | None = None,
        expires_after: Duration | None = None,
        lease: Duration | None = None,
        poll_interval: Duration | None = None,
        max_wait: Duration | None = None,
        on_in_flight: InFlightPolicy | None = None,
        on_failure: FailurePolicy | None = None,
        on_completed: CompletedPolicy | None = None,
        replay_marker: str | None = None,
        cache_errors: Sequence[str] | None = None,
        state_name_prefix: str | None = None,
        owner_state_machine_name: str | None = None,
        result_storage: ResultStorage | None = None,
        once_per_execution: bool = False,
        in_inline_map: bool | None = None,
    ) -> None:
        """
        :options: each option's documentation is written here from guard.guard_options.GUARD_MODEL
        """
        super().__init__(scope, construct_id)
        # One pass: the type of every parameter (by name), then the values of those of the right type.
        found = options.Validation(self, GUARD_MODEL, GUARD, locals())
        # Its path from its scope's, which a workflow has read already: no call into jsii.
        path = read_once.child_path(scope, self, construct_id)
        config = GuardConfig(path, construct_id, {**found.values, "whole_workflow": scope in WHOLE_WORKFLOWS})
        found.extend(config.problems(found.wrong))
        # A whole workflow's chain (not its document) was checked already, as the workflow resolved its options.
        if found.typed("body") and not (config.whole_workflow and not isinstance(body, DocumentState)):
            found.extend(body_problems(config, body))
        found.raise_if_any()
        self._placement = config.placement = placement.Placement(config)
        self.config = config
        self.table, self.key, self.namespace, self.prefix = config.table, config.key, config.namespace, config.prefix
        self.payload = config.payload
        self.expires_after, self.result_storage = config.expires_after, config.result_storage
        self.facts = Facts(config.prefix)
        # Whether its states are made and rendered in Python (json_states): a whole workflow's, around a Parallel's branch.
        self.states_in_python = config.whole_workflow and renders_in_python(config, body)
        self.extend_states: list[str] = []  # the ids of the extend_lease() states, in order
        # Every key may need it: a JMESPath key always, any other for an input beyond the native bounds.
        self.key_function: KeyFunction = key_function(self)
        self.result_function: ResultFunction = result_function(self)
        self.results_bucket: s3.IBucket | None = None
        if config.result_storage.is_large:
            if config.result_storage.bucket is None:
                shared = results_bucket(self)
                shared.retain(config.namespace, config.lease.plus(config.expires_after))
                self.results_bucket = shared.bucket
            else:
                self.results_bucket = config.result_storage.bucket
        self.result_function.serve(config.table, config.namespace, self.results_bucket)
        self.rendered_by: str | None = None  # the workflow whose definition holds this guard, once rendered
        state_names.check_app(self, also=placement.problems, notes=history.notes)
        quota_plugin.check_app(self)
        adopt_within(self, body.start_state)  # what is bound already; the rest as its body is bound (finish.Wiring)
        self._build(body)
        advise(self, self._wiring)

    @staticmethod
    def record_id_path(state_name_prefix: str) -> str:
        """The path that reads, in the body of the guard whose state names start with ``state_name_prefix``
        (``"{construct_id}."`` unless set; ``IdempotentStateMachine.RECORD_ID_PATH`` for a whole workflow), the
        id of the record its run holds: ``"{% " + path + " %}"`` in a JSONata field, ``"key.$": path`` in a
        JSONPath one. Every run under one key, a retry or a run after a crashed one too, reads the same id:
        pass it to the downstream provider as its idempotency key (an HTTP Task's ``Idempotency-Key`` header, a
        Lambda payload field), so that its effect is once as well. Readable in the body, in its Parallel branches
        and inline Map iterations; not in a Distributed Map's child workflows."""
        return Facts(state_name_prefix)(ID)

    def state_name(self, state: str) -> str:
        """The name of one of this guard's states in the definition, such as ``state_name("Replay")``;
        ``state_name("Body")`` is the state that runs the body: the body's own state where it runs bare
        (a Task, Parallel or Map state alone), and its type of "entered" log event is ``body_entered``. Which
        it is is settled as the guard joins a graph; before, it is the one the body as it is now would give."""
        if state == "Body" and (first := self._wiring.first) is not None:
            return first.state_id
        return self.config.name(state)

    @property
    def body_entered(self) -> str:
        """The type of the "entered" log event of ``state_name("Body")``: the Parallel's, or that of the
        chain's own first state where it runs bare."""
        return self._wiring.entered

    @property
    def lease(self) -> Duration:
        """How long a holder is trusted to finish: ``lease``, or its default, fitted to an Express run at
        synth where the guard is in an Express state machine."""
        return self.config.lease

    def extend_lease(self, construct_id: str = "ExtendLease") -> ExtendLease:
        """A state that pushes this run's lease ``lease`` forward from now, for a body that may run
        longer than its lease: place it in the body (in a polling loop, say, also inside a Parallel
        branch or an inline Map of it), which may be wired after the guard is created but before it joins
        a graph (as the state machine that holds it is made, or as it is placed in a Map's item processor,
        which settles its body: ``state_name("Body")``). A run whose key was taken over fails there with
        ``Idempotency.LeaseLost``. Its input passes through. Each call makes a new state; give each its
        own ``construct_id`` (its state name, after the guard's prefix). See also ``ExtendLease``."""
        if self.rendered_by is not None:
            raise IdempotencyConfigurationError(
                self.node.path,
                [
                    f"extend_lease: the definition of {self.rendered_by} is already rendered, so a state wired in now "
                    "would not be in it; place ExtendLease(...) states in the definition before creating the workflow"
                ],
            )
        if self._wiring.settled:
            raise IdempotencyConfigurationError(
                self.node.path,
                [
                    "extend_lease: the guard has joined a graph already (its state machine, or the Map whose item "
                    "processor it is, was made with it), which settled its body as it was then; make its "
                    "extend_lease() states and wire them into the body before placing the guard"
                ],
            )
        state = ExtendLease(self, construct_id)
        state.adopt(self)
        return state

    def owns(self, token: object) -> bool:
        """Whether ``token``, met in a definition, is one of this guard's own numbers (``AtSynth``): where it
        is, the guard is."""
        return isinstance(token, AtSynth) and token.config is self.config

    @property
    def variable(self) -> str:
        """The name of the workflow variable this guard keeps its facts in."""
        return self.facts.name

    def _build(self, body: sfn.IChainable) -> None:
        on_failure, replay_failure = finish.failure(self)
        inspect = route.inspect(self)
        missing = acquire.key_missing(self)
        start, takes = acquire.acquire(self, inspect, missing)
        self._acquire = takes[-1]
        self._placement.task = self._acquire  # all of a guard's states join one graph
        takeover = acquire.takeover(self, inspect)
        complete, store = finish.complete(self, on_failure)
        self._wiring = finish.Wiring(self, body, on_failure, complete)
        for take in [*takes, takeover]:
            self._wiring.lead(take)
        complete.rendering = store.rendering = self._wiring.reads
        waiting, await_state = wait.wait_for_holder(self)
        choice, replay = route.route(self, acquire=self._acquire, takeover=takeover, wait=waiting, replay_failure=replay_failure)
        decide = replay or choice  # what a run does with the record it read
        if await_state is not None:
            await_state.next(decide)
        inspect.next(decide)
        self._start_state = start
        self._end_states: list[sfn.INextable] = [complete, store, *([replay] if replay else [])]

    @property
    def start_state(self) -> GuardState:
        """Its first state: the CDK's, or, for the guard of an ``IdempotentStateMachine`` that renders its states in
        Python (``renders_in_python``: that workflow's definition, wired nowhere else), its ``json_states`` twin."""
        return self._start_state

    @property
    def end_states(self) -> list[GuardState]:
        """Its end states (``Complete``, ``StoreResult``, ``Replay``): the CDK's, or their twins (``start_state``)."""
        return self._end_states

    def outcome_metrics(self, log_group: logs.ILogGroup) -> GuardOutcomes:
        """The ``metric_*`` of this guard's outcomes (executed, replayed, waited, taken over, mismatched,
        key missing, rejected, lease extended), as an ``IdempotentStateMachine`` has them, counted from
        ``log_group``: the execution log of the state machine that holds the guard, which must log at
        level ALL (``sfn.LogOptions(destination=log_group, level=sfn.LogLevel.ALL)``; execution data is
        never read). ``IdempotencyDashboard(workflows=[guard.outcome_metrics(log_group)])`` graphs them. The
        metric filter is added to this guard on the first metric asked for."""
        if getattr(self, "_outcome_log", log_group) is not log_group:
            raise IdempotencyConfigurationError(
                self.node.path, ["outcome_metrics: its metrics count one log group, the one first given; give that one"]
            )
        self._outcome_log = log_group
        return GuardOutcomes(self, self, log_group)

    def records_in_its_graph(self) -> list[tuple[dynamodb.ITable, str]]:
        """``(table, namespace)`` of the records an execution of the graph this guard is bound into
        can hold: this guard's, and those of every guard in the graph's branches and item processors
        (for a guard that is a state machine's definition: all of the state machine's)."""
        graph = self._acquire.graph  # all of a guard's states join one graph
        return records_of(graph) if graph is not None else [(self.table, self.namespace)]

    def kept_for_redrive_in_its_graph(self) -> list[str]:
        """The namespaces of the guards in the graph this guard is bound into (this one among them) that keep a
        failed execution's key for its redrive (``FailurePolicy.KEEP_FOR_REDRIVE``)."""
        graph = self._acquire.graph
        if graph is not None:
            return kept_for_redrive(graph)
        return [self.namespace] if self.config.keeps_for_redrive else []


def renders_in_python(config: GuardConfig, body: sfn.IChainable) -> bool:
    """Whether a whole workflow's guard of ``config`` around ``body`` makes and renders its states in Python
    (``json_states``): where ``body`` is a Parallel's branch (``finish.body``), not a document standing alone, nor a
    chain that runs bare."""
    if config.fails_the_execution:
        return False
    state = body.start_state if isinstance(body, sfn.StateMachineFragment) else body
    if isinstance(state, DocumentState) and state.stands_alone:
        return False
    return finish.bare(body) is None


def body_problems(config: GuardConfig, body: sfn.IChainable) -> list[str]:
    """What is wrong with ``body`` as the body of the guard of ``config``: a state of a document at its top
    level (``AslFragment``) named as a state the guard generates (Step Functions needs every state name of a
    state machine to differ), an end whose output is known not to be an object to carry the replay marker."""
    reserved = {config.name(state) for state in STATE_NAMES}
    found = [
        f"body: the state {name!r} of {state.document.source} has the name of a state this guard generates; "
        f"pass state_name_prefix=... (now {config.prefix!r}) or rename the state in the document"
        for state in sfn.State.find_reachable_states(body.start_state, include_error_handlers=True)
        if isinstance(state, DocumentState)
        for name in state.document.state_names()
        if name in reserved
    ]
    if config.fails_the_execution:
        found.extend(finish.bare_chain_problems(body, config.on_failure))
    if config.replay_marker is not None and (fixed := marker.known_non_objects(body)):
        found.append(f"replay_marker: the body ends in {', '.join(fixed)}, whose output is not an object to carry it")
    return found
