"""idempotent_constructs/state_machine.py: IdempotentStateMachine."""

from __future__ import annotations

import json

import pytest
from aws_cdk import Duration
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk.assertions import Annotations, Match

from idempotent_constructs import (
    ExtendLease,
    FailurePolicy,
    IdempotencyConfigurationError,
    IdempotencyGuard,
    IdempotencyTable,
    IdempotentStateMachine,
)
from tests.stacks import DOCUMENTS, SAGA_FUNCTIONS
from tests.synth import allows, only_definition, resources, role_statements, stack, template


def workflow(**options):
    def build(s):
        IdempotentStateMachine(s, "Orders", table=IdempotencyTable(s, "Table"), definition=sfn.Pass(s, "Work"), **options)

    return template(build)


def test_by_default_it_is_a_standard_state_machine_that_logs_everything_but_payloads_and_traces():
    tpl = workflow()
    tpl.has_resource_properties(
        "AWS::StepFunctions::StateMachine",
        {
            "StateMachineType": "STANDARD",
            "TracingConfiguration": {"Enabled": True},
            "LoggingConfiguration": {"Level": "ALL", "IncludeExecutionData": False, "Destinations": Match.any_value()},
        },
    )
    assert only_definition(tpl)["StartAt"] == "Idempotency.Acquire"
    assert "'Test/Orders#' & $v" in only_definition(tpl)["States"]["Idempotency.Acquire"]["Arguments"]


def test_the_role_may_do_exactly_the_record_operations_on_the_table_and_invoke_the_key_and_result_functions():
    tpl = workflow()
    (table_id,) = resources(tpl, "AWS::DynamoDB::Table")
    versions = resources(tpl, "AWS::Lambda::Version")
    assert len(versions) == 2
    # Every version of the two library functions the states invoke (an execution started before a deploy
    # calls the version it started with), not the functions' $LATEST nor any other function.
    functions = {version["Properties"]["FunctionName"]["Ref"] for version in versions.values()}
    every_version = [{"Fn::Join": ["", [{"Fn::GetAtt": [function, "Arn"]}, ":*"]]} for function in sorted(functions)]
    statements = role_statements(tpl, "OrdersRole")
    dynamodb = {
        a
        for s in statements
        for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
        if a.startswith("dynamodb:")
    }
    assert dynamodb == {"dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"}
    for statement in statements:
        action = statement["Action"]
        if str(action).startswith("dynamodb:") or "dynamodb:" in str(action):
            assert table_id in str(statement["Resource"]) and "*" not in str(statement["Resource"]).replace("/index/*", "")
        if "lambda:InvokeFunction" in str(action):
            invoked = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
            assert sorted(invoked, key=str) == every_version


def test_the_library_functions_versions_outlive_the_deploys_that_replace_them():
    # Issue 52: an execution in flight across a deploy calls the version its definition names.
    versions = resources(workflow(), "AWS::Lambda::Version")
    assert versions and all(v["DeletionPolicy"] == v["UpdateReplacePolicy"] == "Retain" for v in versions.values())


def test_express_workflows_default_the_lease_to_the_five_minutes_an_express_execution_may_run():
    tpl = workflow(state_machine_type=sfn.StateMachineType.EXPRESS)
    tpl.has_resource_properties("AWS::StepFunctions::StateMachine", {"StateMachineType": "EXPRESS"})
    assert "$now + 300000" in only_definition(tpl)["States"]["Idempotency.Acquire"]["Arguments"]


def test_name_timeout_logs_and_tracing_pass_through():
    def build(s):
        IdempotentStateMachine(
            s,
            "Orders",
            table=IdempotencyTable(s, "Table"),
            definition=sfn.Pass(s, "Work"),
            state_machine_name="orders",
            timeout=Duration.minutes(30),
            logs=sfn.LogOptions(destination=logs.LogGroup(s, "Mine"), level=sfn.LogLevel.ERROR),
            tracing_enabled=False,
        )

    tpl = template(build)
    tpl.has_resource_properties(
        "AWS::StepFunctions::StateMachine",
        {
            "StateMachineName": "orders",
            "TracingConfiguration": {"Enabled": False},
            "LoggingConfiguration": {"Level": "ERROR", "Destinations": Match.any_value()},
        },
    )
    assert only_definition(tpl)["TimeoutSeconds"] == 1800
    assert len(resources(tpl, "AWS::Logs::LogGroup")) == 4  # the given one, the key, result and release functions


