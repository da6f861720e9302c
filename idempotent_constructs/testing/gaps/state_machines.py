"""Gap: CloudFormation creates state machines in moto's plain Step Functions backend, which cannot
execute them (its executions never run a state).

AWS runs every state machine that CloudFormation creates. Here each one is created again, with the
same name, ARN, definition, role and type, in the backend of moto's Step Functions interpreter.

Evidence: tests/emulator/gaps/test_state_machines.py.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..runs import Deployment


def after_deploy(deployment: Deployment, *, account: str, region: str, update: bool = False) -> None:
    """Each state machine made again in the interpreter's backend; on a stack update, one it has already
    is updated there instead, so that executions started before go on with the definition they started
    with (the interpreter's executions run a copy of it), as UpdateStateMachine leaves them on AWS."""
    from moto.stepfunctions.models import stepfunctions_backends
    from moto.stepfunctions.parser.models import stepfunctions_parser_backends

    plain = stepfunctions_backends[account][region]
    interpreter = stepfunctions_parser_backends[account][region]
    for logical_id in deployment._logical_ids("AWS::StepFunctions::StateMachine"):
        arn = deployment.resources[logical_id]
        created = plain.describe_state_machine(arn)
        properties = deployment.template["Resources"][logical_id]["Properties"]
        if update and _exists(interpreter, arn):
            interpreter.update_state_machine(arn, definition=created.definition, role_arn=created.roleArn)
            continue
        with contextlib.suppress(Exception):
            interpreter.delete_state_machine(arn)
        interpreter.create_state_machine(
            name=created.name,
            definition=created.definition,
            roleArn=created.roleArn,
            sm_type=properties.get("StateMachineType", "STANDARD"),
        )


def _exists(backend: Any, arn: str) -> bool:
    try:
        backend.describe_state_machine(arn)
    except Exception:  # moto's StateMachineDoesNotExist
        return False
    return True
