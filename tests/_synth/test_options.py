"""idempotent_constructs/_synth/options.py and option_kinds.py: every option of the public constructs checked
for its type when the construct is created, as one line of its configuration error that names the value
and what to pass; the options model the constructs' signatures' documentation and checks come from; one
validation pass that reports every type and value problem at once, a workflow's with its guards'."""

from __future__ import annotations

import dataclasses
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
    FailurePolicy,
    GuardedState,
    IdempotencyConfigurationError,
    IdempotencyGuard,
    IdempotencyKey,
    IdempotencyTable,
    IdempotentStateMachine,
    ResultStorage,
)
from idempotent_constructs._synth.option_kinds import TEXT, article, implements
from idempotent_constructs._synth.options import Option, Options, taken_names
from idempotent_constructs.asl_fragment import FRAGMENT_MODEL, FRAGMENT_OPTIONS
from idempotent_constructs.guard.guard_options import GUARD, GUARD_MODEL, GUARD_OPTIONS, GUARDED_STATE, OPTIONS, WORKFLOW
from idempotent_constructs.state_machine import STATE_MACHINE_OPTIONS, WORKFLOW_MODEL
from idempotent_constructs.table import TABLE_MODEL, TABLE_OPTIONS
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
    "in_inline_map": ("yes", "'yes' (a str) is not a bool; pass True or False"),
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


# --- the options model -------------------------------------------------------------------------------
MODELS = [
    (IdempotencyGuard.__init__, GUARD_MODEL, GUARD),
    (IdempotentStateMachine.__init__, WORKFLOW_MODEL, WORKFLOW),
    (GuardedState, GUARD_MODEL, GUARDED_STATE),
    (AslFragment.__init__, FRAGMENT_MODEL, "AslFragment"),
    (IdempotencyTable.__init__, TABLE_MODEL, "IdempotencyTable"),
]


@pytest.mark.parametrize(("target", "model", "taker"), MODELS, ids=[taker for _, _, taker in MODELS])
def test_each_constructs_keyword_options_are_exactly_the_models_list_for_it(target, model, taker):
    names = taken_names(target)
    assert len(names) == len(set(names))
    assert set(names) == {option.name for option in model.of(taker)}
    # Required in the model exactly where the signature has no default.
    if not isinstance(target, type):
        parameters = inspect.signature(target).parameters
        assert {name for name in names if parameters[name].default is inspect.Parameter.empty} == set(model.required(taker))


@pytest.mark.parametrize(("target", "model", "taker"), MODELS, ids=[taker for _, _, taker in MODELS])
def test_each_options_documentation_is_the_models_one_text(target, model, taker):
    documented = " ".join((inspect.getdoc(target) or "").split())
    for option in model.of(taker):
        assert f":param {option.name}: {' '.join(option.text(taker).split())}" in documented


def test_the_guard_and_the_workflow_document_a_shared_option_with_one_text():
    def entry(target, name):
        documented = " ".join((inspect.getdoc(target) or "").split())
        return documented.split(f":param {name}: ")[1].split(" :param ")[0]

    assert entry(IdempotencyGuard.__init__, "result_storage") == entry(IdempotentStateMachine.__init__, "result_storage")
    assert entry(IdempotencyGuard.__init__, "result_storage") == entry(GuardedState, "result_storage")
    assert entry(IdempotencyGuard.__init__, "payload") == entry(IdempotentStateMachine.__init__, "payload")


def test_the_shared_kinds_derive_from_the_model():
    assert GUARD_MODEL.kinds(GUARD) == GUARD_OPTIONS
    assert WORKFLOW_MODEL.kinds(WORKFLOW) == STATE_MACHINE_OPTIONS
    assert GUARD_MODEL.kinds(WORKFLOW) == OPTIONS
    assert {field.name for field in dataclasses.fields(GuardedState)} == set(GUARD_MODEL.kinds(GUARDED_STATE))


def test_an_option_in_the_signature_only_or_in_the_model_only_is_refused_when_the_class_is_defined():
    model = Options(Option("name", TEXT, "a name.", "none.", ("Thing",)), Option("size", TEXT, "a size.", "none.", ("Thing",)))

    def init(self, *, name=None, colour=None):
        """
        :options: from the model
        """

    with pytest.raises(TypeError, match=r"only in the signature \['colour'\], only in the model \['size'\]"):
        model.documented("Thing")(init)


