"""The reads and writes of a guard's record, as JSONata that builds each DynamoDB request.

Every write after the acquire is fenced on the owner token (contract B8); the acquire on the record being
absent or finished and expired, and the takeover on the record as it was read (owner, status and lease). Each function returns the JSONata text of a whole request.
"""

from __future__ import annotations

import re

from .._jsonata.key_expressions import literal, record_id_and_validation
from .._jsonata.sizes import BYTES, JSON
from .._synth import read_once
from ..lambda_src import schema
from .config import AtSynth, GuardConfig
from .protocol import ID, OWNER, READ_ATTRIBUTES, VALIDATION, Facts

_RESULTS = (schema.DATA, schema.DATA_GZIP, schema.DATA_LOCATION)


def jsonata_object(fields: dict[str, str]) -> str:
    """A JSONata object constructor of ``fields`` (name: JSONata value)."""
    return "{" + ", ".join(f"{literal(name)}: {value}" for name, value in fields.items()) + "}"


def _s(value: str) -> str:
    return "{'S': " + value + "}"


def _n(value: str) -> str:
    return "{'N': $string(" + value + ")}"


KEY_FORMAT = "{'N': '" + str(schema.KEY_FORMAT) + "'}"  # written with every id and validation the states write


def shard(record_id: str) -> str:
    """JSONata for the record's ``schema.SHARD`` (``schema.shard_of``): the id but the last 63 of its hash's
    64 hex digits (the same text for every namespace, so that workflows alike share their definition's)."""
    return f"$substring({record_id}, 0, $length({record_id}) - 63)"


def _request(
    config: GuardConfig,
    record_id: str,
    *,
    condition: str | None = None,
    set_values: dict[str, str] | None = None,
    remove: tuple[str, ...] = (),
    values: dict[str, str] | None = None,
    projection: tuple[str, ...] = (),
    **fields: str,
) -> str:
    """A request on the record ``record_id``: ``set_values`` maps attributes to JSONata typed values,
    ``values`` the condition's own placeholders; attribute names are declared for each ``#name`` used."""
    expressions = dict(fields)
    placeholders = dict(values or {})
    if set_values:
        update = "SET " + ", ".join(f"#{name} = :{name}" for name in set_values)
        if remove:
            update += " REMOVE " + ", ".join(f"#{name}" for name in remove)
        expressions["UpdateExpression"] = literal(update)
        placeholders.update({f":{name}": value for name, value in set_values.items()})
    if condition is not None:
        expressions["ConditionExpression"] = literal(condition)
    if projection:
        expressions["ProjectionExpression"] = literal(", ".join(f"#{name}" for name in projection))
    # DynamoDB refuses a declared name that no expression uses.
    used = " ".join((condition or "", *(f"#{name}" for name in (*(set_values or ()), *remove, *projection))))
    names = [name for name in schema.ATTRIBUTES if re.search(f"#{name}\\b", used)]
    request = {
        "TableName": literal(read_once.table(config.table).name),
        "Key": jsonata_object({schema.ID: _s(record_id)}),
        **expressions,
    }
    if names:
        request["ExpressionAttributeNames"] = jsonata_object({f"#{name}": literal(name) for name in names})
    if placeholders:
        request["ExpressionAttributeValues"] = jsonata_object(placeholders)
    return jsonata_object(request)


def key(config: GuardConfig, facts: Facts, *, computed: bool = False) -> str:
    """JSONata for ``{id, validation, members}`` of the state's input: computed natively, or, where
    ``computed`` (after the key function), what the key function put in the guard's variable."""
    if computed:
        return f"${facts.name}"
    return record_id_and_validation(
        config.namespace, config.key.kind, config.key.expression, "$states.input", config.payload.kind, config.payload.expression
    )


# A new owner token: this execution, and a holder id no other run has.
NEW_OWNER = f"$states.context.Execution.Id & '{schema.OWNER_SEPARATOR}' & $uuid()"
# The owner token of a write that makes a run the holder, the same in every attempt of that write: this
# execution, and the state and the time it was entered. A state's retries are attempts of one entry of it:
# its context's State.EnteredTime stays, only State.RetryCount grows (AWS's context object; one
# "...StateEntered" event in the history for all of them). Two runs tell their entries apart by it, but
# for two iterations of an inline Map, which may enter the same state in the same millisecond.
ENTRY_OWNER = (
    f"$states.context.Execution.Id & '{schema.OWNER_SEPARATOR}' & $states.context.State.Name & '@' & "
    "$states.context.State.EnteredTime"
)


