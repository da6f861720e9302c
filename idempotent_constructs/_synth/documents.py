"""A document as a state: the Parallel state that runs an Amazon States Language document as its only
branch (``DocumentState``), the form ``AslFragment`` and ``IdempotentStateMachine`` give a document, and
which a guard recognises to hold the document itself as its ``Body``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jsii
from aws_cdk import aws_iam as iam
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct, IValidation

from .._readers import asl
from . import quota_plugin, renders, state_names

# The fields a Parallel state's own output is unwrapped with, per query language: its result is the
# one-item list of the branch's output.
_UNWRAP = {asl.JSONPATH: {"OutputPath": "$[0]"}, asl.JSONATA: {"QueryLanguage": asl.JSONATA, "Output": "{% $states.result[0] %}"}}


class DocumentState(sfn.CustomState):
    """The Parallel state that runs a document; ``document`` is what it runs. ``statements`` are the
    policy statements of the states of the guards spliced into it (``guard_states``), which join the
    graph it is bound into, as its own would."""

    def __init__(
        self,
        scope: Construct,
        state_name: str,
        *,
        document: asl.Document,
        statements: Sequence[iam.PolicyStatement] = (),
    ) -> None:
        state: dict[str, Any] = {"Type": "Parallel", "Branches": [document.branch()], **_UNWRAP[document.language]}
        if document.comment is not None:
            state["Comment"] = document.comment
        super().__init__(scope, state_name, state_json=state)
        self.document = document
        self.statements = list(statements)
        self.in_a_graph = False  # whether a state machine renders it (not when a guard's Body holds the document)
        self.graph: sfn.StateGraph | None = None  # the graph it joined, and when it was rendered (guard.placement)
        self.rendered_at: int | None = None
        self.node.add_validation(_NameOfItsOwn(self, state_name))
        state_names.check_app(self)
        quota_plugin.check_app(self)

    def bind_to_graph(self, graph: sfn.StateGraph) -> None:
        super().bind_to_graph(graph)
        self.in_a_graph, self.graph = True, graph
        for statement in self.statements:
            graph.register_policy_statement(statement)

    def _render_next_end(self) -> Any:
        # Noted as it is rendered (not by its whole state, which holds JsonNulls the Python side would drop).
        self.rendered_at = renders.tick()
        return super()._render_next_end()

    def as_branch_of(self, scope: Construct, state_name: str) -> sfn.CustomState:
        """A Parallel named ``state_name`` (a guard's ``Body``) whose only branch is the document itself."""
        return _DocumentBody(scope, state_name, document=self.document, statements=self.statements)

    @property
    def stands_alone(self) -> bool:
        """Whether nothing is wired to it: no next state, no Retry or Catch of its own."""
        return not {"Next", "Retry", "Catch"} & set(self.to_state_json())


class _DocumentBody(sfn.CustomState):
    """A guard's ``Body`` whose branch is a document (``DocumentState.as_branch_of``)."""

    def __init__(
        self, scope: Construct, state_name: str, *, document: asl.Document, statements: Sequence[iam.PolicyStatement]
    ) -> None:
        super().__init__(scope, state_name, state_json={"Type": "Parallel", "Branches": [document.branch()]})
        self.statements = list(statements)

    def bind_to_graph(self, graph: sfn.StateGraph) -> None:
        super().bind_to_graph(graph)
        for statement in self.statements:
            graph.register_policy_statement(statement)


@jsii.implements(IValidation)
class _NameOfItsOwn:
    """A document's Parallel state, where a state machine renders it, named as none of its states is
    (a guard's Body that holds the document itself has no such state, so there the names may agree)."""

    def __init__(self, state: DocumentState, name: str) -> None:
        self.state, self.name = state, name

    def validate(self) -> list[str]:
        if not self.state.in_a_graph or self.name not in self.state.document.state_names():
            return []
        return [
            f"definition_body: the state {self.name!r} of {self.state.document.source} has the name of the Parallel "
            "state that runs the document; pass state_name=... to name that otherwise"
        ]
