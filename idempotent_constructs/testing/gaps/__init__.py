"""The gaps of moto 5.2.5 that matter to idempotent workflows, one module each, closed by the local
emulator. Each module's docstring says the gap, what AWS does, and the evidence (its test, under
tests/emulator/gaps/, which also shows moto's own behaviour with the workaround suspended).

A module either patches moto (``install(patch)``, undone when the emulator stops) or fixes up a
deployment (``after_deploy(deployment, account=..., region=...)``).
"""

from __future__ import annotations

from . import (
    aws_sdk_names,
    boto_clients,
    build_errors,
    custom_resources,
    definition_substitutions,
    describe_execution,
    dynamodb_atomicity,
    dynamodb_binary,
    endpoints,
    entered_time,
    event_source_mappings,
    execution_end,
    fractional_timestamps,
    jsonata,
    jsonata_bounds,
    jsonpath_definite,
    lambda_service_errors,
    lambda_versions,
    parallel_errors,
    parser_scopes,
    payload_limit,
    redrive_execution,
    redrive_iterations,
    stack_updates,
    start_sync_execution,
    state_machines,
    string_outputs,
    time_to_live,
    uncatchable_errors,
)

_PATCHING = (
    definition_substitutions,
    jsonata,
    jsonata_bounds,
    payload_limit,
    build_errors,
    describe_execution,
    parser_scopes,
    execution_end,
    lambda_service_errors,
    boto_clients,
    parallel_errors,
    uncatchable_errors,
    dynamodb_binary,
    aws_sdk_names,
    lambda_versions,
    stack_updates,
    custom_resources,
    dynamodb_atomicity,
    entered_time,
    fractional_timestamps,
    string_outputs,
    jsonpath_definite,
    endpoints,
    start_sync_execution,
    event_source_mappings,
    redrive_execution,
    redrive_iterations,
)
_DEPLOYING = (state_machines, time_to_live)


def _name(module: object) -> str:
    return str(getattr(module, "__name__", "")).rpartition(".")[2]


INSTALLERS = {_name(module): module.install for module in _PATCHING}
AFTER_DEPLOY = {_name(module): module.after_deploy for module in _DEPLOYING}