def owner_written(config: GuardConfig, facts: Facts) -> str:
    """JSONata for the owner token a write that makes a run the holder writes, the same in every attempt
    of it, so that a write DynamoDB applied but reported failed, retried, is refused by its condition and
    the route knows the record by its token as the run's own (B12): the token of the write's state entry
    (``ENTRY_OWNER``), or, in an inline Map (``placement.Placement``), the one drawn first, in ``Begin``
    before the first write (or in ``ComputeKey`` where that comes first). A guard that runs once per execution
    too: an Express execution that AWS restarts from the beginning keeps its id, maybe while its first attempt
    still runs, so the execution alone does not tell the run's own record."""
    return config.placement.choose(facts(OWNER), ENTRY_OWNER)


# The payload's members' digests, typed (``$k.members``: ``payload_members``), as a DynamoDB map; empty where
# none were computed.
_MEMBERS = "{'M': $merge([{}, $k.members])}"


def _hold(config: GuardConfig, facts: Facts, key_value: str, condition: str, values: dict[str, str]) -> str:
    """A write that makes this run the holder: ``$k`` is ``{id, validation, members}``; the clock, and the
    owner token where the write draws it, are read once, in this one expression."""
    lease_ms = _lease_ms(config)
    request = _request(
        config,
        "$k.id",
        condition=condition,
        set_values={
            schema.STATUS: _s(literal(schema.INPROGRESS)),
            schema.EXPIRATION: _n(f"$floor($now / 1000) + {config.hold_seconds}"),
            schema.IN_PROGRESS_EXPIRATION: _n(f"$now + {lease_ms}"),
            schema.OWNER: _s(owner_written(config, facts)),
            schema.VALIDATION: _s("$k.validation"),
            schema.PAYLOAD_MEMBERS: _MEMBERS,
            schema.KEY_FORMAT_ATTRIBUTE: KEY_FORMAT,
            schema.SHARD: _s(shard("$k.id")),
            schema.HELD_BY: _s("$states.context.Execution.Id"),
        },
        remove=(*_RESULTS, schema.ERROR, schema.CAUSE),
        values=values,
        ReturnValues="'ALL_NEW'",
    )
    return f"($k := {key_value}; $now := $millis(); {request})"


def acquire(config: GuardConfig, facts: Facts, *, computed: bool = False) -> str:
    """Absent, or finished and expired (DynamoDB's TTL deletion can lag by days; ``:status`` is
    INPROGRESS): B11. A record in
    progress is never overwritten here; a lapsed one goes through the route's takeover."""
    return _hold(
        config,
        facts,
        key(config, facts, computed=computed),
        f"attribute_not_exists(#{schema.ID}) OR (#{schema.EXPIRATION} < :now AND #{schema.STATUS} <> :{schema.STATUS})",
        {":now": _n("$floor($now / 1000)")},
    )


def takeover(config: GuardConfig, facts: Facts) -> str:
    """Fenced on the record as it was read: its owner, status and lease. If anyone changed it since (its
    holder finished it, released it or extended its lease; another run took it over), look again: a holder
    that extended its lease between this run's read and this write keeps its key (contract B8). A finished
    record written where there was none (a holder's result stored after its record was released) has no
    lease: then the lease must still be absent."""
    lease = facts.record(schema.IN_PROGRESS_EXPIRATION, "N")
    return _hold(
        config,
        facts,
        f"${facts.name}",
        f"#{schema.OWNER} = :previous AND #{schema.STATUS} = :previous_status AND "
        f"(#{schema.IN_PROGRESS_EXPIRATION} = :previous_lease OR attribute_not_exists(#{schema.IN_PROGRESS_EXPIRATION}))",
        {
            ":previous": _s(facts.record(schema.OWNER)),
            ":previous_status": _s(facts.record(schema.STATUS)),
            # No lease read: a number no lease is, so that only its absence passes.
            ":previous_lease": "{'N': $exists(" + lease + ") ? " + lease + " : '0'}",
        },
    )


