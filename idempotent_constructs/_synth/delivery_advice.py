"""What is said of how a source that starts a workflow delivers, once ``source_advice`` has found it: a pipe that
never redelivers a failed message (a Standard workflow, FIRE_AND_FORGET), records that expire before the queue
lets go of a message, a duplicate that waits past an API's timeout, a mapping that ignores a batch's partial
response, and a pipe's batch past what Pipes sends a Step Functions target. Each warning names the source, what
would happen and the fix, and cites AWS's page."""

from __future__ import annotations

import aws_cdk as cdk
from constructs import IConstruct

from ..lambda_src import schema
from .deliveries import SQS_ENVELOPE_CHARACTERS
from .starters import Start

NEVER_REDELIVERED = "idempotent-constructs:pipe-never-redelivers"
EXPIRES_BEFORE_REDELIVERY = "idempotent-constructs:expires-before-redelivery"
WAITS_PAST_API_TIMEOUT = "idempotent-constructs:duplicate-waits-past-api-timeout"
PARTIAL_RESPONSE_IGNORED = "idempotent-constructs:mapping-ignores-partial-batch-response"
BATCH_PAST_TARGET_LIMIT = "idempotent-constructs:pipe-batch-past-262144-characters"
VISIBILITY_SHORTER_THAN_RUN = "idempotent-constructs:visibility-timeout-shorter-than-run"
# What a pipe sends a Step Functions target, the batch as a whole: "Step Functions state machines (262144
# characters)" (EventBridge user guide, "Amazon EventBridge Pipes batching and concurrency").
PIPE_TARGET_CHARACTERS = 262_144
SEE = "(docs/guides/event-sources.md)"


def expires_before_redelivery(workflow: IConstruct, start: Start, expires_after: float) -> None:
    # A standard queue's message keeps its first enqueue time in its dead-letter queue, whose retention then
    # bounds it (SQS developer guide, "Using dead-letter queues"); a redrive sends it back to the source.
    assert start.kept is not None
    what, seconds = start.kept
    cdk.Annotations.of(workflow).add_warning_v2(
        EXPIRES_BEFORE_REDELIVERY,
        f"{what} keeps a message up to {_duration(seconds)}, and {start.named} may deliver it again (a "
        f"redelivery, a redrive from the dead-letter queue) until then: a record expires {_duration(expires_after)} "
        f"after it completes (expires_after), so a message that comes again later runs the workflow again. Set "
        f"expires_after to at least {_duration(seconds)}, or the queues' retention below it {SEE}",
    )


def retried_past_expiry(workflow: IConstruct, path: str, retried: float, expires_after: float) -> None:
    # EventBridge retries an event its target failed to take (throttled, or an error it could not tell from one) for
    # up to the target's maximum event age; a StartExecution that started an execution and was reported failed is
    # delivered again with the same event.
    cdk.Annotations.of(workflow).add_warning_v2(
        EXPIRES_BEFORE_REDELIVERY,
        f"the rule {path} retries delivering an event for up to {_duration(retried)} (its target's maximum event age; "
        f"EventBridge's default: 24 hours, 185 attempts), and a record expires {_duration(expires_after)} after it "
        f"completes (expires_after): an event delivered again later runs the workflow again. Set expires_after to at "
        f"least {_duration(retried)}, or the target's max_event_age below it {SEE}",
    )


def waits_past_api_timeout(workflow: IConstruct, named: str, timeout: float, max_wait: float) -> None:
    """``named``: the API method or integration that waits, with its path."""
    cdk.Annotations.of(workflow).add_warning_v2(
        WAITS_PAST_API_TIMEOUT,
        f"{named} waits for the execution (StartSyncExecution) at most {_duration(timeout)}, its "
        f"integration's timeout, and a duplicate that comes while the first request runs waits up to "
        f"{_duration(max_wait)} for it (max_wait): its client gets a 504 and may retry while both still run. Set "
        f"on_in_flight=InFlightPolicy.FAIL and answer {schema.IN_FLIGHT} with a 409 in the integration response, "
        f"or a max_wait below the timeout {SEE}",
    )