def test_the_documentation_is_written_where_the_docstring_has_its_options_line_in_the_signatures_order():
    model = Options(Option("size", TEXT, "a size.", "none.", ("Thing",)), Option("name", TEXT, "a name.", None, ("Thing",)))

    @model.documented("Thing")
    def init(self, *, name, size=None):
        """Make a thing.

        :options: from the model
        """

    assert inspect.getdoc(init) == "Make a thing.\n\n:param name: a name.\n:param size: a size. Default: none."


# --- one validation pass -----------------------------------------------------------------------------
def guard_problems(**options) -> list[str]:
    target = stack()
    given = {"table": IdempotencyTable(target, "Table"), "body": sfn.Pass(target, "Charge"), **options}
    with pytest.raises(IdempotencyConfigurationError) as raised:
        IdempotencyGuard(target, "ChargeOnce", **given)
    return raised.value.problems


def test_a_wrong_type_and_a_wrong_value_in_one_call_are_reported_together():
    found = guard_problems(
        key="$.refund.id",  # a type
        lease=Duration.millis(1500),  # a value
        cache_errors=["CardDeclined"],  # a value: without on_failure=CACHE
    )
    assert [problem.split(":")[0] for problem in found] == ["key", "cache_errors", "lease"]
    assert found[0].startswith("key: '$.refund.id' (a str) is not an IdempotencyKey")
    assert found[2] == (
        "lease: 1 second 500 millis is not a whole number of seconds of at least 1; use Duration.seconds(n) with n >= 1"
    )


def test_the_value_checks_skip_only_the_options_of_the_wrong_type_and_what_reads_them():
    found = guard_problems(
        on_failure="cache",  # wrong: cache_errors is not told that on_failure is RELEASE
        cache_errors=["States.Timeout"],  # its own value is still checked
        namespace=7,
    )
    assert [problem.split(":")[0] for problem in found] == ["namespace", "on_failure", "cache_errors"]
    assert "must list error names" in found[2]


def test_a_workflow_reports_its_own_problems_and_its_guards_in_one_error_under_its_path():
    target = stack()
    with pytest.raises(IdempotencyConfigurationError) as raised:
        IdempotentStateMachine(
            target,
            "Refunds",
            table=IdempotencyTable(target, "Table"),
            definition=sfn.Pass(target, "Work"),
            state_machine_type=sfn.StateMachineType.EXPRESS,
            tracing_enabled="yes",  # the workflow's type
            timeout=Duration.minutes(6),  # the workflow's value
            on_failure=FailurePolicy.RELEASE,
            cache_errors=["CardDeclined"],  # the guard's value
            result_storage=ResultStorage.large(inline_threshold=Size.kibibytes(65)),  # the guard's value
        )
    assert raised.value.construct_path == "Test/Refunds"
    assert [problem.split(":")[0] for problem in raised.value.problems] == [
        "tracing_enabled",
        "timeout",
        "cache_errors",
        "result_storage",
    ]


def test_a_workflow_reports_the_problems_of_its_guard_states_guards_with_its_own():
    target = stack()
    document = {
        "StartAt": "Charge",
        "States": {"Charge": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "End": True}},
    }
    with pytest.raises(IdempotencyConfigurationError) as raised:
        IdempotentStateMachine(
            target,
            "Refunds",
            table=IdempotencyTable(target, "Table"),
            definition_body=document,
            max_wait=Duration.hours(1),
            timeout=Duration.minutes(10),  # the workflow's value: max_wait is longer than a run
            guard_states={"Charge": GuardedState(lease=Duration.millis(1500), on_completed="REJECT")},
        )
    assert raised.value.construct_path == "Test/Refunds"
    assert raised.value.problems[0].startswith("max_wait: 1 hour leaves a waiting duplicate no time")
    assert [problem.split(":")[0] for problem in raised.value.problems[1:]] == [
        "guard_states['Charge'].on_completed",
        "guard_states['Charge'].lease",
    ]