@pytest.mark.parametrize("option", ["timeout", "lease", "max_wait"])
def test_fails_when_an_express_duration_exceeds_five_minutes(option):
    with pytest.raises(IdempotencyConfigurationError, match=f"{option}: 10 minutes is longer than the 5 minutes"):
        workflow(state_machine_type=sfn.StateMachineType.EXPRESS, **{option: Duration.minutes(10)})


def test_fails_when_max_wait_outlasts_the_waiting_execution():
    with pytest.raises(IdempotencyConfigurationError, match="max_wait: 2 minutes leaves a waiting duplicate no time"):
        workflow(timeout=Duration.minutes(2), max_wait=Duration.minutes(2))


def test_warns_when_an_express_lease_is_shorter_than_the_longest_run():
    target = stack()
    IdempotentStateMachine(
        target,
        "Orders",
        table=IdempotencyTable(target, "Table"),
        definition=sfn.Pass(target, "Work"),
        state_machine_type=sfn.StateMachineType.EXPRESS,
        lease=Duration.minutes(1),
        max_wait=Duration.seconds(30),
    )
    Annotations.from_stack(target).has_warning("/Test/Orders", Match.string_like_regexp("may take over an Express holder"))


def test_standard_workflows_get_a_synth_time_name_and_check_lapsed_holders_with_describe_execution():
    tpl = workflow()
    (machine,) = resources(tpl, "AWS::StepFunctions::StateMachine").values()
    name = machine["Properties"]["StateMachineName"]
    assert name.startswith("Test_Orders-") and len(name) <= 80
    assert "Idempotency.OwnerCheck" in only_definition(tpl)["States"]
    assert f":execution:{name}:*" in json.dumps(role_statements(tpl, "OrdersRole"))


def trusted_sources(tpl) -> list[str]:
    """The state machines the workflow's role trusts Step Functions for, each the end of its ARN."""
    (role,) = [r for logical_id, r in resources(tpl, "AWS::IAM::Role").items() if logical_id.startswith("OrdersRole")]
    (statement,) = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert statement["Principal"] == {"Service": "states.amazonaws.com"}
    arns = statement["Condition"]["ArnLike"]["aws:SourceArn"]
    return [arn["Fn::Join"][1][-1] for arn in (arns if isinstance(arns, list) else [arns])]


def test_the_role_trusts_only_its_own_state_machine_where_its_name_is_known_at_synth():
    # Its ARN, or a version's or an alias's of it (which append ":{version or alias}").
    assert trusted_sources(workflow(state_machine_name="orders")) == [":stateMachine:orders*"]
    (machine,) = resources(workflow(), "AWS::StepFunctions::StateMachine").values()  # Standard: a synth-time name
    assert trusted_sources(workflow()) == [f":stateMachine:{machine['Properties']['StateMachineName']}*"]
    # An Express workflow left unnamed is named by CloudFormation: any state machine of this account and Region.
    assert trusted_sources(workflow(state_machine_type=sfn.StateMachineType.EXPRESS)) == [":stateMachine:*"]


def test_express_workflows_rely_on_the_lease_alone():
    tpl = workflow(state_machine_type=sfn.StateMachineType.EXPRESS)
    assert "Idempotency.OwnerCheck" not in only_definition(tpl)["States"]
    assert "states:DescribeExecution" not in json.dumps(role_statements(tpl, "OrdersRole"))


def test_each_further_workflow_adds_only_its_state_machine_its_role_with_its_permissions_inline_and_log_group():
    def count(n):
        def build(s):
            table = IdempotencyTable(s, "Table")
            for i in range(n):
                IdempotentStateMachine(s, f"Flow{i}", table=table, definition=sfn.Pass(s, f"Work{i}"))

        resources_by_type: dict[str, int] = {}
        for resource in template(build).to_json()["Resources"].values():
            resources_by_type[resource["Type"]] = resources_by_type.get(resource["Type"], 0) + 1
        return resources_by_type

    one, three = count(1), count(3)
    growth = {kind: three.get(kind, 0) - one.get(kind, 0) for kind in set(one) | set(three)}
    assert {kind: n for kind, n in growth.items() if n} == {
        "AWS::StepFunctions::StateMachine": 2,
        "AWS::IAM::Role": 2,
        "AWS::Logs::LogGroup": 2,
    }


