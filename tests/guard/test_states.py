"""idempotent_constructs/guard (acquire, route, wait, finish): the states a guard generates, phase by phase."""

from __future__ import annotations

import json
import re

import pytest
from aws_cdk import Duration
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks

from idempotent_constructs import (
    ExtendLease,
    FailurePolicy,
    IdempotencyGuard,
    IdempotencyKey,
    IdempotencyPayload,
    IdempotencyTable,
    InFlightPolicy,
)
from idempotent_constructs._jsonata import engine as jsonata_engine
from idempotent_constructs.guard import STATE_NAMES, poll_schedule
from idempotent_constructs.guard.protocol import TRANSIENT_DYNAMODB_ERRORS
from idempotent_constructs.guard.tasks import retry_transient, transient_retrier
from tests.conftest import ROOT
from tests.guard.build import guarded
from tests.synth import only_definition, resources, stack, template


def test_by_default_the_guard_acquires_the_key_natively_runs_the_body_and_completes():
    definition = guarded()
    states = definition["States"]
    assert definition["StartAt"] == "ChargeOnce.Acquire" and "ChargeOnce.Begin" not in states
    assert all(name.startswith("ChargeOnce.") for name in states if name != "Charge")
    acquire = states["ChargeOnce.Acquire"]
    assert (acquire["QueryLanguage"], acquire["Output"], acquire["Next"]) == ("JSONata", "{% $states.input %}", "ChargeOnce.Body")
    assert "'Test/ChargeOnce#' & $v" in acquire["Arguments"]  # the namespace prefixes the id
    assert "':key_format': {'N': '4'}" in acquire["Arguments"]  # the canonical key's version, with each record
    assert acquire["Comment"] == "idempotency key: format 4, namespace 'Test/ChargeOnce', key whole_input, payload whole_input"
    assert "$now + 900000" in acquire["Arguments"]  # the lease
    assert "$floor($millis() / 1000) + 86400" in states["ChargeOnce.Complete"]["Arguments"]  # kept a day from completion
    body = states["ChargeOnce.Body"]
    assert body["Type"] == "Parallel" and body["Branches"][0]["StartAt"] == "Charge"
    assert not {"QueryLanguage", "InputPath", "ResultPath", "Output", "Arguments"} & set(body)  # fits either language
    assert states["ChargeOnce.Complete"]["Output"] == "{% $states.input[0] %}"
    replay = states["ChargeOnce.Replay"]  # a Map over no items (an inline result) or one (Restore's)
    assert replay["Type"] == "Map" and "? [] : [0]" in replay["Items"] and "$parse(" in replay["Output"]
    assert "ChargeOnce.Release" in states and "ChargeOnce.RecordFailure" not in states
    assert not any(state.get("Resource", "").startswith("arn:aws:states:::lambda") for state in states.values())


def guarded_task(body=None, **options):
    """The definition of a state machine of one guard whose body is ``body`` (built given the stack; by
    default one Task state, ``Charge``), with the guard's ``options``."""

    def build(s):
        task = body(s) if body else tasks.EvaluateExpression(s, "Charge", expression="$.amount * 2")
        guard = IdempotencyGuard(s, "ChargeOnce", table=IdempotencyTable(s, "Table"), body=task, **options)
        sfn.StateMachine(s, "Machine", definition_body=sfn.DefinitionBody.from_chainable(guard))

    return only_definition(template(build))


@pytest.mark.parametrize(
    "body",
    [
        None,
        lambda s: sfn.Parallel(s, "Charge").branch(tasks.EvaluateExpression(s, "ChargeCard", expression="$.amount * 2")),
        lambda s: sfn.Map(s, "Charge", items_path="$.items").item_processor(sfn.Pass(s, "ChargeItem")),
    ],
    ids=["Task", "Parallel", "Map"],
)
@pytest.mark.parametrize("once_per_execution", [False, True])
def test_a_body_of_one_task_parallel_or_map_state_runs_bare_between_acquire_and_complete(body, once_per_execution):
    states = guarded_task(body, once_per_execution=once_per_execution)["States"]
    assert "ChargeOnce.Body" not in states
    assert states["ChargeOnce.Acquire"]["Next"] == "Charge" and states["Charge"]["Next"] == "ChargeOnce.Complete"
    assert states["ChargeOnce.Takeover"]["Next"] == "Charge"
    # The guard's Catch, last, for whatever the state raises; the state's output is the chain's.
    assert states["Charge"]["Catch"][-1] == {"ErrorEquals": ["States.ALL"], "Next": "ChargeOnce.Release"}
    assert states["ChargeOnce.Complete"]["Output"] == "{% $states.input %}"
    assert "$states.input[0]" not in json.dumps([states["ChargeOnce.Complete"], states["ChargeOnce.StoreResult"]])


