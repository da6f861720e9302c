"""idempotent_constructs/guard/advice.py: settings that deploy but contradict each other are warned about
with the fix."""

from __future__ import annotations

import json

from aws_cdk import Duration
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from aws_cdk.assertions import Annotations, Match, Template

from idempotent_constructs import IdempotencyGuard, IdempotencyTable, IdempotentStateMachine, InFlightPolicy
from idempotent_constructs._readers.asl import all_states
from idempotent_constructs.guard import poll_schedule
from tests.synth import only_definition, stack


def warnings(target) -> list[str]:
    return [message.entry.data for message in Annotations.from_stack(target).find_warning("*", Match.any_value())]


def charge(target, timeout: Duration):
    function = lambda_.Function.from_function_arn(target, "Charger", "arn:aws:lambda:us-east-1:123456789012:function:charge")
    return tasks.LambdaInvoke(target, "Charge", lambda_function=function, task_timeout=sfn.Timeout.duration(timeout))


def guarded(target, body, **options) -> IdempotencyGuard:
    guard = IdempotencyGuard(target, "ChargeOnce", table=IdempotencyTable(target, "Table"), body=body, **options)
    sfn.StateMachine(target, "Machine", definition_body=sfn.DefinitionBody.from_chainable(guard))
    return guard


def workflow(target, definition, **options) -> IdempotentStateMachine:
    return IdempotentStateMachine(target, "Refunds", table=IdempotencyTable(target, "Table"), definition=definition, **options)


def test_warns_when_the_poll_interval_is_longer_than_the_whole_wait():
    target = stack()
    guarded(target, sfn.Pass(target, "Work"), poll_interval=Duration.minutes(10), max_wait=Duration.seconds(5))
    Annotations.from_stack(target).has_warning(
        "/Test/ChargeOnce",
        "poll_interval (10 minutes) is longer than max_wait (5 seconds): a duplicate waits 10 minutes for its first "
        "and only poll, then fails with Idempotency.InFlight; make poll_interval shorter than max_wait (the default is "
        "1 second) or max_wait longer [ack: idempotent-constructs:poll-interval-above-max-wait]",
    )


def test_a_workflow_warns_about_its_poll_interval_too():
    target = stack()
    workflow(target, sfn.Pass(target, "Work"), poll_interval=Duration.minutes(1), max_wait=Duration.seconds(30))
    Annotations.from_stack(target).has_warning("/Test/Refunds/Idempotency", Match.string_like_regexp("poll_interval"))


def test_no_warning_when_the_poll_fits_the_wait_or_a_duplicate_does_not_wait():
    target = stack()
    guarded(target, sfn.Pass(target, "Work"), poll_interval=Duration.seconds(5), max_wait=Duration.seconds(5))
    other = stack()
    guarded(other, sfn.Pass(other, "Work"), poll_interval=Duration.minutes(10), on_in_flight=InFlightPolicy.FAIL)
    assert warnings(target) == warnings(other) == []


def test_warns_when_the_lease_is_shorter_than_the_timeout_of_a_state_of_the_body():
    target = stack()
    guarded(target, sfn.Pass(target, "Validate").next(charge(target, Duration.minutes(20))))
    Annotations.from_stack(target).has_warning(
        "/Test/ChargeOnce",
        "lease (15 minutes) is shorter than the timeout of the body's state 'Charge' (20 minutes): while it still "
        "runs, a duplicate arriving after the lease may take the key over and run the body a second time; make lease "
        "at least Duration.seconds(1200), place an ExtendLease in the body, or run the guard with the owner check "
        "(owner_state_machine_name) [ack: idempotent-constructs:lease-shorter-than-body]",
    )


def test_warns_about_a_timeout_inside_a_branch_of_the_body():
    target = stack()
    both = sfn.Parallel(target, "Both").branch(charge(target, Duration.minutes(3))).branch(sfn.Pass(target, "Note"))
    guarded(target, both, lease=Duration.minutes(2))
    assert [w for w in warnings(target) if "the body's state 'Charge' (3 minutes)" in w]


def test_no_lease_warning_when_the_lease_covers_the_body_or_the_body_extends_it():
    covered = stack()
    guarded(covered, charge(covered, Duration.minutes(20)), lease=Duration.minutes(20))
    extended = stack()
    loop = charge(extended, Duration.minutes(20))
    guard = IdempotencyGuard(extended, "ChargeOnce", table=IdempotencyTable(extended, "Table"), body=loop)
    loop.next(guard.extend_lease())  # made after the guard, known by synth
    sfn.StateMachine(extended, "Machine", definition_body=sfn.DefinitionBody.from_chainable(guard))
    assert warnings(covered) == warnings(extended) == []