def test_a_workflow_may_touch_only_its_own_namespaces_items_as_its_synthesized_policy_says():
    def build(s):
        table = IdempotencyTable(s, "Table")
        for name in ("A", "B"):
            IdempotentStateMachine(s, name, table=table, definition=sfn.Pass(s, f"{name}Work"), namespace=f"orders/{name}")

    tpl = template(build)
    (table_id,) = resources(tpl, "AWS::DynamoDB::Table")
    table_arn = {"Fn::GetAtt": [table_id, "Arn"]}
    statements_of_a = role_statements(tpl, "ARole")
    assert role_statements(tpl, "BRole") and not any("orders/B" in json.dumps(s) for s in statements_of_a)
    for action in ("dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"):
        assert allows(statements_of_a, action, table_arn, "orders/A#0f3a")
        assert not allows(statements_of_a, action, table_arn, "orders/B#0f3a")
        assert not allows(statements_of_a, action, table_arn, "orders/AB#0f3a")
    for action in ("dynamodb:PutItem", "dynamodb:Scan", "dynamodb:Query", "dynamodb:BatchWriteItem", "dynamodb:DeleteTable"):
        assert not allows(statements_of_a, action, table_arn, "orders/A#0f3a")


def test_query_language_passes_through_and_a_jsonata_definition_is_accepted():
    def build(s):
        IdempotentStateMachine(
            s,
            "Orders",
            table=IdempotencyTable(s, "Table"),
            query_language=sfn.QueryLanguage.JSONATA,
            definition=sfn.Pass.jsonata(s, "Work", outputs="{% {'done': true} %}"),
        )

    definition = only_definition(template(build))
    (body,) = definition["States"]["Idempotency.Body"]["Branches"]
    assert definition["QueryLanguage"] == "JSONata" and body["States"]["Work"]["Output"] == "{% {'done': true} %}"


def test_fails_when_a_jsonata_state_machine_holds_states_written_in_jsonpath():
    def build(s):
        IdempotentStateMachine(
            s,
            "Orders",
            table=IdempotencyTable(s, "Table"),
            query_language=sfn.QueryLanguage.JSONATA,
            definition=sfn.Pass(s, "Classic", parameters={"order.$": "$.order"}),
        )

    with pytest.raises(IdempotencyConfigurationError, match=r"states Classic use JSONPath fields .* \.jsonata\(\) factories"):
        template(build)


# --- definition_body: an Amazon States Language document (issue 23) ---------------------------------
def document_workflow(build_options):
    """The template of a workflow made of a document, ``build_options(stack)`` giving its options."""

    def build(s):
        IdempotentStateMachine(s, "Trips", table=IdempotencyTable(s, "Table"), **build_options(s))

    return template(build)


def saga_options(s):
    function = lambda_.Function(
        s, "Reserve", runtime=lambda_.Runtime.PYTHON_3_12, handler="index.handler", code=lambda_.Code.from_inline("x")
    )
    return {
        "definition_body": sfn.DefinitionBody.from_file(str(DOCUMENTS / "saga-pattern-sam.asl.json")),
        "definition_substitutions": {
            **{name: function.function_arn for name in SAGA_FUNCTIONS},
            "snsTopicArn": "arn:aws:sns:us-east-1:123456789012:trips",
        },
    }


