"""The owner check: whether the execution that holds a key still runs (DescribeExecution, Standard only), asked
before a run takes over a key whose lease lapsed (``route``) and while a duplicate waits past it (``wait``).
"""

from __future__ import annotations

import weakref
from typing import Any

from aws_cdk import aws_iam as iam
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

from .._synth.functions import executions_arn
from ..lambda_src import schema
from . import json_states
from .config import GuardConfig
from .protocol import TRANSIENT_SFN_ERRORS, expression
from .tasks import GuardState, in_python, retry_transient


def owner_check(
    scope: Construct, config: GuardConfig, state: str, *, owner: str, output: str, assign: dict[str, Any] | None = None
) -> GuardState:
    """Asks Step Functions whether the execution of the holder whose token ``owner`` (JSONata) reads
    still runs (Standard only)."""
    assert config.owner_state_machine_name is not None
    if in_python(scope):
        made = json_states.CallAwsService(
            scope,
            state,
            state_name=config.name(state),
            service="sfn",
            action="describeExecution",
            parameters=_describe_execution(owner),
            statement=_describe_statement(config),
            outputs=output,
            assign=assign,
        )
        retry_transient(made, TRANSIENT_SFN_ERRORS)
        return made
    task = tasks.CallAwsService.jsonata(
        scope,
        state,
        state_name=config.name(state),
        service="sfn",
        action="describeExecution",
        iam_action="states:DescribeExecution",
        iam_resources=[executions_arn(config.owner_state_machine_name)],
        parameters=_describe_execution(owner),
        outputs=output,
        assign=assign,
    )
    retry_transient(task, TRANSIENT_SFN_ERRORS)
    return task


def _describe_execution(owner: str) -> dict[str, Any]:
    return {
        "ExecutionArn": expression(f"$substringBefore({owner}, '{schema.OWNER_SEPARATOR}')"),
        # Without the holder's input and output: the response would carry them, JSON-escaped
        # again, and a response over 256 KiB fails the waiter (States.DataLimitExceeded).
        "IncludedData": "METADATA_ONLY",
    }


_DESCRIBE: weakref.WeakKeyDictionary[GuardConfig, iam.PolicyStatement] = weakref.WeakKeyDictionary()


def _describe_statement(config: GuardConfig) -> iam.PolicyStatement:
    """What ``tasks.CallAwsService`` grants a guard's owner checks: DescribeExecution of the holder's executions."""
    if config not in _DESCRIBE:
        assert config.owner_state_machine_name is not None
        _DESCRIBE[config] = iam.PolicyStatement(
            resources=[executions_arn(config.owner_state_machine_name)], actions=["states:DescribeExecution"]
        )
    return _DESCRIBE[config]


def holder_fields(*, redrive_status: bool = False) -> str:
    """JSONata: what the owner check keeps of DescribeExecution's answer: the holder's status and execution, and
    with ``redrive_status`` whether RedriveExecution can still resume it (``FailurePolicy.KEEP_FOR_REDRIVE``)."""
    fields = ["'Status': $states.result.Status", "'ExecutionArn': $states.result.ExecutionArn"]
    if redrive_status:
        fields.append("'RedriveStatus': $states.result.RedriveStatus")
    return "{" + ", ".join(fields) + "}"


HOLDER_FIELDS = holder_fields()
