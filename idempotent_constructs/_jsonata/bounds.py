"""What fails a JSONata evaluation: ``JSONataError``, and the bounds AWS puts on every evaluation
(``Bounds``: depth, memory, time, a regular expression's repetitions), past which it raises ``BoundExceeded``.
``engine`` evaluates within them."""

from __future__ import annotations

import dataclasses
import time
from typing import Any, ClassVar

import jsonata
from jsonata import utils as jsonata_utils

from . import java_regex


class JSONataError(Exception):
    """An expression raised while being evaluated (a type error, a bad argument, a failing function)."""


class BoundExceeded(JSONataError):
    """The evaluation left one of the bounds AWS puts on every JSONata evaluation (``Bounds``)."""


@dataclasses.dataclass(frozen=True)
class Bounds:
    """The bounds AWS puts on one JSONata evaluation, measured against AWS by others with TestState
    (floci-io/floci issue #2737 and pull request #2783; AWS's page "Transforming data with JSONata in
    Step Functions" names the three without numbers):

    - depth: evaluation deeper than 100 levels fails (``1+1+...+1`` of 100 terms passes, of 101 fails;
      99 nested parentheses or brackets pass, 100 fail; all five of floci's AWS boundaries hold here),
      counted as jsonata's Timebox counts it: one level for each evaluation entered and not yet left,
      the entries of a parallel call (an array constructor's or a grouping's items after the first) not
      counted. Where the Timebox would leave a level it never entered (its exit skipped because a later
      item set the parallel flag), the level is left here: with the Timebox, ``$map([1..200],
      function($x) { [$x, $x] })`` counts 202 levels (jsonata-js's counts 401) although it never nests
      more than 4, and an emulator that failed it would fail ordinary workflows that AWS runs;
    - memory: ``[1..873782]`` passes and ``[1..873783]`` fails, a string of 2**22 characters passes
      and of 2**23 fails: modelled, as floci models it, as any one value of more than 6,990,256 bytes,
      a number 8 bytes and a character 1 (an array counted as 8 bytes an item);
    - time: AWS fails an evaluation that runs longer than 1 second. Time depends on the machine (and
      jsonata-python is slower than the jsonata-js AWS runs), so ``seconds`` only stops a runaway
      evaluation; the benchmark measures our expressions' time in jsonata-js;
    - a regular expression's repetitions: java.util.regex recurses once per repetition of a group with
      an alternation or a wide body, and overflows the JVM's stack past some hundreds to thousands of
      them (measured on jsonata-java 0.9.9: docs/project/how-we-know.md). A pattern that breaks
      ``java_regex``'s rule fails where one match covers more than ``regex_characters`` characters (one
      or more a repetition). AWS's cause for it was not measured: ``REGEX_OVERFLOW`` is ours.

    The causes are AWS's, as measured, but ``REGEX_OVERFLOW``."""

    depth: int = 100
    memory_bytes: int = 6_990_256
    seconds: float = 10.0
    regex_characters: int = java_regex.REPETITIONS

    STACK_OVERFLOW: ClassVar[str] = (
        "Stack overflow error: Check for non-terminating recursive function. Consider rewriting as tail-recursive"
    )
    MEMORY: ClassVar[str] = "Expression evaluation memory limit exceeded: Check for excessive memory usage"
    TIMEOUT: ClassVar[str] = "Expression evaluation timeout: Check for infinite loop"
    REGEX_OVERFLOW: ClassVar[str] = (
        "java.lang.StackOverflowError: the regular expression {pattern} repeats a group over {count} characters,"
        " past what java.util.regex recurses through on AWS's JVM engine (the emulator's estimate)"
    )

    def frame(self, bindings: dict[str, Any]) -> jsonata.Jsonata.Frame:
        """A frame of ``bindings`` whose evaluation raises ``BoundExceeded`` where AWS's would fail."""
        frame = jsonata.Jsonata.Frame(None)
        counted: list[int] = []  # one entry per evaluation entered and not yet left: 1 where it counts
        depth, started = 0, time.monotonic()

        def entered(_node: Any, _input: Any, environment: Any) -> None:
            nonlocal depth
            counted.append(0 if environment.is_parallel_call else 1)
            depth += counted[-1]
            if depth > self.depth:
                raise BoundExceeded(self.STACK_OVERFLOW)
            if time.monotonic() - started > self.seconds:
                raise BoundExceeded(self.TIMEOUT)

        def left(_node: Any, _input: Any, _environment: Any, result: Any) -> None:
            nonlocal depth
            depth -= counted.pop()
            if isinstance(result, jsonata_utils.Utils.RangeList):
                return  # lazy: the array it fills is measured
            if isinstance(result, str):
                held = len(result)
            elif isinstance(result, list):
                held = 8 * len(result)
            else:
                return
            if held > self.memory_bytes:
                raise BoundExceeded(self.MEMORY)

        frame.set_evaluate_entry_callback(entered)
        frame.set_evaluate_exit_callback(left)
        for name, value in bindings.items():
            frame.bind(name, value)
        return frame


AWS_BOUNDS = Bounds()