def test_a_document_from_a_file_is_the_guards_body_as_it_is_with_its_placeholders_resolved_to_tokens():
    tpl = document_workflow(saga_options)
    definition = only_definition(tpl)
    body = definition["States"]["Idempotency.Body"]
    original = json.loads((DOCUMENTS / "saga-pattern-sam.asl.json").read_text())
    assert body["Branches"][0]["StartAt"] == original["StartAt"]
    assert set(body["Branches"][0]["States"]) == set(original["States"])
    assert body["Branches"][0]["States"]["Reservation Failed"] == original["States"]["Reservation Failed"]
    # The function's ARN, a token, is rendered by CloudFormation into the definition.
    (function,) = [logical_id for logical_id in resources(tpl, "AWS::Lambda::Function") if logical_id.startswith("Reserve")]
    joined = json.dumps(resources(tpl, "AWS::StepFunctions::StateMachine"))
    assert f'"Fn::GetAtt": ["{function}", "Arn"]' in joined
    functions = {
        state["Parameters"]["FunctionName"]
        for state in body["Branches"][0]["States"].values()
        if "FunctionName" in state.get("Parameters", {})
    }
    assert functions == {f"arn:aws:lambda:us-east-1:123456789012:function:{function}"}  # as the template renders it


def test_the_role_gets_no_permission_for_what_the_document_calls_as_with_sfn_state_machine():
    tpl = document_workflow(saga_options)
    (function,) = [logical_id for logical_id in resources(tpl, "AWS::Lambda::Function") if logical_id.startswith("Reserve")]
    statements = role_statements(tpl, "")
    assert not allows(statements, "lambda:InvokeFunction", {"Fn::GetAtt": [function, "Arn"]}, "")
    assert not allows(statements, "sns:Publish", "arn:aws:sns:us-east-1:123456789012:trips", "")


def test_a_jsonata_documents_language_and_timeout_are_the_state_machines_defaults():
    document = {
        "QueryLanguage": "JSONata",
        "TimeoutSeconds": 120,
        "StartAt": "Work",
        "States": {"Work": {"Type": "Pass", "Output": "{% $states.input %}", "End": True}},
    }
    tpl = document_workflow(lambda s: {"definition_body": document})
    definition = only_definition(tpl)
    assert (definition["QueryLanguage"], definition["TimeoutSeconds"]) == ("JSONata", 120)
    assert definition["States"]["Idempotency.Body"]["Branches"][0]["States"]["Work"]["QueryLanguage"] == "JSONata"


def test_definition_body_from_a_chain_is_the_same_as_definition():
    by_body = only_definition(
        document_workflow(lambda s: {"definition_body": sfn.DefinitionBody.from_chainable(sfn.Pass(s, "Work"))})
    )
    by_definition = only_definition(document_workflow(lambda s: {"definition": sfn.Pass(s, "Work")}))
    assert by_body == by_definition


@pytest.mark.parametrize("given", [{}, {"definition": True, "definition_body": True}])
def test_fails_unless_exactly_one_of_definition_and_definition_body_is_given(given):
    def options(s):
        found = {}
        if given.get("definition"):
            found["definition"] = sfn.Pass(s, "Work")
        if given.get("definition_body"):
            found["definition_body"] = sfn.DefinitionBody.from_file(str(DOCUMENTS / "refund.asl.json"))
        return found

    with pytest.raises(IdempotencyConfigurationError) as raised:
        document_workflow(options)
    assert raised.value.problems[0].startswith("definition, definition_body: give exactly one: definition=first.next(second)")


def test_fails_when_substitutions_come_with_a_chain():
    with pytest.raises(IdempotencyConfigurationError) as raised:
        document_workflow(lambda s: {"definition": sfn.Pass(s, "Work"), "definition_substitutions": {"Fn": "arn"}})
    assert raised.value.problems == [
        "definition_substitutions: only a document (DefinitionBody.from_file or from_string) has ${...} placeholders; "
        "drop definition_substitutions"
    ]


def test_fails_when_a_jsonata_state_machine_is_asked_for_a_jsonpath_document():
    with pytest.raises(IdempotencyConfigurationError) as raised:
        document_workflow(lambda s: {**saga_options(s), "query_language": sfn.QueryLanguage.JSONATA})
    assert raised.value.problems == [
        f"query_language: QueryLanguage.JSONATA, but {DOCUMENTS / 'saga-pattern-sam.asl.json'} is written in JSONPath "
        "(its top level declares no QueryLanguage JSONata), whose states a JSONata state machine refuses; leave "
        "query_language out"
    ]


