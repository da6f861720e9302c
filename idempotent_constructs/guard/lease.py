"""``ExtendLease``: a state the user places in a long body that pushes the holder's lease forward.

A holder is trusted for ``lease``; past it, a duplicate may take the key over (without the owner
check, at once). A body that may run longer keeps its lease by passing through an extend state now
and then (in a polling loop, say): one fenced DynamoDB update, no Lambda call. A holder whose key was
taken over meanwhile fails there with ``Idempotency.LeaseLost`` instead of working on.

The state belongs to the guard around it, which *adopts* it: an ``IdempotencyGuard`` (or the guard of
an ``IdempotentStateMachine``) adopts every ``ExtendLease`` it can reach at the top level of its body
when it is created, and ``IdempotencyGuard.extend_lease()`` makes one already adopted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import jsii
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct, IValidation

from ..errors import IdempotencyConfigurationError
from ..lambda_src import schema
from . import records
from .config import MAX_STATE_NAME_LENGTH
from .protocol import CONDITION_FAILED, TRANSIENT_DYNAMODB_ERRORS
from .tasks import fail, item_fields, item_statements, retry_transient

if TYPE_CHECKING:
    from . import IdempotencyGuard

LOST = ".LeaseLost"  # the name of an extend state's Fail state: the extend state's, then this
ACTION = "updateItem"


class ExtendLease(sfn.CustomState):
    """A state that pushes the lease of the run holding the idempotency key forward by the guard's
    ``lease``, from now; its input passes through. A run whose key was taken over meanwhile fails
    there with ``Idempotency.LeaseLost``.

    Place it at the top level of an ``IdempotencyGuard``'s body or of an ``IdempotentStateMachine``'s
    definition (in a polling loop, say) before creating the guard or the workflow, which adopt it.
    Its state name is the guard's prefix and ``construct_id``. (For a state wired in after the guard
    exists, or inside a Map or Parallel of its body, use ``IdempotencyGuard.extend_lease()``.)
    """

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id, state_json={"Type": "Task"})
        self.guard: IdempotencyGuard | None = None
        self._fields: dict[str, Any] = {}
        self.node.add_validation(_Adopted(self))

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
        self._fields = item_fields(ACTION, records.extend_lease(config, guard.facts))
        retry_transient(self, TRANSIENT_DYNAMODB_ERRORS)
        lost = fail(
            guard,
            config,
            construct_id + LOST,
            error=schema.LEASE_LOST,
            cause="Another execution took this idempotency key over after this run's lease lapsed; stop working on it.",
        )
        self.add_catch(lost, errors=[CONDITION_FAILED])
        guard.extend_states.append(construct_id)

    def bind_to_graph(self, graph: sfn.StateGraph) -> None:
        super().bind_to_graph(graph)
        if self.guard is not None:
            for statement in item_statements(self.guard.config, ACTION):
                graph.register_policy_statement(statement)

    def to_state_json(self, query_language: sfn.QueryLanguage | None = None) -> Any:
        # Not adopted: rendered as it is, and the app's synth fails on the validation below.
        return {**super().to_state_json(query_language), **self._fields}


@jsii.implements(IValidation)
class _Adopted:
    def __init__(self, state: ExtendLease) -> None:
        self.state = state

    def validate(self) -> list[str]:
        if self.state.guard is not None:
            return []
        return [
            "ExtendLease: no guard adopted this state; place it at the top level of an IdempotencyGuard's body or an "
            "IdempotentStateMachine's definition before creating them, or use IdempotencyGuard.extend_lease() for a "
            "state wired in later or inside a Map or Parallel"
        ]


def adopt_reachable(guard: IdempotencyGuard, body: sfn.IChainable) -> None:
    """Adopt the ``ExtendLease`` states reachable at the top level of ``body`` (error handlers too)."""
    for state in sfn.State.find_reachable_states(body.start_state, include_error_handlers=True):
        if isinstance(state, ExtendLease):
            state.adopt(guard)
