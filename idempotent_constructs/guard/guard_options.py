"""The options model of a guard (``GUARD_MODEL``): every option once, what it takes, what it does, its
default as documented, and which of the guard, the workflow, ``GuardedState`` and ``IdempotentBatch``
take it. Declarations only: the values are resolved and checked by ``config.GuardConfig``. It may import
the option kinds (``_synth``) and the classes they name; nothing of the guard's states.
"""

from __future__ import annotations

from .._synth.option_kinds import (
    BOOL,
    CHAINABLE,
    DURATION,
    ERROR_NAMES,
    TEXT,
    Kind,
    enum_kind,
    instance_of,
    key_fix,
    payload_fix,
)
from .._synth.options import Option, Options
from ..key import IdempotencyKey
from ..payload import IdempotencyPayload
from ..policies import CompletedPolicy, FailurePolicy, InFlightPolicy, ResultStorage
from ..table import WORKFLOW_TABLE

# The constructs that take the guard's options: the guard, the workflow (its guard is the whole workflow),
# GuardedState (the guard of one state of a document) and IdempotentBatch (a guard on each record of a batch).
GUARD = "IdempotencyGuard"
WORKFLOW = "IdempotentStateMachine"
GUARDED_STATE = "GuardedState"
BATCH = "IdempotentBatch"
_ALL = (GUARD, WORKFLOW, GUARDED_STATE, BATCH)

