"""Gap: the emulator's JSONata (``gaps.jsonata``) has no bounds, and moto creates a state machine whatever
its JSONata says.

AWS bounds every JSONata evaluation and fails the state with States.QueryEvaluationError past a bound
("Transforming data with JSONata in Step Functions": a memory limit, a 1-second timeout, a stack
limit). Measured against AWS with TestState by others (floci-io/floci issues #2667 and #2737, pull
request #2783): evaluation deeper than 100 levels fails with "... threw an error during evaluation:
Stack overflow error: Check for non-terminating recursive function. Consider rewriting as
tail-recursive"; holding more than about 6.99 MB fails with "... Expression evaluation memory limit
exceeded: Check for excessive memory usage" (``_jsonata.bounds.Bounds`` has the boundaries and how they
are counted). And CreateStateMachine (also UpdateStateMachine, and CloudFormation's create) refuses with
InvalidDefinition a definition whose JSONata does not parse (INVALID_JSONATA_EXPRESSION) or reads a
field of the top-level context (UNSUPPORTED_JSONATA_EXPRESSION: "Reference to 'order' at the top level
is not supported."), measured with ValidateStateMachineDefinition (floci-io/floci issue #2670):
``jsonata_check`` has the rule.

AWS's engine runs on the JVM (floci-io/floci issue #2662, pull request #2683), where java.util.regex
recurses once per repetition of a group with an alternation or a wide body: measured on jsonata-java
0.9.9, ``(?:a|b)*`` overflows a 1 MB stack between 600 and 2,000 repetitions
(docs/project/how-we-know.md). No one has measured AWS's cause for it.

Here every evaluation is held to ``_jsonata.bounds.AWS_BOUNDS`` with AWS's causes (the 1-second timeout
is not enforced: time depends on the machine, and the benchmark measures it in jsonata-js), a regular
expression that breaks ``_jsonata.java_regex``'s rule fails the evaluation (States.QueryEvaluationError,
a cause of ours: ``java.lang.StackOverflowError: ...``) where one match covers more than 1,000
characters, and a definition AWS would refuse is refused, naming the first problem as AWS does:
``Invalid State Machine Definition: 'CODE: message at /States/S/Field'``.

Evidence: tests/emulator/gaps/test_jsonata_bounds.py; LocalStack's AWS-recorded snapshots record none
of these bounds or refusals.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..._jsonata.check import definition_problems
from ..._jsonata.engine import AWS_BOUNDS
from . import jsonata

if TYPE_CHECKING:
    from ..patches import Patch


def install(patch: Patch) -> None:
    from moto.core.exceptions import JsonRESTError
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend

    patch(jsonata, "BOUNDS", AWS_BOUNDS)
    validate = StepFunctionsParserBackend._validate_definition

    def checked(definition: str) -> None:
        validate(definition=definition)
        document: Any = json.loads(definition)
        problems = definition_problems(document) if isinstance(document, dict) else []
        if problems:
            location, code, message = problems[0]
            # moto's own InvalidDefinition reaches the client without its code.
            raise JsonRESTError("InvalidDefinition", f"Invalid State Machine Definition: '{code}: {message} at {location}'")

    patch(StepFunctionsParserBackend, "_validate_definition", staticmethod(checked))
