"""Gap: moto's Choice rules on timestamps (``TimestampLessThanPath`` and the like) accept only whole
seconds, and treat "2026-11-22T02:27:45.957Z" as no timestamp at all.

AWS accepts RFC 3339 timestamps with fractional seconds, as ``$$.State.EnteredTime`` is written
(Step Functions' Choice state: timestamp comparisons).

Evidence: tests/emulator/gaps/test_fractional_timestamps.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..patches import Patch

from ..timestamps import parse_rfc3339


def install(patch: Patch) -> None:
    from moto.stepfunctions.parser.asl.component.state.choice.comparison.operator.implementations import is_operator

    patch(is_operator.IsTimestamp, "string_to_timestamp", staticmethod(parse_rfc3339))