def test_a_body_of_one_task_wired_on_after_the_guard_was_made_runs_in_the_guards_body_parallel():
    def build(s):
        submit = tasks.EvaluateExpression(s, "Submit", expression="$.amount * 2")
        guard = IdempotencyGuard(s, "ChargeOnce", table=IdempotencyTable(s, "Table"), body=submit)
        assert guard.state_name("Body") == "Submit"  # as the body is now
        submit.next(guard.extend_lease("KeepAlive"))  # the guard settles its body as it joins a graph
        sfn.StateMachine(s, "Machine", definition_body=sfn.DefinitionBody.from_chainable(guard))
        assert guard.state_name("Body") == "ChargeOnce.Body" and guard.body_entered == "ParallelStateEntered"

    states = only_definition(template(build))["States"]
    assert states["ChargeOnce.Body"]["Branches"][0]["States"]["Submit"]["Next"] == "ChargeOnce.KeepAlive"
    assert states["ChargeOnce.Complete"]["Output"] == "{% $states.input[0] %}"


def test_the_extend_lease_states_of_a_parallel_that_runs_bare_are_the_guards():
    def build(s):
        keep_alive = ExtendLease(s, "KeepAlive")
        fan = sfn.Parallel(s, "Charge").branch(sfn.Pass(s, "Left").next(keep_alive), sfn.Pass(s, "Right"))
        guard = IdempotencyGuard(s, "ChargeOnce", table=IdempotencyTable(s, "Table"), body=fan)
        sfn.StateMachine(s, "Machine", definition_body=sfn.DefinitionBody.from_chainable(guard))
        assert guard.extend_states == ["KeepAlive"] and keep_alive.in_body
        assert guard.state_name("Body") == "Charge" and guard.body_entered == "ParallelStateEntered"

    states = only_definition(template(build))["States"]
    assert "ChargeOnce.KeepAlive" in states["Charge"]["Branches"][0]["States"]


@pytest.mark.parametrize(
    "why, body",
    [
        ("a Task with a Catch of its own is a chain of two states", lambda s: caught_task(s)),
        ("a Pass state cannot catch", lambda s: sfn.Pass(s, "Charge")),
        (
            "a Task's Assign would assign variables a replay does not",
            lambda s: tasks.EvaluateExpression(s, "Charge", expression="$.amount * 2", assign={"charged": "$"}),
        ),
    ],
)
def test_every_other_body_runs_in_the_guards_body_parallel(why, body):
    states = guarded_task(body)["States"]
    assert states["ChargeOnce.Body"]["Type"] == "Parallel", why
    assert states["ChargeOnce.Complete"]["Output"] == "{% $states.input[0] %}", why


def caught_task(s):
    task = tasks.EvaluateExpression(s, "Charge", expression="$.amount * 2")
    return task.add_catch(sfn.Pass(s, "Declined"), errors=["States.ALL"])


def test_waiting_polls_with_backoff_bounded_by_max_wait():
    states = guarded(poll_interval=Duration.seconds(2), max_wait=Duration.minutes(10))["States"]
    (retry,) = states["ChargeOnce.Await"]["Retry"]
    schedule = poll_schedule(2, 600)
    assert retry == {
        "ErrorEquals": ["Idempotency.StillInFlight"],
        "IntervalSeconds": 2,
        "BackoffRate": 2,
        "MaxAttempts": schedule.attempts,
        "MaxDelaySeconds": schedule.max_delay,
        "JitterStrategy": "FULL",
    }
    (caught,) = states["ChargeOnce.Await"]["Catch"]
    assert caught["ErrorEquals"] == ["Idempotency.StillInFlight", "Idempotency.WaitedOut"]
    assert caught["Next"] == "ChargeOnce.InFlight"
    assert f"EnteredTime) + {schedule.deadline * 1000}" in json.dumps(states["ChargeOnce.Backoff"]["Assign"])