def test_fails_with_every_problem_of_the_document_and_the_options_at_once_under_the_workflows_path():
    text = (
        '{"QueryLanguage": "JSONata", "StartAt": "Idempotency.Acquire", "States": {'
        '"Idempotency.Acquire": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", '
        '"Arguments": {"FunctionName": "${Fn}", "Payload": "{% order %}"}, "Next": "Missing"}}}'
    )

    def options(s):
        return {
            "definition_body": sfn.DefinitionBody.from_string(text),
            "definition_substitutions": {"Fn": "arn:f"},
            "max_wait": Duration.minutes(6),
            "state_machine_type": sfn.StateMachineType.EXPRESS,
        }

    with pytest.raises(IdempotencyConfigurationError) as raised:
        document_workflow(options)
    assert raised.value.construct_path == "Test/Trips"
    assert [problem.split(":")[0] for problem in raised.value.problems] == [
        "definition_body",  # the transition to Missing
        "definition_body",  # the guard's name
        "definition_body",  # the JSONata Step Functions refuses
        "max_wait",
        "max_wait",
    ]
    assert raised.value.problems[1] == (
        "definition_body: the state 'Idempotency.Acquire' (/States/Idempotency.Acquire) has the name of a state the guard "
        "generates (those starting with 'Idempotency.'); rename it in the document"
    )


def test_fails_with_the_name_of_a_placeholder_left_without_a_value():
    with pytest.raises(IdempotencyConfigurationError) as raised:
        document_workflow(lambda s: {"definition_body": sfn.DefinitionBody.from_file(str(DOCUMENTS / "refund.asl.json"))})
    assert raised.value.problems == [
        f"definition_substitutions: {DOCUMENTS / 'refund.asl.json'} uses ${{RefundFunction}}, which has no value; "
        'pass definition_substitutions={"RefundFunction": ...}'
    ]


def released_when_the_execution_fails(s, chain_of, **options):
    return IdempotentStateMachine(
        s,
        "Orders",
        table=IdempotencyTable(s, "Table"),
        definition=chain_of(s),
        on_failure=FailurePolicy.RELEASE_WHEN_EXECUTION_FAILS,
        **options,
    )


def test_a_workflow_released_when_its_execution_fails_runs_its_chain_bare_between_acquire_and_complete():
    def chain_of(s):
        return sfn.Pass(s, "Validate").next(sfn.Pass(s, "Charge"))

    definition = only_definition(template(lambda s: released_when_the_execution_fails(s, chain_of)))
    states = definition["States"]
    assert "Idempotency.Body" not in states and "Idempotency.RecordFailure" not in states
    assert states["Idempotency.Acquire"]["Next"] == "Validate" and states["Charge"]["Next"] == "Idempotency.Complete"
    # Nothing of the guard's catches the chain's failures: the execution fails, and its event frees the key.
    assert "Catch" not in states["Validate"] and "Catch" not in states["Charge"]
    assert states["Idempotency.Complete"]["Output"] == "{% $states.input %}"


@pytest.mark.parametrize(
    "chain_of, options, words",
    [
        (lambda s: sfn.Pass(s, "Work"), {"state_machine_type": sfn.StateMachineType.EXPRESS}, "only a Standard workflow's"),
        (
            lambda s: (
                sfn.Choice(s, "Paid?")
                .when(sfn.Condition.is_present("$.paid"), sfn.Succeed(s, "Done"))
                .otherwise(sfn.Pass(s, "Charge"))
                .afterwards()
            ),
            {},
            "but it also ends at 'Done'",
        ),
    ],
    ids=["an Express workflow", "a chain that may end at a Succeed"],
)
def test_fails_when_release_when_the_execution_fails_cannot_free_the_key(chain_of, options, words):
    with pytest.raises(IdempotencyConfigurationError, match=words):
        released_when_the_execution_fails(stack(), chain_of, **options)


def test_fails_when_an_express_workflow_is_to_keep_its_key_for_a_redrive_which_only_standard_executions_have():
    with pytest.raises(IdempotencyConfigurationError, match="which only a Standard execution can have"):
        workflow(on_failure=FailurePolicy.KEEP_FOR_REDRIVE, state_machine_type=sfn.StateMachineType.EXPRESS)


