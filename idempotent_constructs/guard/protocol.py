"""The contract a guard's states share, named once: the variable that carries what they know, its
fields, the names of the states, and the error names they retry or catch.

Every state a guard generates is written in JSONata (``QueryLanguage: JSONata`` on the state, so it
fits a JSONPath state machine too). The chain's input and output travel as the state payload,
untouched; what the protocol knows travels in one workflow variable per guard (``Facts``)::

    ${variable} = {"id", "validation", "members", "owner", "record", "holder"}

A variable's name is unique to the guard within its state machine (derived from its state-name
prefix, which Step Functions' unique state names make unique), because a Parallel branch or Map
iteration may not assign a variable an outer scope already has: guards nested in guards, and guards
side by side, never share one. It does not depend on where the state machine is, so that the
definitions of workflows alike are alike, text for text (``definition``).
"""

from __future__ import annotations

import hashlib

from ..lambda_src import schema

# --- the variable -------------------------------------------------------------------------------------
VARIABLE_PREFIX = "idempotency_"
ID = "id"  # the record id
VALIDATION = "validation"  # the payload's digest
MEMBERS = "members"  # its members' digests, by name (schema.PAYLOAD_MEMBERS), until the run holds the key
OWNER = "owner"  # this run's owner token, "{execution ARN}#{uuid}": drawn before its first write, or once it holds the key
RECORD = "record"  # the record as last read (DynamoDB's typed form), or null when absent
UNTIL = "until"  # when a duplicate that waits gives up (ms since the epoch), set by its first wait (``Backoff``)
HOLDER = "holder"  # the holder's execution as DescribeExecution last described it: {Status, ExecutionArn}

# The attributes a read of the record returns: everything the route needs, and never a compressed
# result (``data_gzip``), which would make the response too large to read into a state.
READ_ATTRIBUTES = (
    schema.ID,
    schema.STATUS,
    schema.EXPIRATION,
    schema.IN_PROGRESS_EXPIRATION,
    schema.OWNER,
    schema.VALIDATION,
    schema.PAYLOAD_MEMBERS,
    schema.DATA,
    schema.ERROR,
    schema.CAUSE,
)


class Record:
    """JSONata that reads a record (DynamoDB's typed form) that ``record`` (JSONata) holds, and the
    conditions the route and the poll decide on."""

    def __init__(self, record: str) -> None:
        self.record = record

    def __call__(self, name: str, kind: str = "S") -> str:
        return f"{self.record}.{name}.{kind}"

    @property
    def absent(self) -> str:
        return f"{self.record} = null"

    def status(self, status: str) -> str:
        return f"{self(schema.STATUS)} = '{status}'"

    @property
    def within_lease(self) -> str:
        return f"({self.status(schema.INPROGRESS)} and $number({self(schema.IN_PROGRESS_EXPIRATION, 'N')}) > $millis())"

    @property
    def lapsed(self) -> str:
        return f"({self.status(schema.INPROGRESS)} and $number({self(schema.IN_PROGRESS_EXPIRATION, 'N')}) <= $millis())"


class Facts:
    """JSONata that reads the guard's variable; ``record`` reads the record as last read."""

    def __init__(self, prefix: str) -> None:
        self.name = f"{VARIABLE_PREFIX}{hashlib.sha256(prefix.encode()).hexdigest()[:12]}"
        self.record = Record(f"${self.name}.{RECORD}")

    def __call__(self, field: str) -> str:
        return f"${self.name}.{field}"


# When the current state was entered, in ms since the epoch.
ENTERED_AT = "$toMillis($states.context.State.EnteredTime)"


def expression(text: str) -> str:
    """A field's value written in JSONata."""
    return "{% " + text + " %}"


# --- states -------------------------------------------------------------------------------------------
# Every state a guard may generate, by the name it carries after the guard's prefix.
STATE_NAMES = (
    "Begin",
    "ComputeKey",
    "Acquire",
    "AcquireComputed",
    "KeyMissing",
    "PayloadMissing",
    "Body",
    "Complete",
    "StoreResult",
    "LeaseLost",
    "Inspect",
    "Replay",
    "Restore",
    "Route",
    "ReplayFailure",
    "PayloadMismatch",
    "Takeover",
    "OwnerCheck",
    "OwnerRunning",
    "Backoff",
    "Await",
    "Poll",
    "Check",
    "PollOwner",
    "StillRunning",
    "Busy",
    "Settled",
    "InFlight",
    "AwaitingRedrive",
    "Rejected",
    "NotAnObject",
    "Unreadable",
    "ResultMissing",
    "CacheOrRelease",
    "Release",
    "RecordFailure",
    "Failed",
)

# --- errors -------------------------------------------------------------------------------------------
# A JSONata expression that raised (a key that is missing, a result the native write cannot store).
QUERY_FAILED = "States.QueryEvaluationError"
CONDITION_FAILED = "DynamoDB.ConditionalCheckFailedException"
# Transient errors of the DynamoDB service integration ("DynamoDB.<error>"). AWS documents the prefix,
# not the names: each is listed as the API's error code and as the SDK's exception name where the two
# differ, and so are the two names a failure without a name of its own arrives with (the evidence:
# LocalStack's integration, checked against AWS-recorded snapshots, names a service error
# "DynamoDB.<code>" and anything else "DynamoDB.AmazonDynamoDBException"; AWS's own sample
# "Synchronous Express workflow" retries that name; the causes are the AWS SDK for Java's, whose
# client-side failures, timeouts and dropped connections, are "SdkClientException", as this protocol
# already meets "Sfn.SdkClientException"). Those two cover permanent errors too (access denied), which
# the retries delay, by about a minute before the body and up to about ten minutes after it (where
# giving up would leave the key to a second run; an Express execution ends first), and cannot make
# worse: every write here is safe to repeat (a retried write that was applied finds its own effect,
# testing/faults.py "dynamodb_lost_replies").
TRANSIENT_DYNAMODB_ERRORS = [
    "DynamoDB.ProvisionedThroughputExceededException",
    "DynamoDB.ThrottlingException",
    "DynamoDB.RequestLimitExceeded",
    "DynamoDB.RequestLimitExceededException",
    "DynamoDB.InternalServerError",
    "DynamoDB.InternalServerErrorException",
    "DynamoDB.ServiceUnavailable",
    "DynamoDB.ServiceUnavailableException",
    "DynamoDB.AmazonDynamoDBException",
    "DynamoDB.SdkClientException",
]
# Transient errors of the Step Functions API, called through the AWS SDK integration.
# ("Sfn.SfnException" is the generic name a throttled or failed call may arrive with.)
TRANSIENT_SFN_ERRORS = ["Sfn.SfnException", "Sfn.ThrottlingException", "Sfn.SdkClientException", "Sfn.InternalServerException"]
# The holder's execution is gone (its history expired): nothing runs any more.
OWNER_GONE_ERRORS = ["Sfn.ExecutionDoesNotExistException", "Sfn.ExecutionDoesNotExist"]
# Transient errors of a Lambda invocation (the service's, never the function's own errors).
TRANSIENT_LAMBDA_ERRORS = [
    "Lambda.ClientExecutionTimeoutException",
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
]