# Every option of a guard, once: what it takes, what it does, its default, and which of the guard, the
# workflow and GuardedState take it. Their signatures' documentation (Options.documented), their type
# checks (Validation) and the site's reference (docs/reference/options.md) are made from it; the
# defaults are applied by GuardConfig.
GUARD_MODEL = Options(
    Option(
        "table",
        WORKFLOW_TABLE,
        "where the records live: an ``IdempotencyTable``, or an existing table.",
        None,
        (GUARD, WORKFLOW, BATCH),
    ),
    Option("body", CHAINABLE, "the chain to protect.", None, (GUARD, BATCH)),
    Option(
        "key",
        instance_of(IdempotencyKey, key_fix),
        "how the key is derived from the input.",
        "``IdempotencyKey.whole_input()``.",
        _ALL,
        {
            BATCH: "what identifies the record, as its ``source`` names it: ``$.body`` for SQS (the message itself, which a "
            "redelivery, a producer's re-sent copy and a dead-letter queue redrive keep; its ``messageId`` does not "
            "survive a redrive), ``$.eventID`` for a stream."
        },
    ),
    Option(
        "payload",
        instance_of(IdempotencyPayload, payload_fix),
        "the part of the input a duplicate must repeat, or else fail with ``Idempotency.PayloadMismatch``: select "
        'the message, not an envelope AWS changes on redelivery (``IdempotencyPayload.from_paths("$[0].body")`` '
        "for SQS through a pipe), or ``IdempotencyPayload.none()``.",
        "``IdempotencyPayload.whole_input()``.",
        _ALL,
        {
            BATCH: "the record's message: none for SQS (the body is its key), ``$.data`` for Kinesis, "
            "``$.dynamodb.NewImage`` for DynamoDB."
        },
    ),
    Option(
        "namespace",
        TEXT,
        "prefix of the record ids.",
        "the construct path, which is stable across deploys and differs between guards, workflows and stacks.",
        _ALL,
        {
            GUARDED_STATE: "the namespace of the workflow (``IdempotentStateMachine``) or the construct path "
            "(``AslFragment``), ``/``, and the state's name (its characters that a namespace may not hold written ``_``)."
        },
    ),
    Option(
        "expires_after",
        DURATION,
        "how long a finished record is kept, counted from when its run finished; after that a duplicate runs the work again.",
        "24 hours.",
        _ALL,
    ),
    Option(
        "lease",
        DURATION,
        "how long a holder is trusted to finish before a duplicate may take the key over.",
        "15 minutes.",
        _ALL,
        {
            WORKFLOW: "15 minutes (5 minutes, the longest an Express execution runs, for Express).",
            GUARD: "15 minutes; 5 minutes where synth finds the guard in an Express state machine, whose run lasts 5 "
            "minutes at most.",
            GUARDED_STATE: "15 minutes (5 minutes in an Express workflow).",
            BATCH: "5 minutes, the longest an Express execution runs.",
        },
    ),
    Option(
        "poll_interval",
        DURATION,
        "first delay between polls of a duplicate that waits; delays double up to 30 seconds (less for a "
        "``max_wait`` under two minutes), each drawn at random up to that bound.",
        "1 second.",
        _ALL,
    ),
    Option(
        "max_wait",
        DURATION,
        "how long a duplicate waits for the holder, at most, before failing with ``Idempotency.InFlight`` (it "
        "gives up past a deadline one delay short of it: between 270 s and 5 minutes, 280 s on average).",
        "5 minutes.",
        _ALL,
        {
            WORKFLOW: "5 minutes, or 80% of the longest run if that is shorter (4 minutes for Express), so that a "
            "waiting duplicate ends in ``Idempotency.InFlight``, not ``States.Timeout``.",
            GUARD: "5 minutes; 4 minutes where synth finds the guard in an Express state machine, so that a waiting "
            "duplicate ends in ``Idempotency.InFlight``, not ``States.Timeout``.",
            GUARDED_STATE: "the workflow's (5 minutes, or 80% of its longest run if that is shorter).",
            BATCH: "4 minutes, 80% of an Express execution's longest run, so that a waiting duplicate ends in "
            "``Idempotency.InFlight``, not ``States.Timeout``.",
        },
    ),
    Option(
        "on_in_flight",
        enum_kind(InFlightPolicy),
        "``WAIT`` or ``FAIL`` while another execution holds the key.",
        "``InFlightPolicy.WAIT``.",
        _ALL,
    ),
    Option(
        "on_failure",
        enum_kind(FailurePolicy),
        "``RELEASE`` the key or ``CACHE`` the failure when the work fails; or, in a Standard ``IdempotentStateMachine``, "
        "``RELEASE_WHEN_EXECUTION_FAILS``: the chain runs bare (a first run enters two of the guard's states) and the "
        "release function frees the key from the failed execution's event, seconds later; or, in a Standard workflow "
        "(a guard of your own: with ``owner_state_machine_name``), ``KEEP_FOR_REDRIVE``: the chain runs bare and a "
        "failed execution keeps its key for its redrive.",
        "``FailurePolicy.RELEASE``.",
        _ALL,
    ),
    Option(
        "on_completed",
        enum_kind(CompletedPolicy),
        "``REPLAY`` the stored result to a duplicate after success, or ``REJECT`` it with ``Idempotency.AlreadyCompleted``.",
        "``CompletedPolicy.REPLAY``.",
        _ALL,
    ),
    Option(
        "replay_marker",
        TEXT,
        'a top-level field, such as ``"$.idempotency"``, under which a replayed object output gets '
        '``{"replayed": true, "record_id", "completed_at"}``.',
        "none, a replay outputs exactly what the work output.",
        _ALL,
    ),
    Option(
        "cache_errors",
        ERROR_NAMES,
        "with ``CACHE``, the error names to remember; any other error releases the key.",
        "every error is remembered.",
        _ALL,
    ),
    Option(
        "state_name_prefix",
        TEXT,
        "prefix of every generated state name (80 characters at most, with the longest state's name).",
        '``"{construct_id}."``.',
        (GUARD, GUARDED_STATE, BATCH),
        {GUARDED_STATE: '``"{state name}."`` (``ChargePayment.Acquire``); pass a shorter one for a long state name.'},
    ),
    Option(
        "owner_state_machine_name",
        TEXT,
        "the name of the Standard state machine this guard runs in. When given, a duplicate that finds a lapsed "
        "lease asks Step Functions whether the holder's execution still runs (``states:DescribeExecution`` on "
        "that state machine's executions, granted automatically) and never takes over a running holder.",
        "none; a lapsed lease is taken over. ``IdempotentStateMachine`` sets it for Standard workflows.",
        (GUARD,),
    ),
    Option(
        "result_storage",
        instance_of(ResultStorage, lambda value: "ResultStorage.inline() or ResultStorage.large()"),
        "how results are kept for replays.",
        "``ResultStorage.inline()``: the result in the record, as JSON written with no Lambda call when it is at "
        "most 160 KiB once escaped as a JSON string and JSONata's ``$string`` writes it exactly, else through the "
        "stack's result function, as JSON or gzip-compressed (``Idempotency.ResultTooLarge`` past 300 KB "
        "compressed). ``ResultStorage.large()`` adds S3, for results up to Step Functions' 256 KiB payload limit.",
        _ALL,
    ),
    Option(
        "once_per_execution",
        BOOL,
        "whether this guard runs at most once in an execution (it is not in a Map, a loop or a state that runs "
        "again). Its lease and wait are then written as given (or their defaults), not fitted at synth to an "
        "Express run that holds it. It still tells its own record by the owner token its write wrote, not by its "
        "execution: an Express execution that AWS restarts (at-least-once) may keep its id.",
        "``False``. ``IdempotentStateMachine`` sets it: its guard is the whole workflow.",
        (GUARD,),
    ),
    Option(
        "in_inline_map",
        BOOL,
        "whether this guard runs in the item processor of an inline Map (at any depth in it): seen at synth where "
        "it is in one of the CDK's ``sfn.Map`` s, or in a Parallel branch in one, so not needed there. A write that "
        "makes a run the holder writes an owner token that every retry of it writes again: that of the state's entry "
        "(the execution, the state, the time it was entered), by which a run whose write DynamoDB applied but "
        "reported failed knows the record as its own. Two iterations of an inline Map may enter the same state in "
        "the same millisecond, so there a ``Begin`` state draws a token of the run's own first, one more state on "
        "every run. ``True`` says it is in one; ``False`` that it is not: a guard in an inline Map whose writes use "
        "the entry's token (told ``False``, or in a Map that is no ``sfn.Map``, such as a ``CustomState``'s) is "
        "refused at synth.",
        "``None``: seen at synth. ``IdempotentBatch`` sets it, and ``guard_states`` sets it from its document: "
        "``True`` for a state in a Map's item processor there, and otherwise ``False`` in an "
        "``IdempotentStateMachine`` (the document is the workflow) and ``None`` in an ``AslFragment`` (placed in "
        "an ``sfn.Map`` of your chain, its guards are seen in it).",
        (GUARD, GUARDED_STATE),
    ),
)
# What each option shared by IdempotencyGuard and IdempotentStateMachine takes.
OPTIONS: dict[str, Kind] = GUARD_MODEL.kinds(WORKFLOW)
# IdempotencyGuard's own.
GUARD_OPTIONS: dict[str, Kind] = GUARD_MODEL.kinds(GUARD)
