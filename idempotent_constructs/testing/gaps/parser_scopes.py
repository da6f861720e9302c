"""Gap: moto's definition parser shares one query-language stack between all parses at once.

``moto.stepfunctions.parser.asl.parse.preprocessor.Preprocessor`` keeps the stack of query languages
of the scopes it is in (``_query_language_per_scope``) as a class attribute, one list for every
instance. Executions start in threads, and each parses its definition: two parses of definitions
with JSONata states at the same time push and pop on each other's stack, one of them then reads a
JSONPath state as JSONata (or the reverse), raises inside the execution's thread, and the execution
stays RUNNING for ever. AWS parses a definition once, when it is created. Each parser gets its own
stack here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..patches import Patch


def install(patch: Patch) -> None:
    from moto.stepfunctions.parser.asl.parse.preprocessor import Preprocessor

    def own_stack(parser: Any) -> list[Any]:
        stack: list[Any] = parser.__dict__.setdefault("_own_query_language_per_scope", [])
        return stack

    patch(Preprocessor, "_query_language_per_scope", property(own_stack))