def test_with_the_fail_policy_there_is_no_poll_loop():
    states = guarded(on_in_flight=InFlightPolicy.FAIL)["States"]
    assert "ChargeOnce.Await" not in states
    held = [choice for choice in states["ChargeOnce.Route"]["Choices"] if choice["Next"] == "ChargeOnce.InFlight"]
    assert len(held) == 1


def test_with_the_cache_policy_failures_are_recorded_and_replayed():
    states = guarded(on_failure=FailurePolicy.CACHE)["States"]
    assert "ChargeOnce.Release" not in states
    assert states["ChargeOnce.Body"]["Catch"][0]["Next"] == "ChargeOnce.RecordFailure"
    replay = states["ChargeOnce.ReplayFailure"]
    assert replay["Type"] == "Fail" and replay["Error"].endswith(".record.error.S %}")


def test_with_cache_errors_only_the_listed_errors_are_remembered_and_others_release_the_key():
    states = guarded(on_failure=FailurePolicy.CACHE, cache_errors=["CardDeclined", "Idempotency.BodyFailed"])["States"]
    choice = states["ChargeOnce.CacheOrRelease"]
    assert choice["Default"] == "ChargeOnce.Release"
    assert choice["Choices"][0]["Condition"].endswith(".Error in ['CardDeclined', 'Idempotency.BodyFailed'] %}")
    assert choice["Choices"][0]["Next"] == "ChargeOnce.RecordFailure"


def test_only_a_jmespath_key_calls_the_key_function_before_the_acquire():
    definition = guarded(key=IdempotencyKey.from_jmespath("order.id"))
    states = definition["States"]
    assert definition["StartAt"] == "ChargeOnce.ComputeKey" and "ChargeOnce.AcquireComputed" not in states
    payload = states["ChargeOnce.ComputeKey"]["Arguments"]
    assert "'kind': 'jmespath', 'expression': $parse('\"order.id\"')" in payload
    # Too large to send: sent as null, and the function fails Idempotency.InputTooLarge.
    assert "$fits ? $states.input : null" in payload and "'too_large': $not($fits)" in payload
    assert states["ChargeOnce.ComputeKey"]["Next"] == "ChargeOnce.Acquire"
    assert states["ChargeOnce.ComputeKey"]["Catch"][0] == {
        "ErrorEquals": ["Idempotency.KeyMissing", "States.QueryEvaluationError"],
        "Next": "ChargeOnce.KeyMissing",
    }


def test_a_key_the_acquire_cannot_compute_natively_is_computed_by_the_key_function_which_tells_a_missing_key():
    states = guarded()["States"]
    (computing,) = [c for c in states["ChargeOnce.Acquire"]["Catch"] if c["ErrorEquals"] == ["States.QueryEvaluationError"]]
    assert computing["Next"] == "ChargeOnce.ComputeKey"
    compute = states["ChargeOnce.ComputeKey"]
    assert "'kind': 'whole_input'" in compute["Arguments"] and compute["Next"] == "ChargeOnce.AcquireComputed"
    assert compute["Catch"][0] == {
        "ErrorEquals": ["Idempotency.KeyMissing", "States.QueryEvaluationError"],
        "Next": "ChargeOnce.KeyMissing",
    }
    computed = states["ChargeOnce.AcquireComputed"]
    assert computed["Next"] == "ChargeOnce.Body" and "$native(" not in computed["Arguments"]
    assert states["ChargeOnce.KeyMissing"]["Error"] == "Idempotency.KeyMissing"


def test_a_jsonata_key_sends_its_selection_to_the_key_function_as_it_is():
    states = guarded(key=IdempotencyKey.from_jsonata("$states.input.order.id"))["States"]
    request = states["ChargeOnce.ComputeKey"]["Arguments"]
    assert request.startswith("{% ($selection := ($states.input.order.id); ") and "'selection': $selection}" in request


def test_step_functions_own_errors_are_renamed_because_no_fail_state_may_raise_them():
    release = guarded()["States"]["ChargeOnce.Release"]
    assert (
        "$substring($e.Error, 0, 7) = 'States.' ? {'Error': 'Idempotency.BodyFailed', 'Cause': $string($e)}" in release["Output"]
    )


