"""idempotent_constructs/_synth/options.py: every option of the public constructs checked for its type when the
construct is created, as one line of its configuration error that names the value and what to pass."""

from __future__ import annotations

import inspect

import pytest
from aws_cdk import Duration, RemovalPolicy, Size
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_stepfunctions as sfn

from idempotent_constructs import (
    AslFragment,
    IdempotencyConfigurationError,
    IdempotencyGuard,
    IdempotencyKey,
    IdempotencyTable,
    IdempotentStateMachine,
    ResultStorage,
)
from idempotent_constructs._synth.options import article, implements
from idempotent_constructs.asl_fragment import FRAGMENT_OPTIONS
from idempotent_constructs.guard.config import GUARD_OPTIONS, OPTIONS
from idempotent_constructs.state_machine import STATE_MACHINE_OPTIONS
from idempotent_constructs.table import TABLE_OPTIONS
from tests.synth import stack

# Each option shared by the guard and the workflow: a value a user may pass by mistake, and the
# message it must give (after "{option}: ").
SHARED = {
    "table": (
        "my-table",
        "'my-table' (a str) is not an IdempotencyTable or a table (dynamodb.ITable); pass the "
        'IdempotencyTable(self, "Idempotency") you created, or an existing table: IdempotencyTable(self, '
        '"Idempotency", table=dynamodb.Table.from_table_name(self, "Existing", "my-table"))',
    ),
    "key": ("$.refund.id", """'$.refund.id' (a str) is not an IdempotencyKey; pass IdempotencyKey.from_paths("$.refund.id")"""),
    "payload": (
        "$[0].body",
        """'$[0].body' (a str) is not an IdempotencyPayload; pass IdempotencyPayload.from_paths("$[0].body")""",
    ),
    "namespace": (7, '7 (an int) is not a string; pass a string, such as "7"'),
    "expires_after": (86400, "86400 (an int) is not a Duration; pass Duration.seconds(86400)"),
    "lease": (30, "30 (an int) is not a Duration; pass Duration.seconds(30)"),
    "poll_interval": (1.0, "1.0 (a float) is not a Duration; pass Duration.seconds(1)"),
    "max_wait": ("5m", "'5m' (a str) is not a Duration; pass Duration.seconds(n), Duration.minutes(n) or Duration.hours(n)"),
    "on_in_flight": ("FAIL", "'FAIL' (a str) is not an InFlightPolicy; pass InFlightPolicy.FAIL"),
    "on_failure": ("cache", "'cache' (a str) is not a FailurePolicy; pass FailurePolicy.CACHE"),
    "on_completed": (True, "True (a bool) is not a CompletedPolicy; pass one of CompletedPolicy.REPLAY, CompletedPolicy.REJECT"),
    "replay_marker": (True, 'True (a bool) is not a string; pass a string, such as "True"'),
    "cache_errors": ("CardDeclined", """'CardDeclined' (a str) is not a list of error names; pass ["CardDeclined"]"""),
    "result_storage": ("large", "'large' (a str) is not a ResultStorage; pass ResultStorage.inline() or ResultStorage.large()"),
}
GUARD_ONLY = {
    "body": (
        "Charge",
        """'Charge' (a str) is not a state or chain of states (sfn.IChainable); pass one such as sfn.Pass(self, "Work") or first.next(second)""",
    ),
    "state_name_prefix": (1, '1 (an int) is not a string; pass a string, such as "1"'),
    "owner_state_machine_name": (None, ""),  # None is its default: checked with a wrong type below
    "once_per_execution": ("yes", "'yes' (a str) is not a bool; pass True or False"),
}
STATE_MACHINE_ONLY = {
    "definition": ({"StartAt": "Work"}, "{'StartAt': 'Work'} (a dict) is not a state or chain of states (sfn.IChainable)"),
    "definition_body": (
        "statemachine.asl.json",
        "'statemachine.asl.json' (a str) is not a definition (sfn.DefinitionBody or a dict); "
        'pass sfn.DefinitionBody.from_file("statemachine.asl.json")',
    ),
    "definition_substitutions": (
        {"WaitSeconds": 10},
        "{'WaitSeconds': 10} (a dict) is not a mapping of placeholder names to strings; "
        'pass {"WaitSeconds": "10"} (a number or boolean as its text, as CloudFormation takes it)',
    ),
    "state_machine_type": ("EXPRESS", "'EXPRESS' (a str) is not a sfn.StateMachineType; pass sfn.StateMachineType.EXPRESS"),
    "state_machine_name": (42, '42 (an int) is not a string; pass a string, such as "42"'),
    "timeout": (600, "600 (an int) is not a Duration; pass Duration.seconds(600)"),
    "logs": ({"level": "ALL"}, "{'level': 'ALL'} (a dict) is not a sfn.LogOptions; pass sfn.LogOptions(destination=log_group"),
    "tracing_enabled": ("yes", "'yes' (a str) is not a bool; pass True or False"),
    "role": (
        "arn:aws:iam::123456789012:role/r",
        "(a str) is not a role (iam.IRole); pass a role, such as iam.Role.from_role_arn(...)",
    ),
    "query_language": ("JSONata", "'JSONata' (a str) is not a sfn.QueryLanguage; pass sfn.QueryLanguage.JSONATA"),
    "definition_location": ("asset", "'asset' (a str) is not a DefinitionLocation; pass DefinitionLocation.ASSET"),
    "guard_states": (
        {"ChargePayment": "$.order_id"},
        "is not a mapping of state names to an IdempotencyKey or a GuardedState; "
        'pass {"ChargePayment": IdempotencyKey.from_paths("$.order_id")}',
    ),
}
FRAGMENT = {
    "definition_body": (
        {"StartAt": "Work"}.items(),
        "is not a definition (sfn.DefinitionBody or a dict); pass sfn.DefinitionBody.from_file(path), "
        "sfn.DefinitionBody.from_string(text) or the document as a dict",
    ),
    "definition_substitutions": (
        ["Fn", "arn"],
        "['Fn', 'arn'] (a list) is not a mapping of placeholder names to strings; "
        'pass {"ReserveFlightFunction": function.function_arn}',
    ),
    "state_name": (3, '3 (an int) is not a string; pass a string, such as "3"'),
    "table": ("orders", "'orders' (a str) is not an IdempotencyTable or a table (dynamodb.ITable); pass the IdempotencyTable"),
    "guard_states": (
        ["ChargePayment"],
        "is not a mapping of state names to an IdempotencyKey or a GuardedState; "
        'pass {"ChargePayment": IdempotencyKey.from_paths("$.order_id")}',
    ),
}
TABLE = {
    "table": (
        "orders-idempotency",
        """(a str) is not a table (dynamodb.ITable); pass dynamodb.Table.from_table_name(self, "Existing", "orders-idempotency")""",
    ),
    "removal_policy": ("destroy", "'destroy' (a str) is not a RemovalPolicy; pass RemovalPolicy.DESTROY"),
    "encryption_key": ("alias/mine", "'alias/mine' (a str) is not a KMS key (kms.IKey); pass a key, such as kms.Key(...)"),
    "point_in_time_recovery": ("true", "'true' (a str) is not a bool; pass True or False"),
}