def test_no_lease_warning_for_a_state_after_a_guard_whose_body_runs_bare():
    target = stack()
    quick = tasks.EvaluateExpression(target, "Quick", expression="$.amount * 2")  # one Task: it runs bare
    guard = IdempotencyGuard(target, "ChargeOnce", table=IdempotencyTable(target, "Table"), body=quick)
    after = guard.next(charge(target, Duration.minutes(20)))  # not the body: its timeout is not the lease's business
    sfn.StateMachine(target, "Machine", definition_body=sfn.DefinitionBody.from_chainable(after))
    assert guard.state_name("Body") == "Quick" and warnings(target) == []


def test_no_lease_warning_with_the_owner_check_which_never_takes_over_a_running_holder():
    target = stack()
    workflow(target, charge(target, Duration.hours(2)), lease=Duration.minutes(5))
    assert warnings(target) == []


def test_warns_when_a_jsonata_key_holds_a_regular_expression_the_jvm_recurses_through():
    from idempotent_constructs import IdempotencyKey, IdempotencyPayload

    target = stack()
    guarded(
        target,
        sfn.Pass(target, "Work"),
        key=IdempotencyKey.from_jsonata("$replace($states.input.id, /(?:-|_)+/, '')"),
        payload=IdempotencyPayload.from_jsonata("$match($states.input.body, /[a-z]+/).match"),
    )
    assert warnings(target) == [
        "key: in the JSONata expression \"$replace($states.input.id, /(?:-|_)+/, '')\", /(?:-|_)+/ may overflow the stack of "
        "AWS's JSONata engine, which runs on the JVM, on a long input ((?:-|_) is repeated any number of times: "
        "java.util.regex recurses once per repetition), and the state then fails with States.QueryEvaluationError; "
        'repeat a single character class instead ([^"]*), or a group at most 64 times '
        "(docs/explanation/canonical-key.md, section 7) [ack: idempotent-constructs:regex-recursion]"
    ]


def express(target, guard: IdempotencyGuard) -> None:
    sfn.StateMachine(
        target,
        "Express",
        definition_body=sfn.DefinitionBody.from_chainable(guard),
        state_machine_type=sfn.StateMachineType.EXPRESS,
    )


def test_a_guard_in_an_express_state_machine_whose_lease_outlasts_the_run_is_warned():
    target = stack()
    table = IdempotencyTable(target, "Table")
    express(
        target,
        IdempotencyGuard(target, "ChargeOnce", table=table, body=sfn.Pass(target, "Work"), lease=Duration.minutes(15)),
    )
    (warning,) = warnings(target)
    assert warning.startswith(
        "the guard is in the Express state machine Test/Express/Resource, whose executions run 5 minutes at most, and "
        "its lease (15 minutes) outlasts the run: a crashed holder's key stays held after its execution ended"
    )
    assert "set lease=Duration.minutes(5)" in warning
    assert warning.endswith("[ack: idempotent-constructs:longer-than-express]")


def test_a_guard_left_to_its_defaults_in_an_express_state_machine_fits_its_lease_and_wait_to_the_run():
    target = stack()
    guard = IdempotencyGuard(target, "ChargeOnce", table=IdempotencyTable(target, "Table"), body=sfn.Pass(target, "Work"))
    express(target, guard)
    assert warnings(target) == []  # neither longer-than-express nor the waiting schedule's quota
    text = json.dumps(only_definition(Template.from_stack(target)))
    assert "$now + 300000" in text and "$now + 900000" not in text
    (await_state,) = [state for name, _, state in all_states(json.loads(text), "") if name == "ChargeOnce.Await"]
    (retry,) = await_state["Retry"]
    schedule = poll_schedule(1, 240)
    assert (retry["MaxAttempts"], retry["MaxDelaySeconds"]) == (schedule.attempts, schedule.max_delay)
    assert (guard.lease.to_seconds(), guard.config.max_wait.to_seconds()) == (300, 240)


def test_a_guard_that_fits_the_express_run_or_is_in_a_standard_one_is_not_warned():
    fits = stack()
    table = IdempotencyTable(fits, "Table")
    short = dict(lease=Duration.minutes(5), max_wait=Duration.minutes(4))
    express(fits, IdempotencyGuard(fits, "ChargeOnce", table=table, body=sfn.Pass(fits, "Work"), **short))
    standard = stack()
    guarded(standard, sfn.Pass(standard, "Work"))
    assert warnings(fits) == warnings(standard) == []