def own_record_rule(states):
    """The route's rule for a record in progress that is this run's own (B12): its condition."""
    (rule,) = [
        c
        for c in states["ChargeOnce.Route"]["Choices"]
        if c["Next"] == "ChargeOnce.Takeover" and "'INPROGRESS'" in c["Condition"]
    ]
    return rule["Condition"]


def test_each_write_that_takes_the_key_writes_its_state_entrys_token_so_that_a_retried_write_knows_its_own_record():
    definition = guarded()
    states = definition["States"]
    assert definition["StartAt"] == "ChargeOnce.Acquire" and "ChargeOnce.Begin" not in states
    variable = "$" + next(iter(states["ChargeOnce.Acquire"]["Assign"]))
    # The execution, the state and the time it was entered: the same in every retry of the write.
    entry = "$states.context.Execution.Id & '#' & $states.context.State.Name & '@' & $states.context.State.EnteredTime"
    for name in ("Acquire", "AcquireComputed", "Takeover"):
        write = states[f"ChargeOnce.{name}"]
        assert "$uuid()" not in write["Arguments"] and f"':owner': {{'S': {entry}}}" in write["Arguments"], name
        # Refused by its condition, the run keeps the token it wrote, computed again in the same entry.
        (refused,) = [c for c in write["Catch"] if c["Next"] == "ChargeOnce.Inspect"]
        assert f"{{'owner': {entry}}}" in refused["Assign"][variable[1:]], name
    assert "owner" not in states["ChargeOnce.ComputeKey"]["Assign"][variable[1:]]
    # The route takes a record in progress under it at once.
    assert (
        own_record_rule(states)
        == f"{{% {variable}.record.status.S = 'INPROGRESS' and {variable}.record.owner.S = {variable}.owner %}}"
    )


def test_a_guard_in_an_inline_map_draws_its_owner_token_before_its_first_write_for_iterations_entered_at_once():
    states = guarded(in_inline_map=True)["States"]
    variable = "$" + next(iter(states["ChargeOnce.Begin"]["Assign"]))
    # Begin draws it once; ComputeKey, where a run goes next after Acquire raised, draws a new one.
    begin = states["ChargeOnce.Begin"]
    assert (begin["Type"], begin["QueryLanguage"], "Output" in begin) == ("Pass", "JSONata", False)
    drawn = "$states.context.Execution.Id & '#' & $uuid()"
    assert begin["Assign"] == {variable[1:]: "{% {'owner': " + drawn + "} %}"}
    assert drawn in states["ChargeOnce.ComputeKey"]["Assign"][variable[1:]]
    # Every attempt of every write that makes the run the holder writes that token, never one of its own.
    for name in ("Acquire", "AcquireComputed", "Takeover"):
        arguments = states[f"ChargeOnce.{name}"]["Arguments"]
        assert "$uuid()" not in arguments and f"':owner': {{'S': {variable}.owner}}" in arguments, name
    # A refused Acquire keeps it, and the route takes a record in progress under it at once.
    (refused,) = [c for c in states["ChargeOnce.Acquire"]["Catch"] if c["Next"] == "ChargeOnce.Inspect"]
    assert f"{{'owner': {variable}.owner}}" in refused["Assign"][variable[1:]]
    # A JMESPath key starts with ComputeKey, which draws it.
    jmespath = guarded(key=IdempotencyKey.from_jmespath("id"), in_inline_map=True)
    assert jmespath["StartAt"] == "ChargeOnce.ComputeKey" and "ChargeOnce.Begin" not in jmespath["States"]


def test_a_guard_that_runs_once_per_execution_knows_its_record_by_its_writes_token_or_once_redriven_by_its_execution():
    # An Express execution that AWS restarts may keep its id while its first attempt runs (explore/: the
    # mutation own-by-execution, the rule this guard had before, lets the restart take the running holder's key);
    # only an ended Standard execution is redriven, so a redriven one's earlier attempt is over.
    once, other = guarded(once_per_execution=True)["States"], guarded()["States"]
    assert once["ChargeOnce.Acquire"]["Arguments"] == other["ChargeOnce.Acquire"]["Arguments"]
    assert "$uuid()" not in once["ChargeOnce.Takeover"]["Arguments"]
    variable = "$" + next(iter(once["ChargeOnce.Acquire"]["Assign"]))
    assert own_record_rule(once) == (
        f"{{% {variable}.record.status.S = 'INPROGRESS' and ({variable}.record.owner.S = {variable}.owner or "
        "($exists($states.context.Execution.RedriveCount) and $states.context.Execution.RedriveCount > 0 and "
        f"$substringBefore({variable}.record.owner.S, '#') = $states.context.Execution.Id)) %}}"
    )


