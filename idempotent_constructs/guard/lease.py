"""``ExtendLease``: a state the user places in a long body that pushes the holder's lease forward.

A holder is trusted for ``lease``; past it, a duplicate may take the key over (without the owner
check, at once). A body that may run longer keeps its lease by passing through an extend state now
and then (in a polling loop, say): one fenced DynamoDB update, no Lambda call. A holder whose key was
taken over meanwhile fails there with ``Idempotency.LeaseLost`` instead of working on.

The state belongs to the innermost guard around it, which *adopts* it: an ``IdempotencyGuard`` (or the
guard of an ``IdempotentStateMachine``) adopts every ``ExtendLease`` of its body, wherever it runs there:
at the top level, in loops and catch handlers, in Parallel branches and inline Map item processors
(whose states read the variables of the scopes around them, the guard's among them).
``IdempotencyGuard.extend_lease()`` makes one already adopted.

Two places are refused when the app is synthesized, each with the reason and the fix: a Distributed
Map's item processor (its child workflows cannot read the variables of the workflow around them, so the
guard's owner token is out of reach there), and anywhere outside the guard's body. So is a state that
never reaches a rendered definition (wired in after its state machine was created), whatever hosts it.

When the guard adopts: CDK binds a Parallel's branches only when the Parallel itself joins a graph, so
the states of Parallel branches are adopted as the guard's body joins one (``adopting``, while the first
write that goes to the body is bound: ``finish.Wiring``), and those bound earlier (a Map's item
processor, bound when it is set) by walking the bound body (``adopt_within``, ``adopt_inside``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, cast

import jsii
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct, IValidation

from .._synth.state_names import LOST
from ..errors import IdempotencyConfigurationError
from ..lambda_src import schema
from . import record_tasks
from .config import MAX_STATE_NAME_LENGTH
from .protocol import CONDITION_FAILED, TRANSIENT_DYNAMODB_ERRORS
from .tasks import fail, item_fields, item_statements, retry_transient

if TYPE_CHECKING:
    from . import IdempotencyGuard

ACTION = "updateItem"

# The guards whose body is being bound, innermost last: a state bound meanwhile belongs to the innermost
# whose body holds it (``_holding``).
_binding: list[IdempotencyGuard] = []


class ExtendLease(sfn.CustomState):
    """A state that pushes the lease of the run holding the idempotency key forward by the guard's
    ``lease``, from now; its input passes through. A run whose key was taken over meanwhile fails
    there with ``Idempotency.LeaseLost``.

    Place it anywhere in an ``IdempotencyGuard``'s body or an ``IdempotentStateMachine``'s definition
    (in a polling loop, say, also inside a Parallel branch or an inline Map's item processor); the
    innermost guard around it adopts it. Its state name is the guard's prefix and ``construct_id``.
    Inside a Distributed Map's item processor it is refused at synth (see the module's docstring).
    """

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id, state_json={"Type": "Task"})
        self.guard: IdempotencyGuard | None = None
        self.rendered = False  # whether a definition holds it: set when CDK renders it
        self.in_body = False  # whether its guard found it in its body
        self.distributed_map: str | None = None  # the Distributed Map whose item processor holds it, if any
        self._fields: dict[str, Any] = {}
        self._graph: sfn.StateGraph | None = None
        self._joining = False  # whether it has begun to join a graph
        self._granted = False
        self.node.add_validation(_Placed(self))

    def adopt(self, guard: IdempotencyGuard) -> None:
        """Become ``guard``'s: its item, its owner token, its prefix. Once only: a guard nested in
        another adopts the states of its own body first."""
        if self.guard is not None:
            return
        config, construct_id = guard.config, self.node.id
        longest = config.name(construct_id + LOST)
        if len(longest) > MAX_STATE_NAME_LENGTH:
            raise IdempotencyConfigurationError(
                guard.node.path,
                [
                    f"ExtendLease: the state name {longest!r} is longer than Step Functions' {MAX_STATE_NAME_LENGTH}; "
                    "use a shorter id"
                ],
            )
        self.guard = guard
        self.add_prefix(config.prefix)
        self._fields = item_fields(ACTION, record_tasks.extend_lease(config, guard.facts))
        retry_transient(self, TRANSIENT_DYNAMODB_ERRORS)
        lost = fail(
            guard,
            config,
            construct_id + LOST,
            error=schema.LEASE_LOST,
            cause="Another execution took this idempotency key over after this run's lease lapsed; stop working on it",
            record=guard.facts,
            in_cdk=True,
        )
        self.add_catch(lost, errors=[CONDITION_FAILED])  # joins the graph too, if this state is in one already
        guard.extend_states.append(construct_id)
        self._grant()

    def bind_to_graph(self, graph: sfn.StateGraph) -> None:
        # Before joining the graph, which registers it by its (prefixed) name; CDK calls this again for a state
        # already bound, as an incoming state of one binding now: it stays whose it was.
        if self.guard is None and not self._joining and (owner := _holding(self)) is not None:
            self.adopt(owner)
        self._joining = True
        super().bind_to_graph(graph)
        self._graph = graph
        self._grant()

    def _grant(self) -> None:
        """The permissions of its request, to the state machine whose graph it joined, once it has both."""
        if self.guard is None or self._graph is None or self._granted:
            return
        for statement in item_statements(self.guard.config, ACTION):
            self._graph.register_policy_statement(statement)
        self._granted = True

    def to_state_json(self, query_language: sfn.QueryLanguage | None = None) -> Any:
        self.rendered = True
        # Not adopted: rendered as it is, and the app's synth fails on the validation below.
        return {**super().to_state_json(query_language), **self._fields}


@jsii.implements(IValidation)
class _Placed:
    """Fails synth for a state that cannot work where it is, saying why and what to do instead."""

    def __init__(self, state: ExtendLease) -> None:
        self.state = state

    def validate(self) -> list[str]:
        state, guard = self.state, self.state.guard
        if state.distributed_map is not None:
            owner = f"the guard {guard.node.path}" if guard is not None else "the guard around it"
            return [
                f"ExtendLease: it is in the item processor of the Distributed Map {state.distributed_map!r}, whose child "
                f"workflows cannot read the variables of the workflow around them, so the lease of {owner} is out of "
                "its reach; run the work that extends the lease in an inline Map (sfn.Map), give each item a guard "
                "of its own inside the Distributed Map, or give the guard a lease longer than the Map runs"
            ]
        if guard is None:
            return [
                "ExtendLease: no guard adopted this state; place it in the body of an IdempotencyGuard or the "
                "definition of an IdempotentStateMachine (an ExtendLease outside any guard has no lease to extend)"
            ]
        if not state.rendered:
            return [
                f"ExtendLease: no state machine's definition holds this state of {guard.node.path}: it was never wired "
                "in, or wired in after its state machine was created (which renders the definition as it is then); "
                "wire it into the guard's body before creating the state machine"
            ]
        if not state.in_body:
            return [
                f"ExtendLease: it is outside the body of its guard {guard.node.path}, where that guard's lease is not "
                "held; place it in the guard's body"
            ]
        return []


def _holding(state: sfn.State) -> IdempotencyGuard | None:
    """The innermost guard whose body is being bound that ``state`` does not follow: a state bound as one of
    the states after a guard (through its ``Complete``, say) is not in that guard's body, but may be in the
    body of a guard around it."""
    for guard in reversed(_binding):
        if guard.states_in_python:  # what follows its ends is its own states, none of the CDK's
            return guard
        ends = [cast(sfn.State, end) for end in guard.end_states]
        after = {found.node.path for end in ends for found in sfn.State.find_reachable_states(end, include_error_handlers=True)}
        if state.node.path not in after:
            return guard
    return None


@contextmanager
def adopting(guard: IdempotencyGuard) -> Iterator[None]:
    """While ``guard``'s body is bound: the ``ExtendLease`` states bound meanwhile (its Parallel
    branches, which CDK binds only now) are its, unless a guard bound inside it claims them first."""
    _binding.append(guard)
    try:
        yield
    finally:
        _binding.pop()


def adopt_within(guard: IdempotencyGuard, start: sfn.State) -> None:
    """Adopt the ``ExtendLease`` states of the chain that starts at ``start``, in every branch and item
    processor bound so far; mark each of ``guard``'s found there, and each of those that sits in a
    Distributed Map's item processor, which it cannot work from."""
    _adopt(guard, _states_within(start, None))


