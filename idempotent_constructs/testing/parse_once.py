"""Speed, not a gap: a definition parsed once, as AWS parses it (when its state machine is created), where
moto parses it again for every execution it starts (``ExecutionWorker._get_evaluation_entrypoint``).

moto's parser is ANTLR's, in Python: about 0.15 s of CPU for a guarded workflow's definition, the largest
part of what an execution costs the emulator. The harness keeps the parse trees of the definitions parsed
last, by their text, and builds each execution's components afresh from its tree with moto's own
``Preprocessor``, so that no two executions share a component. A definition that does not parse is
refused as before and not kept.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .patches import Patch

# A tree holds a few megabytes; an emulator's tests run a handful of state machines at a time.
KEPT = 16


def install(patch: Patch) -> None:
    from moto.stepfunctions.parser.asl.parse import preprocessor
    from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser

    parse = AmazonStateLanguageParser.parse
    trees: OrderedDict[str, Any] = OrderedDict()
    lock = threading.Lock()

    def parse_once(definition: str) -> tuple[Any, Any]:
        with lock:
            tree = trees.get(definition)
            if tree is not None:
                trees.move_to_end(definition)
        if tree is None:
            program, tree = parse(definition)
            with lock:
                trees[definition] = tree
                while len(trees) > KEPT:
                    trees.popitem(last=False)
            return program, tree
        return preprocessor.Preprocessor().visit(tree), tree

    patch(AmazonStateLanguageParser, "parse", staticmethod(parse_once))