def error_of(build) -> str:
    with pytest.raises(IdempotencyConfigurationError) as raised:
        build()
    return str(raised.value)


def guard_with(target, option, value):
    options = {"table": IdempotencyTable(target, "Table"), "body": sfn.Pass(target, "Charge"), option: value}
    return lambda: IdempotencyGuard(target, "ChargeOnce", **options)


def workflow_with(target, option, value):
    options = {"table": IdempotencyTable(target, "Table"), "definition": sfn.Pass(target, "Work"), option: value}
    return lambda: IdempotentStateMachine(target, "Refunds", **options)


def test_every_parameter_of_the_constructs_has_a_kind_and_a_test_here():
    def parameters(function):
        return set(inspect.signature(function).parameters) - {"self", "scope", "construct_id"}

    assert parameters(IdempotencyGuard.__init__) == set(GUARD_OPTIONS) == set(SHARED) | set(GUARD_ONLY)
    assert parameters(IdempotentStateMachine.__init__) == set(STATE_MACHINE_OPTIONS) == set(SHARED) | set(STATE_MACHINE_ONLY)
    assert parameters(IdempotencyTable.__init__) == set(TABLE_OPTIONS) == set(TABLE)
    assert parameters(AslFragment.__init__) == set(FRAGMENT_OPTIONS) == set(FRAGMENT)
    assert set(OPTIONS) == set(SHARED)


