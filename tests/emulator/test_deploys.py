"""Deploys during traffic (contract B23): an execution in its body while the stack is updated to a new
library version (new function versions, a new definition) finishes with the functions its definition names,
and nothing it finished runs again."""

from __future__ import annotations

from aws_cdk import App, Size, Stack
from aws_cdk import aws_stepfunctions as sfn

from idempotent_constructs import IdempotencyKey, IdempotencyTable, IdempotentStateMachine, ResultStorage

STACK = "Deploys"
# Larger than the inline threshold: the holder's Complete stores it through the result function's version.
REPORT = {"report": "r" * 4000}


def release(revision: int) -> Stack:
    """The stack as a library release would deploy it: revision 2 changes the shared functions' configuration,
    as a new release of their code does, so that each gets a new version (another logical id) and the old
    version leaves the template."""
    stack = Stack(App(), STACK)
    table = IdempotencyTable(stack, "Idempotency")
    IdempotentStateMachine(
        stack,
        "Reports",
        table=table,
        definition=sfn.Pass(stack, "MakeReport", result=sfn.Result.from_object(REPORT)),
        key=IdempotencyKey.from_paths("$.id"),
        result_storage=ResultStorage.large(inline_threshold=Size.kibibytes(1)),
    )
    if revision == 2:
        for shared in ("IdempotencyResultFunction", "IdempotencyKeyFunction"):
            stack.node.find_child(shared).function.add_environment("LIBRARY_RELEASE", "2")
    return stack


def version_arns(template: dict) -> set[str]:
    """The function versions a template's definitions name (their logical ids, as the definition refers to them)."""
    return {logical_id for logical_id, resource in template["Resources"].items() if resource["Type"] == "AWS::Lambda::Version"}


def test_an_execution_in_its_body_across_a_deploy_that_replaces_the_functions_finishes_and_nothing_reruns(emulator, unique):
    deployment = emulator.deploy_stack(release(1))
    payload = {"id": unique}
    with emulator.hold("MakeReport") as body:
        holder = deployment.start("Reports", payload)
        body.arrived()
        updated = emulator.update_stack(release(2))
        replaced = version_arns(deployment.template) - version_arns(updated.template)
        assert len(replaced) == 2  # the key and result functions' versions this execution's definition names
    held = deployment.wait(holder)
    assert (held.status, held.output) == ("SUCCEEDED", REPORT), held.cause
    (store,) = [
        event["lambdaFunctionScheduledEventDetails"]["resource"]
        for event in held.history
        if event["type"] == "LambdaFunctionScheduled"
    ]
    assert store == deployment.resources[next(v for v in replaced if "Result" in v)]  # the old version, still there
    duplicate = updated.run("Reports", payload)
    assert (duplicate.status, duplicate.output) == ("SUCCEEDED", REPORT), duplicate.cause
    assert "MakeReport" not in duplicate.entered_states()  # replayed by the new definition, from the old one's record
