"""``AslFragment``: an existing Amazon States Language workflow as one step of a chain.

    saga = AslFragment(self, "Saga",
        definition_body=sfn.DefinitionBody.from_file("statemachine/saga.asl.json"),
        definition_substitutions={"ReserveFlightFunction": reserve_flight.function_arn})
    IdempotencyGuard(self, "BookOnce", table=table, body=saga, key=IdempotencyKey.from_paths("$.trip_id"))

The document runs as the only branch of a Parallel state (named by ``state_name``), whose output is
the document's own: a ``Succeed`` inside it ends the step with its input, a ``Fail`` fails the step
with its error. As the ``body`` of an ``IdempotencyGuard`` on its own (nothing chained after it, no
Retry or Catch of its own), the guard's ``Body`` holds the document directly, with no Parallel of its own.

``guard_states={"ChargePayment": IdempotencyKey.from_paths("$.order_id")}`` (with ``table=``) runs the
named states each inside a guard of their own, the file unchanged (``guard_states``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from . import guard_states as guard_states_module
from . import guarded_state
from ._readers import asl
from ._synth import option_kinds, options
from ._synth.documents import DocumentState
from .table import WORKFLOW_TABLE, IdempotencyTable

if TYPE_CHECKING:
    from .guard import IdempotencyGuard
    from .key import IdempotencyKey

FRAGMENT = "AslFragment"
# Every option of an AslFragment: what it takes, what it does, its default (options.Option).
FRAGMENT_MODEL = options.Options(
    options.Option(
        "definition_body",
        option_kinds.DEFINITION_BODY,
        "the workflow: ``sfn.DefinitionBody.from_file(path)`` (JSON, or YAML for a ``.yaml`` file), "
        "``sfn.DefinitionBody.from_string(text)``, or the document as a dict.",
        None,
        (FRAGMENT,),
    ),
    options.Option(
        "definition_substitutions",
        option_kinds.SUBSTITUTIONS,
        "values of the document's ``${Name}`` placeholders, as ``sfn.StateMachine`` takes them (tokens such as a "
        "function's ARN too).",
        "none; a placeholder without a value fails synth with its name.",
        (FRAGMENT,),
    ),
    options.Option(
        "state_name",
        option_kinds.TEXT,
        "the name of the Parallel state that runs the document.",
        "the construct id.",
        (FRAGMENT,),
    ),
    options.Option(
        "table", WORKFLOW_TABLE, "where the records of ``guard_states`` live.", "none; needed with ``guard_states``.", (FRAGMENT,)
    ),
    options.Option(
        "guard_states",
        guarded_state.GUARD_STATES,
        "states of the document to run each inside an ``IdempotencyGuard`` of its own, by name: "
        '``{"ChargePayment": IdempotencyKey.from_paths("$.order_id")}``, or a ``GuardedState`` for the guard\'s '
        "other options. A Task, Parallel or Map state, at the top level, in a Parallel branch or a Map item "
        "processor; its Retry, Catch, Next and End work as the file says. Each guard's records are under "
        "``{this construct's path}/{state name}`` unless it names its namespace.",
        "none.",
        (FRAGMENT,),
    ),
)
# What each option takes.
FRAGMENT_OPTIONS: dict[str, option_kinds.Kind] = FRAGMENT_MODEL.kinds(FRAGMENT)


class AslFragment(sfn.StateMachineFragment):
    """An existing workflow, written in Amazon States Language (a file, a text or a dict), as a step
    usable wherever a chain is: as the ``body`` of an ``IdempotencyGuard``, in a Map or Parallel, or
    between other states. The document stays as it is (read at synth time, never changed): each state
    keeps its fields, its query language, its Retry and Catch.
    """

    @FRAGMENT_MODEL.documented(FRAGMENT)
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        definition_body: sfn.DefinitionBody | Mapping[str, Any],
        definition_substitutions: Mapping[str, str] | None = None,
        state_name: str | None = None,
        table: IdempotencyTable | dynamodb.ITable | None = None,
        guard_states: Mapping[str, IdempotencyKey | guarded_state.GuardedState] | None = None,
    ) -> None:
        """
        :options: each option's documentation is written here from asl_fragment.FRAGMENT_MODEL
        """
        super().__init__(scope, construct_id)
        # One pass: the type of every parameter (by name), then the values of those of the right type.
        found = options.Validation(self, FRAGMENT_MODEL, FRAGMENT, locals())
        document: asl.Document | None = None
        if found.typed("definition_body", "definition_substitutions"):
            document, unreadable = asl.read(definition_body, definition_substitutions)
            found.extend(unreadable)
        name = state_name if state_name is not None else construct_id
        if document is not None:
            found.extend(asl.problems(document))
        if guard_states and table is None and found.typed("guard_states"):
            found.add("table: guard_states keeps its records in a table; pass table=IdempotencyTable(...) or an existing one")
        if document is not None and guard_states and found.typed("guard_states", "table") and table is not None:
            found.extend(guarded_state.problems(document, guard_states, table=table, namespace=self.node.path))
        found.raise_if_any()
        assert document is not None
        statements: list[iam.PolicyStatement] = []
        # The guards of guard_states, by state name.
        self.guards: dict[str, IdempotencyGuard] = {}
        if guard_states:
            assert table is not None
            guarded = guard_states_module.guard_document(
                self, document, guard_states, table=table, namespace=self.node.path, placed=True
            )
            document, statements, self.guards = guarded.document, guarded.statements, guarded.guards
        self.document = document
        self.state = DocumentState(self, name, document=document, statements=statements)
        if guard_states:
            guarded.seen_from(self.state)  # in an inline Map of yours, a guard there draws a token of its own

    @property
    def start_state(self) -> sfn.State:
        return self.state

    @property
    def end_states(self) -> list[sfn.INextable]:
        return [self.state]