def held(config: GuardConfig) -> dict[str, str]:
    """The guard's variable after a write that made this run the holder (``ReturnValues: ALL_NEW``)."""
    attributes = "$states.result.Attributes"
    return {
        ID: f"{attributes}.{schema.ID}.S",
        VALIDATION: f"{attributes}.{schema.VALIDATION}.S",
        OWNER: f"{attributes}.{schema.OWNER}.S",
    }


def extend_lease(config: GuardConfig, facts: Facts) -> str:
    """The holder's lease, and the record's retention, pushed forward from now; fenced on the owner
    token and on the record still being in progress."""
    return _request(
        config,
        facts(ID),
        condition=f"{schema.FENCE} AND #{schema.STATUS} = :held",
        set_values={
            schema.IN_PROGRESS_EXPIRATION: _n(f"$millis() + {_lease_ms(config)}"),
            schema.EXPIRATION: _n(f"$floor($millis() / 1000) + {config.hold_seconds}"),
        },
        values={f":{schema.OWNER}": _s(facts(OWNER)), ":held": _s(literal(schema.INPROGRESS))},
    )


def _lease_ms(config: GuardConfig) -> str:
    """The lease in milliseconds, read at synth: a default lease fits an Express run (``fit_express``)."""
    return AtSynth.text(config, lambda: int(read_once.millis(config.lease)))


def read(config: GuardConfig, facts: Facts) -> str:
    return _request(config, facts(ID), projection=READ_ATTRIBUTES, ConsistentRead="true")


def _finish(config: GuardConfig, facts: Facts, set_values: dict[str, str], remove: tuple[str, ...]) -> str:
    """The fenced write that ends a run: still ours, or gone (released after this execution failed,
    which a redrive of it then completes). The record expires ``expires_after`` from now."""
    return _request(
        config,
        facts(ID),
        condition=schema.FENCE_OR_RELEASED,
        set_values={
            schema.EXPIRATION: _n(f"$floor($millis() / 1000) + {int(read_once.seconds(config.expires_after))}"),
            schema.OWNER: _s(facts(OWNER)),
            schema.VALIDATION: _s(facts(VALIDATION)),
            schema.KEY_FORMAT_ATTRIBUTE: KEY_FORMAT,
            schema.SHARD: _s(shard(facts(ID))),
            **set_values,
        },
        remove=(*remove, schema.HELD_BY),
    )


def complete(config: GuardConfig, facts: Facts, result: str) -> str:
    """The result, as JSON in the record, when the native write can keep it exactly: ``$string``
    writes numbers with 15 significant digits, so a result it cannot give back equal (such as
    ``0.30000000000000004``), or one too large for the record, raises, and the guard stores it
    through the result function instead."""
    write = _finish(
        config,
        facts,
        {schema.STATUS: _s(literal(schema.COMPLETED)), schema.DATA: _s("$d")},
        (schema.DATA_GZIP, schema.DATA_LOCATION, schema.ERROR, schema.CAUSE),
    )
    return (
        f"({BYTES}{JSON} $r := {result}; $d := $json($r);"
        f" ($parse($d) = $r and $bytes($d) <= {config.native_limit} and $bytes($json($d)) <= {schema.RECORD_DATA_LIMIT})"
        f" ? {write} : $error('the result is kept by the result function: the native write cannot keep it exactly'))"
    )


def record_failure(config: GuardConfig, facts: Facts, error: str) -> str:
    """``error`` (JSONata) is the run's error, ``{Error, Cause}``."""
    return (
        "($e := "
        + error
        + "; "
        + _finish(
            config,
            facts,
            {
                schema.STATUS: _s(literal(schema.FAILED)),
                schema.ERROR: _s("$string($e.Error)"),
                schema.CAUSE: _s("($exists($e.Cause) ? $string($e.Cause) : '')"),
            },
            _RESULTS,
        )
        + ")"
    )


def release(config: GuardConfig, facts: Facts) -> str:
    return _request(config, facts(ID), condition=schema.FENCE, values={f":{schema.OWNER}": _s(facts(OWNER))})
