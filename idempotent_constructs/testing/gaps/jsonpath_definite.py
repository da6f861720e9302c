"""Gap: moto's JSONPath answers a definite path through an array index with a one-item list, and
an indefinite path that matches once with the bare value.

moto evaluates every JSONPath read (``InputPath``, ``OutputPath``, ``ItemsPath``, Choice ``Variable``
and its ``...Path`` operands, the ``.$`` fields of ``Parameters``, ``ResultSelector`` and
``ItemSelector``, intrinsic function arguments, ``$$`` context paths) with
``moto.stepfunctions.parser.asl.utils.json_path.extract_json``. It guesses the shape of the answer
from the matches instead of from the path: a match whose parent step is an array index is listed
(moto's addition, for getmoto/moto#7825, so that ``$.list[?(...)].Value`` stays a list), and the
list is unwrapped again only when the path text ends in ``[<digits>]``. So ``$[0].messageId`` gives
``["m1"]``, ``$.Items[0].id`` gives ``[{"S": "a"}]`` and ``$.a[-1]`` gives ``[3]``, and a Choice on
them takes the wrong branch; ``States.Format('{}', $[0].id)`` gives ``"[x]"``. The other way round,
``$..id`` or ``$.d..a`` matching once give the bare value, and a filter, a deep scan or an index
union that matches nothing fails the state with States.Runtime.

AWS evaluates JSONPath as Jayway JsonPath does: a definite path (single names and single indexes
only) yields its value and fails when absent; a path with ``*``, ``..``, ``[?(...)]``, a slice or an
``[a,b]`` union yields the list of its matches, in document order, empty when none. Evidence:

- Step Functions developer guide, "Using JSONPath paths"
  (https://docs.aws.amazon.com/step-functions/latest/dg/amazon-states-language-paths.html): paths
  "follow JsonPath syntax"; a reference path identifies a single node; ``$.jar[?(@.a >= 5)]`` gives
  a list. "Manipulate parameters" (input-output-inputpath-params.html): ``$.a[0:2]`` gives ``[1, 2]``.
- LocalStack's AWS-recorded snapshots, tests/aws/services/stepfunctions/v2/base/test_base.snapshot.json
  (localstack/localstack): ``test_json_path_array_access[$.items[0]]`` gives the item itself;
  ``test_state_pass_regex_json_path_base`` (``$.users[?(@.status == 0)]``, one match) gives a
  one-item list; ``test_json_path_array_wildcard_or_slice_with_no_input`` (``$.items[*]``,
  ``$.items[1:].itemValue``, ``$[*]`` ... on ``{}``) gives ``[]``. LocalStack issue #11321 and pull
  request #11369 (singleton array access); awslabs/states-language#10 (``$.a[0,1]`` gives ``[1, 2]``
  on AWS).
- floci-io/floci#3260, run against Step Functions Local (AWS's own emulator): ``$.d..a`` matching
  once gives ``[[1, 2]]``, ``$.list[?(@.keep)]`` a list; floci-io/floci#2521: an absent definite path
  fails with States.Runtime. getmoto/moto#10078: a filter that matches nothing gives ``[]`` on AWS.
- tests/emulator/gaps/test_jsonpath_definite.py shows both sides.

Here the shape follows the path: definite paths yield the value, others the list of matches, ``[]``
when none. One exception is kept from moto, which follows LocalStack's AWS-validated test (its
comment: ``$[1:5]``, ``$[1:]``, ``$[:1]`` on ``{}`` are not handled gracefully): a slice or index
union applied where the path definitely reaches a value that is not an array fails as absent.

Known remaining divergences, left alone (audit of moto 5.2.5 with jsonpath-ng 1.16.0):

- Intrinsic functions (``States.Array``, ``ArrayPartition``, ``ArrayContains``, ``ArrayRange``,
  ``ArrayGetItem``, ``ArrayLength``, ``ArrayUnique``, ``JsonMerge``, ``StringToJson``,
  ``JsonToString``, ``Format``, ``StringSplit``, ``MathAdd``): LocalStack's AWS-recorded executions
  (tests/aws/services/stepfunctions/v2/intrinsic_functions/test_array.snapshot.json,
  test_json_manipulation, test_generic, test_string_operations, test_math_operations) replay in
  moto, with this workaround and without: 117 of 124 executions identically, the other 7 differ only
  in the ARNs and random numbers the snapshots mask. Their argument paths now have the shapes above.
- Filter operators jsonpath-ng does not parse: ``=~`` regular expressions and Jayway's ``in``,
  ``nin``, ``subsetof``, ``anyof``, ``noneof``, ``size``, ``empty`` fail the state with a
  JsonPathParserError (States.Runtime). The guide says reference paths support neither; what AWS does
  with them elsewhere is not recorded anywhere we found.
- ``&&`` and ``||`` in filters parse with jsonpath-ng 1.16 (constraints/development.txt); moto does
  not pin jsonpath-ng, and older releases reject them (getmoto/moto#10078).
- A filter applied to an object: Jayway tests the object itself (``$.obj[?(@.x == 1)]`` gives
  ``[obj]``; json-path/JsonPath, PredicatePathToken.java), jsonpath-ng gives ``[]``. The guide says
  ``@`` "does not match scalar values. It only matches objects": jsonpath-ng's
  ``$.numbers[?(@ > 1)]`` still matches numbers. Neither is recorded against AWS.
- ``$['a','b']`` ending a path gives the list of the two values, here as in moto; Jayway merges them
  into an object of the two members (PropertyPathToken.java, "multiPropertyMergeCase"). Nothing
  recorded against AWS.
- Workflow variables in JSONPath states (``$var.items[0].id``) are read by moto with JSONata, not
  with ``extract_json``: ``$var[*].id`` matching once gives the bare value, and a filter or ``..``
  after a variable fails with a JSONata syntax error. Another mechanism; what AWS gives for them is
  not recorded anywhere we found.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

# moto's Step Functions extra requires jsonpath-ng, as this harness requires moto.
from jsonpath_ng import jsonpath
from jsonpath_ng.ext.parser import parse  # what moto parses with (jsonpath_ng.ext.parse)

if TYPE_CHECKING:
    from ..patches import Patch

# Every moto module that reads JSONPath binds extract_json by name when it is imported.
_READERS = (
    "moto.stepfunctions.parser.asl.utils.json_path",
    "moto.stepfunctions.parser.asl.component.common.string.string_expression",
    "moto.stepfunctions.parser.asl.component.intrinsic.argument.argument",
    "moto.stepfunctions.parser.asl.component.state.choice.comparison.operator.implementations.boolean_equals",
    "moto.stepfunctions.parser.asl.component.state.choice.comparison.operator.implementations.numeric",
    "moto.stepfunctions.parser.asl.component.state.choice.comparison.operator.implementations.string_operators",
    "moto.stepfunctions.parser.asl.component.state.choice.comparison.operator.implementations.timestamp_operators",
    "moto.stepfunctions.parser.asl.eval.states",
)


def _steps(expression: jsonpath.JSONPath) -> list[jsonpath.JSONPath]:
    if isinstance(expression, jsonpath.Child):
        return _steps(expression.left) + _steps(expression.right)
    return [expression]


def _is_definite_step(step: jsonpath.JSONPath) -> bool:
    if isinstance(step, jsonpath.Root):
        return True
    if isinstance(step, jsonpath.Fields):
        return len(step.fields) == 1 and step.fields[0] != "*"
    if isinstance(step, jsonpath.Index):
        return len(step.indices) == 1
    return False


def _slices_a_non_array(steps: list[jsonpath.JSONPath], data: Any) -> bool:
    """Whether the first step that is not definite is a slice or an index union, and what the steps
    before it reach is there and is not an array."""
    prefix: list[jsonpath.JSONPath] = []
    for step in steps:
        if not _is_definite_step(step):
            if not isinstance(step, (jsonpath.Slice, jsonpath.Index)):
                return False
            reached = functools.reduce(jsonpath.Child, prefix).find(data)
            return len(reached) == 1 and not isinstance(reached[0].value, list)
        prefix.append(step)
    return False


def extract(path: str, data: Any, absent: Any) -> Any:
    """The value of a definite ``path`` in ``data``, or the list of the matches of any other path;
    ``absent(path, data)`` is raised when a definite path, or a slice of a non-array, has none."""
    expression = parse(path)
    matches = expression.find(data)
    steps = _steps(expression)
    if all(_is_definite_step(step) for step in steps):
        if len(matches) != 1:
            raise absent(json_path=path, data=data)
        return matches[0].value
    if not matches and _slices_a_non_array(steps, data):
        raise absent(json_path=path, data=data)
    return [match.value for match in matches]


def install(patch: Patch) -> None:
    import importlib

    from moto.stepfunctions.parser.asl.utils.json_path import NoSuchJsonPathError

    def extract_json(path: str, data: Any) -> Any:
        return extract(path, data, NoSuchJsonPathError)

    for name in _READERS:
        patch(importlib.import_module(name), "extract_json", extract_json)
