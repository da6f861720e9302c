"""The app `wrap` builds and synthesizes: what a CDK user would write for an ASL file, an
``IdempotencyTable`` (or the table it adopts by name) and an ``IdempotentStateMachine`` of the file, each of
its placeholders a template parameter, with the stack's outputs; a failed quota check is reported as the
command's error. The CDK is imported only when it runs, so that the command line starts fast.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click


def synth(assembly_dir: Path, stack_name: str, file: Path, placeholders: dict[str, str], **chosen: Any) -> None:
    """Build and synthesize the app: the table (or the one adopted) and the workflow of ``file``, each of
    its placeholders given by the template parameter ``placeholders`` names."""
    from aws_cdk import App, Aws, CfnOutput, CfnParameter, DefaultStackSynthesizer, Stack
    from aws_cdk import aws_dynamodb as dynamodb
    from aws_cdk import aws_iam as iam
    from aws_cdk import aws_stepfunctions as sfn
    from constructs import Construct

    from .. import (
        CompletedPolicy,
        DefinitionLocation,
        FailurePolicy,
        GuardedState,
        IdempotencyKey,
        IdempotencyPayload,
        IdempotencyTable,
        IdempotentStateMachine,
        InFlightPolicy,
        ResultStorage,
    )

    app = App(outdir=str(assembly_dir), analytics_reporting=False)
    stack = Stack(app, stack_name, synthesizer=DefaultStackSynthesizer(generate_bootstrap_version_rule=False))
    placeholder_scope, output_scope = Construct(stack, "Placeholders"), Construct(stack, "Outputs")
    substitutions = {}
    for placeholder, parameter_name in placeholders.items():
        parameter = CfnParameter(
            placeholder_scope,
            parameter_name,
            type="String",
            description=f"the value of the placeholder {placeholder} in {file.name}",
        )
        parameter.override_logical_id(parameter_name)
        substitutions[placeholder] = parameter.value_as_string
    adopted = chosen["table_name"]
    table = IdempotencyTable(
        stack, "Idempotency", table=dynamodb.Table.from_table_name(stack, "Adopted", adopted) if adopted else None
    )
    in_flight, failure, completed = chosen["policies"]
    role = None
    if chosen["role_arn"]:
        role = iam.Role.from_role_arn(stack, "Role", chosen["role_arn"])
    workflow = IdempotentStateMachine(
        stack,
        "Workflow",
        table=table,
        definition_body=sfn.DefinitionBody.from_file(str(file)),
        definition_substitutions=substitutions or None,
        definition_location=DefinitionLocation.ASSET,
        key=IdempotencyKey(*chosen["key"]),
        payload=IdempotencyPayload(*chosen["payload"]),
        guard_states={
            state: GuardedState(key=IdempotencyKey.from_paths(*state_paths))
            for state, state_paths in chosen["guard_states"].items()
        }
        or None,
        state_machine_type=sfn.StateMachineType[chosen["machine_type"].upper()],
        state_machine_name=chosen["machine_name"],
        on_in_flight=InFlightPolicy[in_flight.upper()] if in_flight else None,
        on_failure=FailurePolicy[failure.upper()] if failure else None,
        on_completed=CompletedPolicy[completed.upper()] if completed else None,
        result_storage=ResultStorage.large() if chosen["large_results"] else None,
        role=role,
        **chosen["options"],
    )
    for number, arn in enumerate(dict.fromkeys(chosen["managed_policies"])):
        policy = iam.ManagedPolicy.from_managed_policy_arn(stack, f"ManagedPolicy{number}", arn)
        workflow.state_machine.role.add_managed_policy(policy)
    exported = {
        "StateMachineArn": (workflow.state_machine.state_machine_arn, "the wrapped state machine's ARN"),
        "StateMachineName": (workflow.state_machine.state_machine_name, "its name"),
        "TableName": (table.table.table_name, "the idempotency table's name"),
    }
    for output, (value, description) in exported.items():
        exported_as = f"{Aws.STACK_NAME}-{output}"
        CfnOutput(output_scope, output, value=value, description=description, export_name=exported_as).override_logical_id(output)
    try:
        app.synth()
    except RuntimeError as error:  # the quota checks (a CDK validation plugin) failed the synth
        report = assembly_dir / "validation-report.json"
        if "Validation failed" not in str(error) or not report.exists():
            raise
        raise click.ClickException(f"the synth failed its checks: {_violations(report)}") from None


def _violations(report: Path) -> str:
    text = report.read_text()
    try:
        plugins = json.loads(text)["pluginReports"]
    except (ValueError, KeyError):
        return " ".join(text.split())
    return "; ".join(
        f"{violation['severity']}: {violation['description']}" for plugin in plugins for violation in plugin["violations"]
    )