@pytest.mark.parametrize("option", sorted(SHARED))
def test_a_guard_fails_with_the_fix_when_an_option_has_the_wrong_type(option):
    value, message = SHARED[option]
    error = error_of(guard_with(stack(), option, value))
    assert f"Test/ChargeOnce: invalid idempotency configuration:\n  - {option}: {message}" == error


@pytest.mark.parametrize("option", sorted(SHARED))
def test_a_workflow_fails_with_the_fix_under_its_own_path_when_an_option_has_the_wrong_type(option):
    value, message = SHARED[option]
    assert (
        error_of(workflow_with(stack(), option, value))
        == f"Test/Refunds: invalid idempotency configuration:\n  - {option}: {message}"
    )


# owner_state_machine_name's default is None, which is its example above: it has a test of its own.
@pytest.mark.parametrize("option", sorted(set(GUARD_ONLY) - {"owner_state_machine_name"}))
def test_a_guard_fails_when_one_of_its_own_options_has_the_wrong_type(option):
    value, message = GUARD_ONLY[option]
    assert f"  - {option}: {message}" in error_of(guard_with(stack(), option, value))


def test_a_guard_fails_when_the_owner_state_machine_name_is_no_string():
    target = stack()
    error = error_of(
        guard_with(
            target,
            "owner_state_machine_name",
            sfn.StateMachine(target, "Machine", definition_body=sfn.DefinitionBody.from_chainable(sfn.Pass(target, "Work"))),
        )
    )
    assert "owner_state_machine_name: the StateMachine at Test/Machine is not a string; pass a string" in error


def test_a_guard_fails_without_a_body():
    target = stack()
    error = error_of(lambda: IdempotencyGuard(target, "G", table=IdempotencyTable(target, "Table"), body=None))
    assert "body: None (a NoneType) is not a state or chain of states (sfn.IChainable)" in error


@pytest.mark.parametrize("option", sorted(STATE_MACHINE_ONLY))
def test_a_workflow_fails_when_one_of_its_own_options_has_the_wrong_type(option):
    value, message = STATE_MACHINE_ONLY[option]
    assert f"  - {option}: " in (error := error_of(workflow_with(stack(), option, value)))
    assert message in error


@pytest.mark.parametrize("option", sorted(TABLE))
def test_a_table_fails_when_an_option_has_the_wrong_type(option):
    target = stack()
    value, message = TABLE[option]
    error = error_of(lambda: IdempotencyTable(target, "Idempotency", **{option: value}))
    assert error.startswith(f"Test/Idempotency: invalid idempotency configuration:\n  - {option}: ")
    assert message in error


@pytest.mark.parametrize("option", sorted(FRAGMENT))
def test_a_document_step_fails_under_its_own_path_when_an_option_has_the_wrong_type(option):
    target = stack()
    value, message = FRAGMENT[option]
    options = {"definition_body": {"StartAt": "Work", "States": {"Work": {"Type": "Pass", "End": True}}}, option: value}
    error = error_of(lambda: AslFragment(target, "Saga", **options))
    assert error.startswith(f"Test/Saga: invalid idempotency configuration:\n  - {option}: ")
    assert message in error