@pytest.mark.parametrize("once_per_execution", [False, True])
def test_fails_when_a_guard_of_your_own_is_to_be_released_when_the_execution_fails(once_per_execution):
    # Even once per execution: a Catch around it may handle its failure, and its state machine may be Express.
    s = stack()
    with pytest.raises(IdempotencyConfigurationError, match="a guard of your own cannot know of"):
        IdempotencyGuard(
            s,
            "Once",
            table=IdempotencyTable(s, "Table"),
            body=sfn.Pass(s, "Work"),
            once_per_execution=once_per_execution,
            on_failure=FailurePolicy.RELEASE_WHEN_EXECUTION_FAILS,
        )


def test_a_guard_made_in_a_workflow_after_it_is_a_guard_of_your_own():
    # Only the workflow's guard of the whole is its execution's; one placed in its scope later is not.
    s = stack()
    table = IdempotencyTable(s, "Table")
    orders = IdempotentStateMachine(s, "Orders", table=table, definition=sfn.Pass(s, "Work"))
    assert orders.guard.config.whole_workflow
    with pytest.raises(IdempotencyConfigurationError, match="a guard of your own cannot know of"):
        IdempotencyGuard(
            orders, "Later", table=table, body=sfn.Pass(s, "More"), on_failure=FailurePolicy.RELEASE_WHEN_EXECUTION_FAILS
        )


def test_a_workflow_that_keeps_its_key_for_a_redrive_runs_its_chain_bare_and_no_release_function_frees_it():
    def build(s):
        chain = sfn.Pass(s, "Validate").next(sfn.Pass(s, "Charge"))
        table = IdempotencyTable(s, "Table")
        workflow = IdempotentStateMachine(s, "Orders", table=table, definition=chain, on_failure=FailurePolicy.KEEP_FOR_REDRIVE)
        assert workflow.release_function is None

    tpl = template(build)
    states = only_definition(tpl)["States"]
    assert states["Idempotency.Acquire"]["Next"] == "Validate" and states["Charge"]["Next"] == "Idempotency.Complete"
    assert "Catch" not in states["Validate"] and "Catch" not in states["Charge"]
    assert not resources(tpl, "AWS::Events::Rule")  # no status event frees the key
    # Past the lease, the owner check finds a holder that ended but can be redriven: the duplicate is told so.
    (redrivable, ended) = states["Idempotency.OwnerRunning"]["Choices"]
    assert "RedriveStatus in ['REDRIVABLE', 'REDRIVABLE_BY_MAP_RUN']" in redrivable["Condition"]
    assert redrivable["Next"] == "Idempotency.AwaitingRedrive" and ended["Next"] == "Idempotency.Takeover"
    assert states["Idempotency.AwaitingRedrive"]["Error"] == "Idempotency.AwaitingRedrive"
    assert "'RedriveStatus': $states.result.RedriveStatus" in json.dumps(states["Idempotency.OwnerCheck"]["Assign"])


def test_an_extend_state_in_a_parallel_of_a_chain_released_when_the_execution_fails_is_the_workflows():
    def chain_of(s):
        both = sfn.Parallel(s, "Both").branch(sfn.Pass(s, "Poll").next(ExtendLease(s, "Extend"))).branch(sfn.Pass(s, "Other"))
        return sfn.Pass(s, "First").next(both)

    definition = only_definition(template(lambda s: released_when_the_execution_fails(s, chain_of)))
    (branch, _) = definition["States"]["Both"]["Branches"]
    assert branch["States"]["Poll"]["Next"] == "Idempotency.Extend" and "Idempotency.Extend" in branch["States"]


def test_fails_when_a_guard_in_the_chain_keeps_its_key_for_a_redrive_that_the_workflows_own_policy_defeats():
    def build(s):
        table = IdempotencyTable(s, "Table")
        step = IdempotencyGuard(
            s,
            "EmailOnce",
            table=table,
            body=sfn.Pass(s, "Email"),
            on_failure=FailurePolicy.KEEP_FOR_REDRIVE,
            owner_state_machine_name="Newsletter",
        )
        IdempotentStateMachine(s, "Newsletter", table=table, definition=step, state_machine_name="Newsletter")

    with pytest.raises(IdempotencyConfigurationError, match=r"pass on_failure=FailurePolicy\.KEEP_FOR_REDRIVE to the workflow"):
        build(stack())