def adopt_inside(guard: IdempotencyGuard, state: sfn.State) -> None:
    """Adopt, as ``adopt_within``, the ``ExtendLease`` states of the branches and item processor of ``state``
    (a Parallel, a Map) bound so far, and not those of the states after it."""
    _adopt(guard, _inside(state, None))


def _adopt(guard: IdempotencyGuard, found: Iterator[tuple[sfn.State, str | None]]) -> None:
    for state, distributed_map in found:
        if not isinstance(state, ExtendLease):
            continue
        if state.guard is None and distributed_map is None:
            state.adopt(guard)
        if state.guard is guard or state.guard is None:
            state.in_body = True
            state.distributed_map = state.distributed_map or distributed_map


# The CDK's states that hold no branch nor item processor.
_WITHOUT_BRANCHES = (sfn.Pass, sfn.Choice, sfn.Wait, sfn.Succeed, sfn.Fail, sfn.TaskStateBase)


def _states_within(start: sfn.State, distributed_map: str | None) -> Iterator[tuple[sfn.State, str | None]]:
    """Every state reachable from ``start`` (error handlers too), and those of the branches and item
    processors bound into them, each with the Distributed Map whose item processor holds it."""
    for state in sfn.State.find_reachable_states(start, include_error_handlers=True):
        yield state, distributed_map
        yield from _inside(state, distributed_map)


def _inside(state: sfn.State, distributed_map: str | None) -> Iterator[tuple[sfn.State, str | None]]:
    """The states of the branches and item processor bound into ``state``, as ``_states_within``."""
    if isinstance(state, _WITHOUT_BRANCHES):
        return  # each read below is a call into jsii
    # CDK's protected fields: the graphs of a state's Parallel branches and Map item processor.
    for branch in state._branches:
        yield from _states_within(branch.start_state, distributed_map)
    processor = state._processor or state._iteration
    if processor is not None:
        distributed = state._processor_mode == sfn.ProcessorMode.DISTRIBUTED
        yield from _states_within(processor.start_state, state.state_id if distributed else distributed_map)