def test_without_an_owner_state_machine_a_lapsed_lease_is_taken_over_without_asking():
    states = guarded()["States"]
    assert "ChargeOnce.OwnerCheck" not in states
    assert states["ChargeOnce.Route"]["Default"] == "ChargeOnce.Takeover"


def test_with_an_owner_state_machine_a_lapsed_lease_is_checked_with_describe_execution_on_its_executions_only():
    def build(s):
        guard = IdempotencyGuard(
            s,
            "ChargeOnce",
            table=IdempotencyTable(s, "Table"),
            body=sfn.Pass(s, "Charge"),
            owner_state_machine_name="orders",
        )
        sfn.StateMachine(s, "Machine", definition_body=sfn.DefinitionBody.from_chainable(guard), state_machine_name="orders")

    tpl = template(build)
    states = only_definition(tpl)["States"]
    check = states["ChargeOnce.OwnerCheck"]
    assert check["Resource"].endswith(":states:::aws-sdk:sfn:describeExecution")
    assert check["Arguments"]["ExecutionArn"].startswith("{% $substringBefore($idempotency_")
    assert check["Arguments"]["IncludedData"] == "METADATA_ONLY"  # never the holder's input, however large
    assert "ChargeOnce.PollOwner" in states["ChargeOnce.Await"]["Branches"][0]["States"]
    statements = [
        st
        for p in resources(tpl, "AWS::IAM::Policy").values()
        for st in p["Properties"]["PolicyDocument"]["Statement"]
        if st["Action"] == "states:DescribeExecution"
    ]
    assert len(statements) == 1
    assert ":execution:orders:*" in str(statements[0]["Resource"])


def test_every_state_a_guard_generates_is_named_in_state_names():
    def states_of(definition):
        for name, state in definition["States"].items():
            yield name
            for branch in state.get("Branches", []):
                yield from states_of(branch)

    names = set()
    for options in (
        {"on_failure": FailurePolicy.CACHE, "cache_errors": ["Boom"], "owner_state_machine_name": "orders"},
        {"on_in_flight": InFlightPolicy.FAIL},
    ):
        names |= {name for name in states_of(guarded(**options)) if name != "Charge"}
    assert {name.removeprefix("ChargeOnce.") for name in names} <= set(STATE_NAMES)
    assert all(name.startswith("ChargeOnce.") for name in names)


def test_every_guard_of_a_stack_shares_one_result_function_and_one_key_function():
    def build(s):
        table = IdempotencyTable(s, "Table")
        key = IdempotencyKey.from_jmespath("id")
        chain = sfn.Chain.start(IdempotencyGuard(s, "A", table=table, body=sfn.Pass(s, "PA"), key=key))
        chain = chain.next(IdempotencyGuard(s, "B", table=table, body=sfn.Pass(s, "PB"), key=key))
        sfn.StateMachine(s, "Machine", definition_body=sfn.DefinitionBody.from_chainable(chain))

    assert len(resources(template(build), "AWS::Lambda::Function")) == 2


def test_guards_side_by_side_keep_their_facts_in_variables_of_their_own():
    def build(s):
        table = IdempotencyTable(s, "Table")
        chain = sfn.Chain.start(IdempotencyGuard(s, "A", table=table, body=sfn.Pass(s, "PA")))
        chain = chain.next(IdempotencyGuard(s, "B", table=table, body=sfn.Pass(s, "PB")))
        sfn.StateMachine(s, "Machine", definition_body=sfn.DefinitionBody.from_chainable(chain))

    states = only_definition(template(build))["States"]
    (first,), (second,) = states["A.Acquire"]["Assign"], states["B.Acquire"]["Assign"]
    assert first != second and first.startswith("idempotency_") and second.startswith("idempotency_")


