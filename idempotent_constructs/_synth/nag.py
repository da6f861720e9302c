"""The findings of cdk-nag's packs (AWS Solutions, NIST 800-53 rev. 5, Serverless) that the library's resources
draw by design, acknowledged on them with the reason: one function per kind of resource. (The AWS Solutions
pack's findings of wildcard permissions are acknowledged where each permission is granted.)"""

from __future__ import annotations

from aws_cdk import Acknowledgment, Validations
from constructs import IConstruct

SOLUTIONS = "AwsSolutions::AwsSolutions-"
NIST = "NIST.800.53.R5::NIST.800.53.R5-"
SERVERLESS = "Serverless::Serverless-"

INLINE_POLICY = (
    "The role's permissions are inline: they belong to this one role and go with it, where a managed policy "
    "could be attached to other principals."
)
LOGS_WITHOUT_PAYLOADS = (
    "The log group holds no payloads (execution data is not logged; the library's functions log record ids and "
    "counts only), and CloudWatch Logs encrypts every log group at rest."
)

# What a role the library creates draws, its permissions inline (``InlineRole``), and a log group it creates, which no
# payload reaches: acknowledged on each, with the other findings there in the same call (each is one into jsii).
INLINE_ROLE = {f"{NIST}IAMNoInlinePolicy": INLINE_POLICY}
PAYLOAD_FREE_LOGS = {f"{NIST}CloudWatchLogGroupEncrypted": LOGS_WITHOUT_PAYLOADS}


def acknowledge(construct: IConstruct, reasons: dict[str, str]) -> None:
    """Acknowledge each finding (``{rule id: reason}``) on ``construct`` and everything under it."""
    Validations.of(construct).acknowledge(*(Acknowledgment(id=rule, reason=reason) for rule, reason in reasons.items()))


def shared_function(shared: IConstruct, *, asynchronous: bool) -> None:
    """A function of the library's, with its role and its log group, the only ones under ``shared``: the key and result
    functions, which state machines' Tasks invoke, or (``asynchronous``) the release function, which an EventBridge
    rule invokes. (In one call: each is a call into jsii.)"""
    if asynchronous:
        callers = {
            "Dlq": "EventBridge invokes it asynchronously; what it could not handle goes to its queue through an "
            "on-failure destination, which AWS recommends over a dead-letter queue.",
            "Concurrency": "Reserved concurrency would hold back releases (Lambda retries throttled events for up "
            "to their maximum age) and take from the account's pool; it runs once per failed execution.",
            "Tracing": "It runs once per failed, timed-out or aborted execution and logs each record it releases "
            "(ids and counts); active tracing would add a permission on Resource '*'.",
        }
    else:
        callers = {
            "Dlq": "State machines' Tasks invoke it synchronously, where a dead-letter queue does not apply: a "
            "failed call fails the Task, which retries it.",
            "Concurrency": "Reserved concurrency would throttle the workflows' own calls to it and take from the "
            "account's pool; it runs as often as the workflows call it.",
            "Tracing": "The state machines that call it trace each call where their tracing is on (X-Ray, the "
            "default of IdempotentStateMachine); active tracing in the function would add a segment a call and a "
            "permission on Resource '*'.",
        }
    acknowledge(
        shared,
        {
            f"{NIST}LambdaInsideVPC": "It calls AWS APIs only (DynamoDB, S3, Step Functions) and no resource in a "
            "VPC; in one it would need endpoints or a NAT gateway to reach them.",
            f"{NIST}LambdaConcurrency": callers["Concurrency"],
            f"{NIST}LambdaDLQ": callers["Dlq"],
            f"{SERVERLESS}LambdaDLQ": callers["Dlq"],
            f"{SERVERLESS}LambdaTracing": callers["Tracing"],
            **INLINE_ROLE,
            **PAYLOAD_FREE_LOGS,
        },
    )


def dead_letters(queue: IConstruct, alarm: IConstruct) -> None:
    """The release function's dead-letter queue and its alarm."""
    itself = "This queue is itself the dead-letter queue of the release function's rule target and asynchronous invocations."
    acknowledge(queue, {f"{SOLUTIONS}SQS3": itself, f"{SERVERLESS}SQSRedrivePolicy": itself})
    acknowledge(
        alarm,
        {
            f"{NIST}CloudWatchAlarmAction": "Whom to tell is the user's: release_function.alarm.add_alarm_action(...) "
            "(the runbook's 'Release dead letters')."
        },
    )


def results_bucket(bucket: IConstruct) -> None:
    """The bucket of large results."""
    unlogged = (
        "Holds short-lived copies of workflow results, written and read only by the result function; access is "
        "recorded by CloudTrail, and server access logs would need a second bucket."
    )
    acknowledge(
        bucket,
        {
            f"{SOLUTIONS}S1": unlogged,
            f"{NIST}S3BucketLoggingEnabled": unlogged,
            f"{NIST}S3BucketReplicationEnabled": "Its objects are short-lived copies that expire with their records "
            "(lifecycle rules); replicating them is a disaster-recovery choice of the account's.",
            f"{NIST}S3BucketVersioningEnabled": "Each object is written once for its record and expires with it; "
            "versions would keep results past their expiry.",
            f"{NIST}S3DefaultEncryptionKMS": "Encrypted at rest with S3-managed keys (SSE-S3), TLS only, reached by "
            "the result function alone.",
        },
    )


def table(construct: IConstruct) -> None:
    """An idempotency table with point-in-time recovery on."""
    acknowledge(
        construct,
        {
            f"{NIST}DynamoDBInBackupPlan": "Point-in-time recovery is on (restores to any second of the last 35 "
            "days), and records live until their TTL; a backup plan (AWS Backup selects resources by tag) is the "
            "account's choice."
        },
    )
