"""The optional replay marker: ``replay_marker="$.idempotency"`` merges
``{"replayed": true, "record_id": ..., "completed_at": ...}`` into a replayed output, so that callers
and metrics can tell a stored answer from a fresh one. Off by default: contract B1 says a replay's
output is the body's output. Only an object can carry it: a body known not to output one is refused
at synth time, and a replay of another kind of output fails with ``Idempotency.ReplayMarkerUnsupported``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_cdk import aws_stepfunctions as sfn

from .._jsonata.key_expressions import literal
from .._synth import read_once
from ..lambda_src import schema
from . import record_tasks
from .config import REPLAY_MARKER_FIELD as FIELD
from .config import GuardConfig
from .protocol import ID
from .tasks import GuardState, fail

if TYPE_CHECKING:
    from . import IdempotencyGuard
    from .protocol import Facts

UNSUPPORTED = "The stored result is not a JSON object, so the replay marker cannot be merged into it."


def completed_at(config: GuardConfig, facts: Facts) -> str:
    """JSONata: when the record's work completed (ISO 8601), from its expiration."""
    expiration = facts.record(schema.EXPIRATION, "N")
    return f"$fromMillis(($number({expiration}) - {int(read_once.seconds(config.expires_after))}) * 1000)"


def marked(config: GuardConfig, facts: Facts, value: str) -> str:
    """JSONata: the replayed ``value``, with the marker merged in when there is one (raising for a
    value that is not an object)."""
    if config.replay_marker is None:
        return value
    field = FIELD.fullmatch(config.replay_marker).group(1)  # type: ignore[union-attr]  # validated
    marker = record_tasks.jsonata_object(
        {"replayed": "true", "record_id": facts(ID), "completed_at": completed_at(config, facts)}
    )
    return (
        f"($r := {value}; $type($r) = 'object' ? $merge([$r, {{{literal(field)}: {marker}}}]) : $error({literal(UNSUPPORTED)}))"
    )


def not_an_object(guard: IdempotencyGuard) -> GuardState:
    return fail(
        guard,
        guard.config,
        "NotAnObject",
        error=schema.REPLAY_MARKER_UNSUPPORTED,
        cause=UNSUPPORTED,
    )


def known_non_objects(body: sfn.IChainable) -> list[str]:
    """The body's end states whose output is known at synth time not to be an object: a Pass with a
    non-object ``Result`` or ``Output``, a Map or Parallel that outputs its array of results."""
    found = []
    for state in body.end_states:
        if not isinstance(state, sfn.State):
            continue
        rendered: dict[str, Any] = dict(state.to_state_json())
        if rendered.get("Type") == "Pass":
            result = rendered.get("Result", rendered.get("Output", {}))
            literal_text = isinstance(result, str) and not result.strip().startswith("{%")
            if (
                "ResultPath" not in rendered
                and "OutputPath" not in rendered
                and (not isinstance(result, (dict, str)) or literal_text)
            ):
                found.append(state.state_id)
        elif rendered.get("Type") in ("Map", "Parallel") and not {"ResultPath", "OutputPath", "ResultSelector", "Output"} & set(
            rendered
        ):
            found.append(state.state_id)
    return found
