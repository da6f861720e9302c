"""A whole workflow's guard whose states Python makes and renders (guard.json_states) writes, byte for byte, the
template the CDK's states write: its definition, its role's statements in their order, everything else."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from aws_cdk import App, Duration, JsonNull, Stack
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

from idempotent_constructs import (
    AslFragment,
    CompletedPolicy,
    DefinitionLocation,
    ExtendLease,
    FailurePolicy,
    IdempotencyGuard,
    IdempotencyKey,
    IdempotencyPayload,
    IdempotencyTable,
    IdempotentStateMachine,
    InFlightPolicy,
    ResultStorage,
)
from idempotent_constructs import guard as guard_module
from tests.synth import only_definition, template


def _two_steps(scope: Construct) -> sfn.IChainable:
    return sfn.Pass(scope, "Validate").next(sfn.Pass(scope, "Ship"))


def _with_a_function_a_nested_guard_and_an_extend_state(scope: Construct) -> sfn.IChainable:
    # States of the body that register statements of their own (a Lambda task, a nested guard's writes, an
    # ExtendLease), between the guard's: their order in the role's policy is the traversal's.
    function = lambda_.Function(
        scope,
        "Work",
        runtime=lambda_.Runtime.PYTHON_3_13,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(e, c): return e"),
    )
    nested = IdempotencyGuard(
        scope,
        "Step",
        table=IdempotencyTable(scope, "StepTable"),
        body=tasks.LambdaInvoke(scope, "Charge", lambda_function=function),
        key=IdempotencyKey.from_paths("$.order"),
    )
    return sfn.Pass(scope, "Start").next(ExtendLease(scope, "KeepAlive")).next(nested)


def _with_json_nulls(scope: Construct) -> sfn.IChainable:
    # A document's null (its result discarded) and a JSON null of the CDK's: the body's JSON, kept as the CDK writes it.
    document = {"StartAt": "Audit", "States": {"Audit": {"Type": "Pass", "Result": {"x": 1}, "ResultPath": None, "End": True}}}
    return AslFragment(scope, "AuditStep", definition_body=document).next(
        sfn.Pass(scope, "Ship", parameters={"kept": JsonNull.INSTANCE})
    )


def _in_a_distributed_map(scope: Construct) -> sfn.IChainable:
    return (
        sfn.DistributedMap(scope, "Each", items_path="$.items")
        .item_processor(sfn.Pass(scope, "One"))
        .next(sfn.Pass(scope, "After"))
    )


CASES: dict[str, tuple[Callable[[Construct], sfn.IChainable], dict[str, Any]]] = {
    "the defaults": (_two_steps, {}),
    "a JMESPath key, a payload of paths, CACHE with listed errors": (
        _two_steps,
        {
            "key": IdempotencyKey.from_jmespath("order.id"),
            "payload": IdempotencyPayload.from_paths("$.order"),
            "on_failure": FailurePolicy.CACHE,
            "cache_errors": ["Orders.Refused"],
        },
    ),
    "a JSONata key and payload, no payload check elsewhere, failing fast": (
        _two_steps,
        {
            "key": IdempotencyKey.from_jsonata("$states.input.id"),
            "payload": IdempotencyPayload.none(),
            "on_in_flight": InFlightPolicy.FAIL,
            "on_completed": CompletedPolicy.REJECT,
        },
    ),
    "a replay marker, large results, an Express JSONata workflow": (
        _two_steps,
        {
            "key": IdempotencyKey.whole_input(),
            "replay_marker": "$.replayed",
            "result_storage": ResultStorage.large(),
            "state_machine_type": sfn.StateMachineType.EXPRESS,
            "query_language": sfn.QueryLanguage.JSONATA,
        },
    ),
    "CACHE, a timeout, the definition inline": (
        _two_steps,
        {"on_failure": FailurePolicy.CACHE, "timeout": Duration.hours(1), "definition_location": DefinitionLocation.INLINE},
    ),
    "a body with statements of its own, its definition in an asset": (
        _with_a_function_a_nested_guard_and_an_extend_state,
        {"definition_location": DefinitionLocation.ASSET, "max_wait": Duration.minutes(3), "poll_interval": Duration.seconds(3)},
    ),
    "a Distributed Map in the body": (_in_a_distributed_map, {"state_machine_name": "each-item"}),
    "a document and a JSON null in the body": (_with_json_nulls, {}),
}


def _synthesized(python: bool, monkeypatch: pytest.MonkeyPatch) -> str:
    with monkeypatch.context() as patched:
        if not python:
            patched.setattr(guard_module, "renders_in_python", lambda config, body: False)
        app = App()
        stack = Stack(app, "Workflows")
        table = IdempotencyTable(stack, "Idempotency", encryption_key=kms.Key(stack, "Key", enable_key_rotation=True))
        made = []
        for index, (body, options) in enumerate(CASES.values()):
            # A definition in an asset in a stack of its own, so that the others' are shared texts of one stack.
            owner = Stack(app, f"Case{index}") if options.get("definition_location") is DefinitionLocation.ASSET else stack
            scope = Construct(owner, f"Case{index}")
            records = table if owner is stack else IdempotencyTable(owner, "Idempotency")
            made.append(IdempotentStateMachine(scope, "Workflow", table=records, definition=body(scope), **options))
        assert all(workflow.guard.states_in_python is python for workflow in made)
        assembly = app.synth()
        return json.dumps(
            [
                assembly.get_stack_by_name(name).template
                for name in sorted(s.stack_name for s in app.node.children if isinstance(s, Stack))
            ]
        )


def test_a_whole_workflows_guard_rendered_in_python_writes_the_templates_the_cdks_states_write(monkeypatch):
    assert _synthesized(True, monkeypatch) == _synthesized(False, monkeypatch)


def test_a_body_that_runs_bare_a_document_alone_or_a_chain_left_to_fail_the_execution_keeps_the_cdks_states():
    def build(scope: Stack) -> None:
        table = IdempotencyTable(scope, "Table")
        document = {"StartAt": "Work", "States": {"Work": {"Type": "Pass", "End": True}}}
        workflows = {
            "two states": IdempotentStateMachine(scope, "Chain", table=table, definition=_two_steps(scope)),
            "one Parallel": IdempotentStateMachine(
                scope, "OneParallel", table=table, definition=sfn.Parallel(scope, "Fan").branch(sfn.Pass(scope, "Left"))
            ),
            "a document alone": IdempotentStateMachine(scope, "Document", table=table, definition_body=document),
            "KEEP_FOR_REDRIVE": IdempotentStateMachine(
                scope,
                "Kept",
                table=table,
                definition=sfn.Pass(scope, "A").next(sfn.Pass(scope, "B")),
                on_failure=FailurePolicy.KEEP_FOR_REDRIVE,
            ),
        }
        assert {name: workflow.guard.states_in_python for name, workflow in workflows.items()} == {
            "two states": True,
            "one Parallel": False,  # runs bare: the Parallel itself is the body
            "a document alone": False,  # the document is the body's branch itself
            "KEEP_FOR_REDRIVE": False,  # the chain runs bare
        }

    template(build)


def test_a_workflows_guard_rendered_in_python_still_answers_for_its_states():
    def build(scope: Stack) -> None:
        workflow = IdempotentStateMachine(scope, "Orders", table=IdempotencyTable(scope, "Table"), definition=_two_steps(scope))
        assert workflow.guard.states_in_python
        assert workflow.guard.state_name("Body") == "Idempotency.Body"
        assert workflow.guard.body_entered == "ParallelStateEntered"
        assert [namespace for _, namespace in workflow.guard.records_in_its_graph()] == ["Test/Orders"]

    definition = only_definition(template(build))
    assert definition["StartAt"] == "Idempotency.Acquire"
    assert definition["States"]["Idempotency.Body"]["Next"] == "Idempotency.Complete"