def partial_response_ignored(batch: IConstruct, path: str) -> None:
    # "Lambda doesn't process these responses unless the ReportBatchItemFailures feature is explicitly turned on for
    # your event source mapping", even where the function returns one (Lambda developer guide, the partial batch
    # response pages of SQS and of DynamoDB streams); a success then deletes the whole batch.
    cdk.Annotations.of(batch).add_warning_v2(
        PARTIAL_RESPONSE_IGNORED,
        f"the event source mapping {path} invokes a function that starts the workflow, and its function response "
        "types leave out ReportBatchItemFailures: Lambda ignores the batch's partial batch response and deletes a "
        "failed record with the others, never to be delivered again. Pass report_batch_item_failures=True to the "
        f"event source (FunctionResponseTypes: [ReportBatchItemFailures]) and return the workflow's output {SEE}",
    )


def past_target_limit(workflow: IConstruct, path: str, batch: int, message_bytes: int) -> None:
    largest = batch * (message_bytes + SQS_ENVELOPE_CHARACTERS)
    if largest <= PIPE_TARGET_CHARACTERS:
        return
    fits = PIPE_TARGET_CHARACTERS // batch - SQS_ENVELOPE_CHARACTERS
    fix = (
        f"Set the queue's maximumMessageSize to {fits:,} bytes or less"
        if fits >= 1_024  # the least maximumMessageSize SQS allows
        else f"Set the pipe's batch size to {max(1, PIPE_TARGET_CHARACTERS // (message_bytes + SQS_ENVELOPE_CHARACTERS))} or less"
    )
    cdk.Annotations.of(workflow).add_warning_v2(
        BATCH_PAST_TARGET_LIMIT,
        f"the pipe {path} may send {_records(batch)} of up to {message_bytes:,} bytes each (its queue's "
        f"maximumMessageSize), about {largest:,} characters in their records, more where a JSON body's quotes are "
        f"escaped: Pipes sends a Step Functions target at most {PIPE_TARGET_CHARACTERS:,} characters, the batch "
        f"as a whole, and AWS does not document what becomes of messages past it. {fix}, leaving room for "
        f"escapes, or send a reference to the content (an S3 key) {SEE}",
    )


def _records(batch: int) -> str:
    return "one message" if batch == 1 else f"a batch of {batch} messages"


def _duration(seconds: float) -> str:
    for unit, size in (("days", 86_400), ("hours", 3_600), ("minutes", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds // size:.0f} {unit if seconds != size else unit[:-1]}"
    return f"{seconds:.0f} seconds"


def never_redelivered(workflow: IConstruct, path: str, express: bool, retries: str) -> None:
    # "Pipes cannot retry errors thrown from within the logic of a Step Functions standard workflow"; an
    # asynchronous invocation succeeds once the execution starts (EventBridge user guide, "EventBridge Pipes
    # error handling and troubleshooting"; the Pipes API's PipeTargetStateMachineParameters).
    how = "with FIRE_AND_FORGET" if express else "(a Standard workflow, which Pipes can only start asynchronously)"
    cdk.Annotations.of(workflow).add_warning_v2(
        NEVER_REDELIVERED,
        f"the pipe {path} starts the workflow {how}: the pipe is done once the execution starts, so a message "
        "whose execution fails is deleted from its source and never redelivered. Use an Express workflow and "
        f"the pipe's default invocation type, REQUEST_RESPONSE: a failed execution is then redelivered {retries} {SEE}",
    )


def visibility_shorter_than_run(workflow: IConstruct, start: Start, least: int, why: str) -> None:
    # A message left in flight past its visibility timeout "becomes visible to other consumers" (SQS developer
    # guide, "Amazon SQS visibility timeout"): received again while its execution runs, a second execution runs
    # beside the first (which it replays or waits for), and each receive counts toward maxReceiveCount.
    assert start.visibility is not None
    queue, seconds = start.visibility
    cdk.Annotations.of(workflow).add_warning_v2(
        VISIBILITY_SHORTER_THAN_RUN,
        f"{queue} has a visibility timeout of {seconds:,} s, and {start.named} needs {least:,} s ({why}): a message "
        "whose execution still runs is received again and runs another beside it, and each receive counts toward "
        f"the queue's maxReceiveCount, past which a message still in progress goes to its dead-letter queue. Set "
        f"the queue's visibility timeout to at least {least:,} s {SEE}",
    )
