"""Where ministack does not behave as AWS, found by running this library's stacks on it: what it does,
what AWS does, and the evidence, written so that each can be reported upstream as it stands.

A scenario check that a divergence stops names it (``expect(..., unless=D2)``): the check still runs,
and the scenario reports "diverged (D2)" instead of failing; if ministack ever behaves as AWS there,
the scenario fails with "D2 no longer diverges", so that this list never goes stale. Divergences
marked ``corrected_by_launcher`` are corrected in crosscheck/launcher.py before ministack starts, so
that the scenarios they would stop can run; ``./dev crosscheck --as-released`` runs without them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path


def _pinned_version() -> str:
    requirements = Path(__file__).with_name("requirements.txt").read_text()
    match = re.search(r"^ministack==(\S+)", requirements, re.MULTILINE)
    assert match, "crosscheck/requirements.txt must pin ministack"
    return match.group(1)


MINISTACK_VERSION = _pinned_version()


@dataclass(frozen=True)
class Divergence:
    id: str
    title: str
    ministack: str  # what it does
    aws: str  # what AWS does
    evidence: str
    corrected_by_launcher: bool = False

    def __str__(self) -> str:
        return f"{self.id} (ministack {MINISTACK_VERSION}): {self.title}"


D1 = Divergence(
    "D1",
    "a Catch of a JSONata state in a JSONPath state machine ignores its Assign",
    ministack=(
        "Step Functions evaluates a catcher's Assign only when the catcher's own QueryLanguage, or else "
        "the state machine's, is JSONata (services/stepfunctions.py, _apply_catcher -> "
        "_apply_state_assign -> _state_query_language(catcher, ctx)). A catcher never has a QueryLanguage "
        "field, so in a JSONPath state machine the Assign of a JSONata Task's catcher is silently skipped "
        "and its variables keep their old values (here: undefined, so the next state's GetItem key is "
        "empty and DynamoDB answers ValidationException 'The provided key element does not match the "
        "schema')."
    ),
    aws=(
        "A Catch belongs to its state and is written in its state's query language: a JSONata state's "
        "catcher takes JSONata Assign and Output (AWS Step Functions Developer Guide, 'Passing data between "
        "states with variables': 'Catch ... Assign'; 'Transforming data with JSONata': a state's "
        "QueryLanguage applies to all of its fields). ministack itself evaluates the catcher's Output in "
        "the state's language."
    ),
    evidence=(
        "The example app's duplicate order: the Acquire state (JSONata, in a JSONPath state machine) fails "
        "its condition, its catcher assigns the key, and Inspect reads it. On ministack as released the "
        "duplicate fails in Inspect with DynamoDB.ValidationException; with the catcher evaluated in its "
        "state's language it replays, as on moto. `./dev crosscheck --as-released` shows it."
    ),
    corrected_by_launcher=True,
)

D2 = Divergence(
    "D2",
    "every Python Lambda function error is named Runtime.HandlerError",
    ministack=(
        "An exception raised by a Python handler comes back with errorType 'Runtime.HandlerError', and "
        "Step Functions names the task's error so: the exception's class name is lost."
    ),
    aws=(
        "The Lambda Python runtime reports the exception's class name as errorType (Lambda Developer Guide, "
        "'AWS Lambda function errors in Python'), and Step Functions uses it as the error name that Retry "
        "and Catch match (Step Functions Developer Guide, 'Handling errors': 'Lambda.Unknown' only for "
        "errors without a type)."
    ),
    evidence=(
        "The example app's declined card raises CardDeclined: on ministack the execution fails with "
        "'Runtime.HandlerError' and the cause's errorType says the same; on moto it is 'CardDeclined'. "
        "The key function's Idempotency.KeyMissing (a class renamed so) arrives as Runtime.HandlerError "
        "too, so a guard's catcher for it cannot match."
    ),
)

D3 = Divergence(
    "D3",
    "execution history has no events for states inside Parallel and Map",
    ministack=(
        "GetExecutionHistory lists ParallelStateEntered/Exited and MapStateEntered/Exited, but no "
        "TaskStateEntered, PassStateEntered, ... events of the states that ran inside a branch or an "
        "iteration."
    ),
    aws=(
        "Every state entered inside a Parallel branch or an inline Map iteration has its own entered and "
        "exited events in the execution's history (Step Functions API Reference, HistoryEvent)."
    ),
    evidence=(
        "The guard runs the user's chain inside a Parallel (Idempotency.Body): on ministack the history of "
        "a first run of the example app shows Acquire, Body and Complete, never Validate or Charge. The "
        "scenarios therefore judge from outputs, tables and counters, never from histories."
    ),
)

D4 = Divergence(
    "D4",
    "a JSONata Parallel state ignores its Output and Assign",
    ministack=(
        "A Parallel state is run with the JSONPath fields only (services/stepfunctions.py, "
        "_run_parallel_branches: InputPath, Parameters, ResultSelector, ResultPath, OutputPath), whatever "
        "its QueryLanguage: a JSONata Parallel's Arguments, Output and Assign are skipped, so its output "
        "is the array of branch outputs and its variables are not set. (The Map state, just below it, "
        "evaluates them.)"
    ),
    aws=(
        "In a JSONata Parallel state, Output and Assign are evaluated with $states.result bound to the "
        "array of the branches' outputs, and Arguments gives the branches their input (Step Functions "
        "Developer Guide, 'Parallel workflow state': the JSONata fields Arguments, Output, Assign)."
    ),
    evidence=(
        "Ten concurrent duplicates of the example app: the waiters' Idempotency.Await (a JSONata Parallel "
        "whose Assign stores the polled record) never refreshes the record they route on, so each waiter "
        "loops Await -> Route -> Backoff after the holder completed, until its execution times out. A "
        "JSONata host's Parallel ('fork') loses its Output the same way."
    ),
    corrected_by_launcher=True,
)

D5 = Divergence(
    "D5",
    "TaskScheduled history events lack the task's parameters and region, and name the resource wrongly",
    ministack=(
        "A TaskScheduled event's taskScheduledEventDetails is {resourceType: 'states', resource: <the whole "
        "Resource ARN>} for every service integration: no parameters, no region (services/stepfunctions.py, "
        "_execute_task)."
    ),
    aws=(
        "TaskScheduledEventDetails has four required members: resourceType, the service name ('dynamodb'); "
        "resource, the action ('updateItem'); region; and parameters, the JSON the task sent (Step Functions "
        "API Reference, TaskScheduledEventDetails)."
    ),
    evidence=(
        "The release function finds the records an ended execution holds in its history, from the "
        "TaskScheduled events of dynamodb updateItem tasks and their parameters' owner token. On ministack "
        "as released, an aborted holder's key is never released (it waits for its lease); with the details "
        "written as AWS writes them it is released within seconds, as on moto."
    ),
    corrected_by_launcher=True,
)

D6 = Divergence(
    "D6",
    "an EventBridge rule's Lambda target is invoked once, without Lambda's asynchronous retries",
    ministack=(
        "A rule's Lambda target runs the function once on a thread (services/eventbridge.py, "
        "_dispatch_to_lambda -> lambda_svc._execute_function_with_config_scope): a function error is "
        "dropped, with no retry and no on-failure destination, although ministack implements both for "
        "asynchronous invocations (lambda_svc.invoke_async_with_retry, whose docstring names EventBridge "
        "rule targets)."
    ),
    aws=(
        "EventBridge invokes a Lambda target asynchronously (EventBridge User Guide, 'Amazon EventBridge "
        "targets'), so the function's asynchronous invocation configuration applies: function errors are "
        "retried (MaximumRetryAttempts, by default 2, one minute then two minutes apart) and then sent to "
        "the on-failure destination or dead-letter queue (Lambda Developer Guide, 'How Lambda handles "
        "errors and retries with asynchronous invocation')."
    ),
    evidence=(
        "The release function raises while DescribeExecution still reads RUNNING (eventually consistent), "
        "so that Lambda retries it. On ministack as released, an aborted holder whose first read is stale "
        "keeps its key until the lease lapses and nothing reaches the function's on-failure queue; with the "
        "target invoked asynchronously the key is released on the retry, or the event reaches the queue."
    ),
    corrected_by_launcher=True,
)

D7 = Divergence(
    "D7",
    "two concurrent conditional writes of one item can both succeed",
    ministack=(
        "DynamoDB's PutItem, UpdateItem and DeleteItem read the item, evaluate the condition, then store "
        "the new item, with no lock between (services/dynamodb.py, _put_item and _update_item: "
        "old_item = ..., _evaluate_condition, _set_item), and a Step Functions task of the optimized "
        "DynamoDB integration calls them from its execution's own thread (services/stepfunctions.py, "
        "_invoke_dynamodb). Two executions whose writes interleave there both see the item absent, and "
        "both writes succeed."
    ),
    aws=(
        "A conditional write is one operation on the item: the condition is evaluated against the item as "
        "the write finds it, so of concurrent writes that each require the item to be absent one succeeds "
        "and the others fail with ConditionalCheckFailedException (DynamoDB Developer Guide, 'Condition "
        "expressions' and 'Conditional writes' under 'Working with items'). The guard's Acquire relies on "
        "it, as the aws-samples idempotent-workflow sample and Powertools' idempotency do."
    ),
    evidence=(
        "Only under load, rarely: in the cross-check's 'ten at once' scenarios two executions acquired one "
        "key and the loser's Complete failed with Idempotency.LeaseLost. In ministack's process, ten "
        "threads each calling dynamodb._update_item with attribute_not_exists on one new item had two or "
        "more winners in none of 200 trials at Python's default 5 ms thread switch interval, and in 109 "
        "of 200 at 10 microseconds (how often a thread loses the interpreter when the machine is busy). "
        "With ministack started at that switch interval, the two 'ten at once' scenarios, 20 runs each, "
        "failed 3 of 40 times (Idempotency.LeaseLost); with each item write serialized, as moto's is in "
        "idempotent_constructs/testing/gaps/dynamodb_atomicity.py, 0 of 40."
    ),
    corrected_by_launcher=True,
)

D8 = Divergence(
    "D8",
    "a JSONata Succeed state's Output is ignored",
    ministack=(
        "A Succeed state outputs its input through InputPath and OutputPath only (services/stepfunctions.py, "
        "the three places that handle 'Succeed': a state machine's top level, a Parallel branch, a Map "
        "iteration), so the Output of a Succeed state written in JSONata is never evaluated."
    ),
    aws=(
        "'Succeed states that use JSONata can include an Output field ... When specified, the Output value "
        "overrides the state output default' (Step Functions Developer Guide, 'Succeed workflow state')."
    ),
    evidence=(
        "The refund document of tests/asl ends in a Succeed whose Output is {trip_id, refunded, by}: on moto "
        "the workflow outputs that object; on ministack it outputs the Succeed's input, the refund "
        "function's result."
    ),
)

ALL = (D1, D2, D3, D4, D5, D6, D7, D8)
