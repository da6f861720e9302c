"""idempotent_constructs/key.py: key strategies and their synth-time validation (contract B10)."""

from __future__ import annotations

import pytest
from aws_cdk import Duration, Token
from aws_cdk import aws_stepfunctions as sfn

from idempotent_constructs import (
    IdempotencyConfigurationError,
    IdempotencyKey,
    IdempotencyTable,
    IdempotentStateMachine,
)
from tests.synth import stack


def build(key: IdempotencyKey, **options) -> None:
    target = stack()
    IdempotentStateMachine(
        target, "Orders", table=IdempotencyTable(target, "Table"), definition=sfn.Pass(target, "Work"), key=key, **options
    )


def test_the_default_key_is_the_whole_input():
    assert IdempotencyKey.whole_input().kind == "whole_input"


def test_valid_expressions_synthesize():
    build(IdempotencyKey.from_jmespath("[order.id, customer.id]"))
    build(IdempotencyKey.from_jmespath("abs(order.total)"))  # a type error on some inputs is KeyMissing at run time
    build(IdempotencyKey.from_paths("$.order.id", "$['customer id']", "$.lines[0].sku"))


def test_fails_when_the_jmespath_expression_is_invalid():
    with pytest.raises(IdempotencyConfigurationError) as raised:
        build(IdempotencyKey.from_jmespath("order.[id"))
    message = str(raised.value)
    assert "Test/Orders" in message  # the construct
    assert "'order.[id'" in message  # the value
    assert "for example" in message  # the fix


@pytest.mark.parametrize(
    ("expression", "reason"), [("nope(order.id)", "Unknown function"), ("length(order.id, customer.id)", "Expected 1 argument")]
)
def test_fails_when_the_jmespath_expression_would_fail_on_every_input(expression, reason):
    with pytest.raises(IdempotencyConfigurationError, match=rf"(?s)Test/Orders.*{reason}"):
        build(IdempotencyKey.from_jmespath(expression))


@pytest.mark.parametrize("path", ["$.items[*].id", "$..id", "order.id", "$.a[1:3]"])
def test_fails_when_a_path_does_not_name_one_scalar_field(path):
    with pytest.raises(IdempotencyConfigurationError, match=r"(?s)Test/Orders.*unsupported JSONPath|must start with"):
        build(IdempotencyKey.from_paths(path))


def test_fails_when_no_path_or_an_empty_expression_is_given():
    with pytest.raises(IdempotencyConfigurationError, match="at least one JSONPath"):
        build(IdempotencyKey.from_paths())
    with pytest.raises(IdempotencyConfigurationError, match="non-empty expression"):
        build(IdempotencyKey.from_jmespath(" "))


def test_fails_with_every_problem_at_once():
    with pytest.raises(IdempotencyConfigurationError) as raised:
        build(
            IdempotencyKey.from_paths("$..id", "$.*"),
            namespace="a#b",
            lease=Duration.millis(10),
            max_wait=Duration.millis(10),
        )
    assert len(raised.value.problems) == 5


def test_unresolved_tokens_are_not_validated():
    build(IdempotencyKey.from_jmespath(Token.as_string({"Ref": "KeyExpression"})))


@pytest.mark.parametrize("namespace", ["orders/prod", "Stage/Orders/Charge", "a", "x" * 256, "svc:orders=v2+eu@1.0_-"])
def test_namespaces_of_letters_digits_and_separators_are_accepted(namespace):
    build(IdempotencyKey.whole_input(), namespace=namespace)


@pytest.mark.parametrize("namespace", ["", "a#b", "orders prod", "orders/*", "a?", "${aws:username}", "x" * 257, "ordres\n"])
def test_a_namespace_with_a_separator_wildcard_space_or_too_long_fails_synth_naming_the_value(namespace):
    with pytest.raises(IdempotencyConfigurationError, match="is not a valid namespace") as raised:
        build(IdempotencyKey.whole_input(), namespace=namespace)
    assert repr(namespace) in str(raised.value)


def test_a_default_namespace_from_an_unusual_construct_path_asks_for_an_explicit_one():
    target = stack()
    with pytest.raises(IdempotencyConfigurationError, match=r"'Test/Orders #1'.*default.*pass namespace="):
        IdempotentStateMachine(target, "Orders #1", table=IdempotencyTable(target, "Table"), definition=sfn.Pass(target, "Work"))


@pytest.mark.parametrize(
    ("expression", "code", "fix"),
    [
        ("order.id", "Reference to 'order' at the top level is not supported.", "write $states.input.order.id"),
        ("$count(items)", "Reference to 'items' at the top level is not supported.", "write $states.input.order.id"),
        ("$states.input.order[1,2)", "INVALID_JSONATA_EXPRESSION", "fix the expression"),
    ],
)
def test_fails_when_step_functions_would_refuse_the_jsonata_key_expression(expression, code, fix):
    with pytest.raises(IdempotencyConfigurationError) as raised:
        build(IdempotencyKey.from_jsonata(expression))
    message = str(raised.value)
    assert "Test/Orders" in message and repr(expression) in message and code in message and fix in message


def test_a_jsonata_key_that_reads_the_input_through_states_input_synthesizes():
    build(IdempotencyKey.from_jsonata("[$states.input.order.id, $count($states.input.items[price > 3])]"))
