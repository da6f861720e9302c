"""idempotent_constructs/_synth/read_once.py: values read from the CDK once, not at each use."""

from __future__ import annotations

from aws_cdk import App, Aws, Duration, NestedStack, Size, Stack, Stage, Token, Tokenization
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct, RootConstruct

from idempotent_constructs._synth import read_once
from tests.synth import stack


def test_the_pseudo_parameters_are_the_cdks_own_tokens():
    assert read_once.pseudo() == (Aws.PARTITION, Aws.REGION, Aws.ACCOUNT_ID, Aws.STACK_ID)


def test_a_value_is_read_once_an_object_and_again_for_another():
    reads = []

    @read_once.per_object
    def length(duration: Duration) -> float:
        reads.append(duration)
        return duration.to_seconds()

    first, second = Duration.minutes(2), Duration.minutes(2)
    assert (length(first), length(first), length(second)) == (120, 120, 120)
    assert reads == [first, second]


def test_what_it_reads_is_what_the_cdk_gives():
    target: Stack = stack()
    table = dynamodb.Table(target, "T", partition_key=dynamodb.Attribute(name="id", type=dynamodb.AttributeType.STRING))
    assert read_once.table(table) == (table.table_name, table.table_arn, None)
    assert read_once.millis(Duration.seconds(3)) == 3000 and read_once.size_bytes(Size.kibibytes(2)) == 2048


def test_a_constructs_path_and_address_worked_out_in_python_are_the_constructs_librarys():
    app = App()
    top = Stack(app, "Top")
    scopes = [
        top,
        NestedStack(top, "Nested"),
        Stack(Stage(app, "Stage"), "Inner"),
        Construct(Construct(top, "Group"), "Default"),
        Stack(),  # made without a scope: in an App of its own, as Default
        Stack(Stage(RootConstruct("Root"), "Stage"), "Named"),  # a root whose id is not empty
    ]
    for scope in scopes:
        for construct_id in ("Orders", "Default", "a b", "with/slash", "new\nline", "x\ud800y", "é😀"):
            made = Construct(scope, construct_id)
            assert read_once.child_path(scope, made, construct_id) == made.node.path
            assert read_once.address(made) == made.node.addr


def test_whether_a_value_is_a_token_is_answered_as_the_cdk_answers_it():
    target: Stack = stack()
    table = dynamodb.Table(target, "T", partition_key=dynamodb.Attribute(name="id", type=dynamodb.AttributeType.STRING))
    number = Token.as_number(table.table_name)
    values = [
        "orders",
        "",
        "${not a token}",
        f"orders/{table.table_name}",  # a string token within a text
        Token.as_list(table.table_arn)[0],  # a list token's element: not a token to Token.is_unresolved (the list is)
        Token.as_list(table.table_arn),
        Tokenization.stringify_number(number),  # a number token written as text
        number,
        -1.8e289,  # in the range of number tokens, not one
        3,
        0.5,
        -1e300,
        True,
        None,
        ["a"],
    ]
    answers = [read_once.unresolved(value) for value in values]
    assert answers == [Token.is_unresolved(value) for value in values]
    assert answers.count(True) == 4  # the string token, the text of a number token, the number token, the list