def test_the_poll_past_a_lease_keeps_the_record_it_read_whatever_describe_execution_answers():
    states = guarded(owner_state_machine_name="orders")["States"]["ChargeOnce.Await"]["Branches"][0]["States"]
    catchers = states["ChargeOnce.PollOwner"]["Catch"]
    assert [c["Next"] for c in catchers] == ["ChargeOnce.Settled", "ChargeOnce.Busy"]
    assert all(c["Output"] == "{% $states.input %}" for c in catchers)


@pytest.mark.parametrize(
    ("cause", "expected"),
    [
        (  # the key function's error, as Step Functions passes a Lambda error on
            '{"errorMessage": "the key path $.id is missing, null or empty in the input", "errorType": "Idempotency.KeyMissing"}',
            "the key path $.id is missing, null or empty in the input",
        ),
        (  # the JSONata key's own expression raised while the key function's request was built
            "An error occurred while executing the state 'ChargeOnce.ComputeKey' (entered at the event id #2). The JSONata "
            "expression '($selection := ($states.input.n + 1); ...)' specified for the field 'Arguments' threw an error "
            'during evaluation. T2001: The left side of the "+" operator must evaluate to a number',
            'the key expression $states.input.n + 1 raised: T2001: The left side of the "+" operator must evaluate to a number',
        ),
        (
            None,
            "The idempotency key selection is missing, null or empty in the input, or holds a number of magnitude 2^53 or more.",
        ),
    ],
)
def test_key_missing_says_what_is_wrong_with_the_key_in_one_sentence_never_the_generated_expression(cause, expected):
    states = guarded(key=IdempotencyKey.from_jsonata("$states.input.n + 1"))["States"]
    text = states["ChargeOnce.KeyMissing"]["Cause"].removeprefix("{%").removesuffix("%}")
    error = {"Error": "Idempotency.KeyMissing"} if cause is None else {"Error": "Idempotency.KeyMissing", "Cause": cause}
    assert jsonata_engine.evaluate(text, {"states": {"input": error}}) == expected


@pytest.mark.parametrize(
    "key", [IdempotencyKey.whole_input(), IdempotencyKey.from_paths("$.id"), IdempotencyKey.from_paths("$.sku", "$.warehouse")]
)
def test_key_missing_names_a_key_the_library_selects_as_the_key_selection_never_a_python_value(key):
    states = guarded(key=key)["States"]
    text = states["ChargeOnce.KeyMissing"]["Cause"].removeprefix("{%").removesuffix("%}")
    cause = "The JSONata expression '(...)' specified for the field 'Arguments' threw an error during evaluation. D3001: too deep"
    said = jsonata_engine.evaluate(text, {"states": {"input": {"Error": "Idempotency.KeyMissing", "Cause": cause}}})
    assert said == "the key selection raised: D3001: too deep"


def test_the_state_names_reference_names_every_state_a_guard_may_generate_and_no_other():
    section = (ROOT / "docs" / "reference" / "state-names.md").read_text()
    listed = re.findall(r"^\| `(\w+)` \|", section, flags=re.MULTILINE)
    assert listed == list(STATE_NAMES)


def test_by_default_the_whole_input_is_the_payload_and_nothing_can_be_missing_of_it():
    states = guarded()["States"]
    assert "ChargeOnce.PayloadMissing" not in states
    assert all(catch["Next"] != "ChargeOnce.PayloadMissing" for catch in states["ChargeOnce.ComputeKey"]["Catch"])
    assert "'payload_kind'" not in states["ChargeOnce.ComputeKey"]["Arguments"]


def test_a_payload_selection_is_digested_natively_and_a_selection_that_selects_nothing_fails_payload_missing():
    states = guarded(key=IdempotencyKey.from_paths("$[0].messageId"), payload=IdempotencyPayload.from_paths("$[0].body"))[
        "States"
    ]
    acquire = states["ChargeOnce.Acquire"]["Arguments"]
    assert "the payload path $[0].body is missing in the input" in acquire
    # D(C(P)), P the paths' values, bound before the record's fields are written
    assert "$w := $digest('[' & $join([$text($p0)], ',') & ']')" in acquire and "'validation': $w" in acquire
    compute = states["ChargeOnce.ComputeKey"]
    assert "'payload_kind': 'paths'" in compute["Arguments"]
    assert {"ErrorEquals": ["Idempotency.PayloadMissing"], "Next": "ChargeOnce.PayloadMissing"} in compute["Catch"]
    missing = states["ChargeOnce.PayloadMissing"]
    assert (missing["Type"], missing["Error"]) == ("Fail", "Idempotency.PayloadMissing")


