"""testing.gaps.jsonata_bounds: every JSONata evaluation is held to AWS's bounds, with AWS's causes, and a
definition whose JSONata AWS would refuse is refused at CreateStateMachine; moto alone does neither.

The boundaries are the ones measured against AWS with TestState (floci-io/floci issue #2737 and pull
request #2783); the refusals the ones measured with ValidateStateMachineDefinition (issue #2670)."""

from __future__ import annotations

import json
import uuid

import pytest
from botocore.exceptions import ClientError

from idempotent_constructs.testing import ACCOUNT
from tests.emulator.gaps.test_jsonata import run_expression

STACK_OVERFLOW = (
    "threw an error during evaluation: Stack overflow error: Check for non-terminating recursive function. "
    "Consider rewriting as tail-recursive"
)
MEMORY = "threw an error during evaluation: Expression evaluation memory limit exceeded: Check for excessive memory usage"


def sum_of_ones(terms: int) -> str:
    """``1+1+...+1``: an addition chain nests one evaluation level per term."""
    return "+".join(["1"] * terms)


def test_an_evaluation_of_100_levels_passes_and_of_101_fails_with_aws_cause(emulator):
    assert run_expression(emulator, sum_of_ones(100)).output == {"value": 100}
    failed = run_expression(emulator, sum_of_ones(101))
    assert (failed.status, failed.error) == ("FAILED", "States.QueryEvaluationError")
    assert failed.cause.endswith(STACK_OVERFLOW)


@pytest.mark.parametrize(
    ("passes", "fails"),
    [
        ("(" * 99 + "1" + ")" * 99, "(" * 100 + "1" + ")" * 100),
        ("[" * 99 + "1" + "]" * 99, "[" * 100 + "1" + "]" * 100),
        ("1" + "~>$string" * 99, "1" + "~>$string" * 100),
        (
            "($f := function($x) { $x <= 0 ? 0 : 1 + $f($x - 1) }; $f(31))",
            "($f := function($x) { $x <= 0 ? 0 : 1 + $f($x - 1) }; $f(32))",
        ),
    ],
)
def test_every_nesting_shape_fails_at_the_depth_aws_fails_it_at(emulator, passes, fails):
    assert run_expression(emulator, passes).status == "SUCCEEDED"
    assert run_expression(emulator, fails).cause.endswith(STACK_OVERFLOW)


def test_a_value_past_the_memory_bound_fails_with_aws_cause(emulator):
    assert run_expression(emulator, "[1..873782] ~> $count()").output == {"value": 873782}
    assert run_expression(emulator, "[1..873783] ~> $count()").cause.endswith(MEMORY)


def test_items_after_the_first_of_a_constructor_never_leave_a_level_behind(emulator):
    # jsonata's Timebox would count 202 levels here (it skips the exit of a level it entered); nothing nests deeper than 4.
    assert run_expression(emulator, "$count($map([1..200], function($x) { [$x, {'a': $x, 'b': $x}] }))").output == {"value": 200}


def test_a_bound_failure_can_be_caught_as_aws_catches_it(emulator):
    definition = {
        "QueryLanguage": "JSONata",
        "StartAt": "Deep",
        "States": {
            "Deep": {
                "Type": "Parallel",
                "Branches": [
                    {
                        "StartAt": "Evaluate",
                        "States": {"Evaluate": {"Type": "Pass", "Output": "{% " + sum_of_ones(600) + " %}", "End": True}},
                    }
                ],
                "Catch": [{"ErrorEquals": ["States.QueryEvaluationError"], "Output": {"caught": True}, "Next": "Done"}],
                "End": True,
            },
            "Done": {"Type": "Succeed"},
        },
    }
    assert emulator.run_definition(definition, {}).output == {"caught": True}


@pytest.mark.parametrize("characters", [1000, 1001])
def test_a_regular_expression_java_would_recurse_through_fails_past_the_stack_estimate(emulator, characters):
    # (?:a|b)* recurses once a character in java.util.regex (AWS's engine runs on the JVM); [ab]* loops.
    text = {"s": "ab" * 1000}
    expression = f"$replace($substring($states.input.s, 0, {characters}), /(?:a|b)*/, 'x')"
    execution = run_expression(emulator, expression, text)
    if characters <= 1000:
        assert execution.output == {"value": "xx"}
    else:
        assert (execution.status, execution.error) == ("FAILED", "States.QueryEvaluationError")
        assert "java.lang.StackOverflowError: the regular expression /(?:a|b)*/" in execution.cause
    assert run_expression(emulator, "$replace($states.input.s, /[ab]*/, 'x')", text).output == {"value": "xx"}


def test_without_the_workaround_nothing_is_bounded(emulator):
    with emulator.without_workaround("jsonata_bounds"):
        assert run_expression(emulator, sum_of_ones(101)).output == {"value": 101}
        assert run_expression(emulator, "$replace($states.input.s, /(?:a|b)*/, 'x')", {"s": "ab" * 1000}).output == {
            "value": "xx"
        }


def create(emulator, expression: str) -> str:
    definition = {
        "QueryLanguage": "JSONata",
        "StartAt": "E",
        "States": {"E": {"Type": "Pass", "Output": {"v": "{% " + expression + " %}"}, "End": True}},
    }
    name = f"refused-{uuid.uuid4().hex[:12]}"
    client = emulator.client("stepfunctions")
    return str(
        client.create_state_machine(name=name, definition=json.dumps(definition), roleArn=f"arn:aws:iam::{ACCOUNT}:role/{name}")[
            "stateMachineArn"
        ]
    )


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        (
            "phone",
            "UNSUPPORTED_JSONATA_EXPRESSION: Reference to 'phone' at the top level is not supported. at /States/E/Output/v",
        ),
        (
            "$sum(phone)",
            "UNSUPPORTED_JSONATA_EXPRESSION: Reference to 'phone' at the top level is not supported. at /States/E/Output/v",
        ),
        ("$.phone", "UNSUPPORTED_JSONATA_EXPRESSION: Reference to '$' at the top level is not supported. at /States/E/Output/v"),
        ("phone[1,2)", "INVALID_JSONATA_EXPRESSION: "),
    ],
)
def test_a_definition_whose_jsonata_aws_would_refuse_is_refused_at_create(emulator, expression, message):
    with pytest.raises(ClientError) as refused:
        create(emulator, expression)
    assert refused.value.response["Error"]["Code"] == "InvalidDefinition"
    assert f"Invalid State Machine Definition: '{message}" in refused.value.response["Error"]["Message"]


def test_fields_read_after_a_variable_in_a_predicate_or_in_a_lambda_of_a_variable_are_accepted(emulator):
    assert create(emulator, "$map($states.input.items[price > 3], function($i) { $i.id })")


def test_without_the_workaround_a_bare_field_is_accepted(emulator):
    with emulator.without_workaround("jsonata_bounds"):
        assert create(emulator, "phone")
