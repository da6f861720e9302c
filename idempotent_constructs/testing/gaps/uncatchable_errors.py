"""Gap: moto's States.ALL catches every error.

AWS: States.ALL does not catch States.DataLimitExceeded (a state's input or output over the 256 KiB
payload limit, which moto does detect), "a terminal error that cannot be caught by the States.ALL
error type", nor States.Runtime, which "always causes the execution to fail" (Step Functions'
error handling). A catcher naming States.DataLimitExceeded explicitly still catches it; nothing
catches States.Runtime.

Evidence: tests/emulator/gaps/test_uncatchable_errors.py, a Pass state whose output is too large.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..patches import Patch

_TERMINAL = {"States.DataLimitExceeded", "States.Runtime"}


def install(patch: Patch) -> None:
    from moto.stepfunctions.parser.asl.component.common.error_name.error_equals_decl import ErrorEqualsDecl

    original = ErrorEqualsDecl._eval_body

    def error_equals(decl: Any, env: Any) -> None:
        name = getattr(env.stack[-1], "error_name", None)
        explicit = name != "States.Runtime" and any(getattr(n, "error_name", None) == name for n in decl.error_names)
        if name in _TERMINAL and not explicit:
            env.stack.pop()
            env.stack.append(False)
            return
        original(decl, env)

    patch(ErrorEqualsDecl, "_eval_body", error_equals)