def test_every_mistake_is_reported_at_once():
    target = stack()
    error = error_of(lambda: IdempotentStateMachine(target, "Refunds", table="t", definition="d", key="$.id", lease=30))
    assert sorted(line.split(":")[0] for line in error.splitlines()[1:]) == [
        "  - definition",
        "  - key",
        "  - lease",
        "  - table",
    ]


@pytest.mark.parametrize(
    ("storage", "message"),
    [
        (ResultStorage.large(inline_threshold=8192), "inline_threshold: 8192 (an int) is not a Size; pass Size.kibibytes(8)"),
        (ResultStorage.large(bucket="my-results"), "bucket: 'my-results' (a str) is not a bucket (s3.IBucket)"),
    ],
)
def test_fails_when_an_option_of_result_storage_has_the_wrong_type(storage, message):
    error = error_of(guard_with(stack(), "result_storage", storage))
    assert f"  - result_storage: in ResultStorage.large(), {message}" in error


def test_fails_when_key_paths_come_as_one_list():
    key = IdempotencyKey.from_paths(["$.refund.id", "$.customer.id"])
    error = error_of(guard_with(stack(), "key", key))
    assert (
        "key: IdempotencyKey.from_paths() takes each path as an argument, got a list ['$.refund.id', '$.customer.id']; "
        'pass IdempotencyKey.from_paths("$.refund.id", "$.customer.id")'
    ) in error


def test_fails_when_powertools_is_granted_to_something_other_than_a_function():
    target = stack()
    table = IdempotencyTable(target, "Idempotency")
    error = error_of(lambda: table.grant_powertools_idempotency("my-function"))
    assert "function: 'my-function' (a str) is not a Function; pass a function defined in this app" in error


def test_a_construct_received_by_mistake_is_named_by_its_class_and_path():
    target = stack()
    error = error_of(guard_with(target, "table", sfn.Pass(target, "NotATable")))
    assert "table: the Pass at Test/NotATable is not an IdempotencyTable" in error


def test_values_of_the_right_kind_pass_whatever_jsii_returned_them_as():
    target = stack()
    imported = dynamodb.Table.from_table_name(target, "Existing", "orders-idempotency")
    table = IdempotencyTable(target, "Adopted", table=imported)
    IdempotencyTable(target, "Mine", removal_policy=RemovalPolicy.DESTROY, encryption_key=kms.Key(target, "Key"))
    inner = IdempotencyGuard(target, "Inner", table=imported, body=sfn.Pass(target, "Charge"))
    IdempotentStateMachine(
        target,
        "Refunds",
        table=table,
        definition=sfn.Pass(target, "Validate").next(inner),
        key=IdempotencyKey.from_paths("$.refund.id"),
        lease=Duration.minutes(1),
        role=iam.Role.from_role_arn(target, "Role", "arn:aws:iam::123456789012:role/r"),  # a jsii interface proxy
        result_storage=ResultStorage.large(
            bucket=s3.Bucket.from_bucket_name(target, "Results", "my-results"), inline_threshold=Size.kibibytes(4)
        ),
        tracing_enabled=False,
        state_machine_type=sfn.StateMachineType.STANDARD,
    )


def test_a_jsii_object_implements_the_interfaces_its_class_declares_and_their_parents():
    target = stack()
    table = dynamodb.Table.from_table_name(target, "Existing", "t")
    role = iam.Role.from_role_name(target, "Role", "r")
    assert implements(table, dynamodb.ITable) and not implements(table, sfn.IChainable)
    assert implements(role, iam.IRole) and implements(role, iam.IGrantable) and not implements(role, dynamodb.ITable)
    assert not implements("t", dynamodb.ITable)


@pytest.mark.parametrize(
    ("noun", "written"),
    [("InFlightPolicy", "an InFlightPolicy"), ("IdempotencyKey", "an IdempotencyKey"), ("Duration", "a Duration")],
)
def test_a_noun_gets_the_article_its_first_sound_takes(noun, written):
    assert article(noun) == written