def test_a_jsonata_payload_is_sent_to_the_key_function_made_since_only_jsonata_evaluates_it():
    states = guarded(payload=IdempotencyPayload.from_jsonata("$parse($states.input.body)"))["States"]
    request = states["ChargeOnce.ComputeKey"]["Arguments"]
    assert (
        "$payload_selection := ($parse($states.input.body))" in request and "'payload_selection': $payload_selection" in request
    )


def test_a_jmespath_payload_like_a_jmespath_key_starts_with_the_key_function():
    definition = guarded(key=IdempotencyKey.from_paths("$.id"), payload=IdempotencyPayload.from_jmespath("powertools_json(body)"))
    assert definition["StartAt"] == "ChargeOnce.ComputeKey" and "ChargeOnce.AcquireComputed" not in definition["States"]


def test_with_no_payload_no_mismatch_is_routed_and_the_restore_compares_none():
    states = guarded(key=IdempotencyKey.from_paths("$.id"), payload=IdempotencyPayload.none())["States"]
    assert "ChargeOnce.PayloadMismatch" not in states and "ChargeOnce.PayloadMissing" not in states
    assert all("PayloadMismatch" not in choice["Next"] for choice in states["ChargeOnce.Route"]["Choices"])
    restore = states["ChargeOnce.Replay"]["ItemProcessor"]["States"]["ChargeOnce.Restore"]
    assert "validation" not in restore["Arguments"]


@pytest.mark.parametrize("options", [{}, {"replay_marker": "$.idempotency"}], ids=["unmarked", "marked"])
def test_route_never_sends_a_run_back_to_replay_which_sent_it_there(options):
    # Replay takes every completed record of this payload; one that reaches Route could not be given back.
    states = guarded(**options)["States"]
    route = states["ChargeOnce.Route"]
    assert "ChargeOnce.Replay" not in {rule["Next"] for rule in route["Choices"]} | {route["Default"]}
    (completed,) = [rule["Next"] for rule in route["Choices"] if "'COMPLETED'" in rule["Condition"]]
    assert completed == ("ChargeOnce.NotAnObject" if options else "ChargeOnce.Unreadable")


@pytest.mark.parametrize("after_body", [False, True])
def test_a_dynamodb_tasks_retrier_written_in_its_json_is_the_one_retry_transient_adds(after_body):
    state = sfn.CustomState(stack(), "Retried", state_json={"Type": "Task", "Resource": "arn:aws:states:::dynamodb:getItem"})
    retry_transient(state, TRANSIENT_DYNAMODB_ERRORS, after_body=after_body)
    rendered = state.to_state_json()["Retry"]
    assert json.dumps(rendered) == json.dumps([transient_retrier(TRANSIENT_DYNAMODB_ERRORS, after_body=after_body)])


def test_a_guards_permissions_in_a_state_machine_of_your_own_come_in_the_order_they_always_did():
    # Each DynamoDB task registers its statements at the first neighbour's call back during its traversal, or at
    # its end (issue 56 tried registering them as it joins, which put GetItem before the owner check's
    # DescribeExecution here: a template change).
    def build(stack) -> None:
        guard = IdempotencyGuard(
            stack,
            "G",
            table=IdempotencyTable(stack, "T"),
            body=sfn.Pass(stack, "Step"),
            key=IdempotencyKey.from_paths("$.id"),
            on_in_flight=InFlightPolicy.FAIL,
            owner_state_machine_name="own",
        )
        sfn.StateMachine(stack, "Own", state_machine_name="own", definition_body=sfn.DefinitionBody.from_chainable(guard))

    (policy,) = resources(template(build), "AWS::IAM::Policy").values()
    actions = [statement["Action"] for statement in policy["Properties"]["PolicyDocument"]["Statement"]]
    assert actions == [
        "dynamodb:UpdateItem",
        "lambda:InvokeFunction",
        "states:DescribeExecution",
        "dynamodb:GetItem",
        "lambda:InvokeFunction",
        "dynamodb:DeleteItem",
    ]
