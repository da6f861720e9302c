"""The first phase: compute the key and take it (``Acquire``), or take over a lapsed holder's key.

Acquire is one conditional write whose request computes the record id, the payload digest, the
owner token and the clock natively; the chain's input passes through untouched. A JMESPath key,
which JSONata cannot evaluate, and an input beyond the bounds within which the native key stays
inside AWS's JSONata bounds (B18), are computed by the key function (``ComputeKey``).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from aws_cdk import aws_stepfunctions as sfn

from .._jsonata import key_expressions, sizes
from .._jsonata.key_expressions import literal
from .._readers import key_settings
from ..lambda_src import schema
from . import record_tasks
from .protocol import CONDITION_FAILED, OWNER, QUERY_FAILED, expression
from .tasks import SAME_INPUT, GuardState, ItemTask, fail, invoke, item_task, kit

if TYPE_CHECKING:
    from . import IdempotencyGuard
    from .config import GuardConfig


def _assign(guard: IdempotencyGuard, fields: dict[str, str]) -> dict[str, str]:
    return {guard.facts.name: expression(record_tasks.jsonata_object(fields))}


def _holding(guard: IdempotencyGuard, state: str, arguments: str, *, entry: bool = False) -> ItemTask:
    """A write that takes the key; ``Acquire``, which every guard has, says what makes its ids (``key_settings``);
    ``entry``: an ``_Entry``."""
    task = (_Entry if entry else item_task)(
        guard,
        state,
        config=guard.config,
        action="updateItem",
        arguments=arguments,
        assign=_assign(guard, record_tasks.held(guard.config)),
        comment=key_settings.comment(settings(guard.config)) if state == "Acquire" else None,
    )
    return task


MISSING = "The idempotency key selection is missing, null or empty in the input, or holds a number of magnitude 2^53 or more."
PAYLOAD_MISSING = "The payload selection selects nothing in the input."


def _cause(raised: str, otherwise: str) -> str:
    """JSONata for a missing selection's cause: one short sentence, never a payload value nor a dump of
    the generated expression: the key function's message (its error's cause is the Lambda error as
    JSON), or, where a JSONata expression raised while ComputeKey's request was built, ``raised`` and what
    JSONata said after AWS's sentence."""
    return (
        "($c := $states.input.Cause; $not($type($c) = 'string') ? "
        f"{literal(otherwise)} : $substring($c, 0, 1) = '{{' ? $parse($c).errorMessage : "
        f"$contains($c, 'threw an error during evaluation') ? {raised} & $replace($c, /^[\\s\\S]*threw an error during evaluation[.:] /, '') : $c)"
    )


def key_missing(guard: IdempotencyGuard) -> GuardState:
    return fail(
        guard, guard.config, "KeyMissing", error=schema.KEY_MISSING, cause=expression(_cause(_raised(guard.config), MISSING))
    )


def payload_missing(guard: IdempotencyGuard) -> GuardState:
    cause = _cause(_payload_raised(guard.config), PAYLOAD_MISSING)
    return fail(guard, guard.config, "PayloadMissing", error=schema.PAYLOAD_MISSING, cause=expression(cause))


def _payload_raised(config: GuardConfig) -> str:
    """What raised, where a JSONata payload raised while ComputeKey's request was built (only a JSONata
    payload is evaluated there: the same text for every other kind, so that workflows share it)."""
    if config.payload.kind == schema.KIND_JSONATA:
        return literal(f"the payload expression {config.payload.expression} raised: ")
    return literal("the payload selection raised: ")


def _raised(config: GuardConfig) -> str:
    """What a JSONata expression that raised while ComputeKey's request was built was, where the key's:
    the key's, or, where the payload is JSONata too, one of the two (AWS's cause names the whole
    request's expression). Only a JSONata key is the user's own text; any other key is the selection
    the library wrote, named so (never a Python value)."""
    key = f"the key expression {config.key.expression}" if config.key.kind == schema.KIND_JSONATA else "the key selection"
    if config.payload.kind == schema.KIND_JSONATA:
        return literal(f"{key} or the payload expression {config.payload.expression} raised: ")
    return literal(f"{key} raised: ")


def _sends_input(config: GuardConfig) -> bool:
    """Whether the key function needs the input: not where it gets every selection made (a JSONata key,
    and a JSONata payload or none), so that a selection as large as the input does not halve what fits."""
    return config.key.kind != schema.KIND_JSONATA or config.payload.kind not in (schema.KIND_JSONATA, schema.KIND_NONE)


def _fields(config: GuardConfig) -> dict[str, str]:
    """The key function's request besides the input (and a JSONata key's or payload's selection)."""
    fields = {
        "namespace": literal(config.namespace),
        "kind": literal(config.key.kind),
        "expression": f"$parse({literal(json.dumps(config.key.expression))})",
    }
    if config.payload.kind != schema.KIND_WHOLE_INPUT:
        fields["payload_kind"] = literal(config.payload.kind)
        fields["payload_expression"] = f"$parse({literal(json.dumps(config.payload.expression))})"
    return fields


def _input_limit(config: GuardConfig) -> int:
    """The most bytes the input may take for the key function's request to stay within 256 KiB: what
    the request holds besides the input, the selections and the numbers' digits (sizes.payload_bytes)."""
    expressions = len(json.dumps(config.key.expression)) + len(json.dumps(config.payload.expression))
    return 262_144 - (sizes.TASK_OVERHEAD + len(json.dumps(_fields(config))) + expressions)


def settings(config: GuardConfig) -> key_settings.KeySettings:
    """What this guard's record ids and validations are computed from."""
    key, payload = config.key, config.payload
    return key_settings.KeySettings(config.namespace, key.kind, key.expression, payload.kind, payload.expression)


def key_texts(guard: IdempotencyGuard) -> dict[str, str]:
    """The texts of this phase's states that name the guard's namespace or key, by what each is, as
    JSONata holds them: everything else a guard generates is the same for every guard of the same
    options and prefix, so that workflows alike can share their definitions' text (``definition``)."""
    config = guard.config
    kind, expression = config.key.kind, config.key.expression
    texts = {
        "Namespace": literal(config.namespace),
        "NamespacePrefix": literal(schema.id_prefix(config.namespace)),
        "KeyExpression": literal(json.dumps(expression)),
        "KeyRaised": _raised(config),
        "KeyInputLimit": str(_input_limit(config)),
    }
    if kind not in (schema.KIND_JMESPATH, schema.KIND_WHOLE_INPUT):
        texts["KeySelection"] = key_expressions.selection(kind, expression, "$states.input")
    if kind == schema.KIND_JSONATA:
        texts["KeyJSONata"] = str(expression)
    payload = config.payload
    if payload.kind != schema.KIND_WHOLE_INPUT:
        texts["PayloadExpression"] = literal(json.dumps(payload.expression))
    if payload.kind in (schema.KIND_PATHS, schema.KIND_JSONATA):
        parts = key_expressions.payload_parts(payload.kind, payload.expression, "$states.input")
        texts.update(zip(("PayloadSelection", "PayloadMeasured", "PayloadText"), parts, strict=True))
        texts["PayloadMembers"] = key_expressions.payload_members(payload.kind, payload.expression, "$states.input")
    if payload.kind == schema.KIND_JSONATA:
        texts["PayloadJSONata"] = str(payload.expression)
        texts["PayloadRaised"] = _payload_raised(config)
    return texts


def _compute_key(guard: IdempotencyGuard, missing: sfn.Fail) -> GuardState:
    """The key function's call: the record id and payload digest computed in Python, for a JMESPath key
    (JSONata cannot evaluate one) and for an input beyond the native key's bounds (B18). The input goes
    whole; a JSONata key's selection goes made, since only JSONata can evaluate it. An input too large to
    send goes as ``null`` with ``too_large`` set, and the function fails ``Idempotency.InputTooLarge``."""
    config = guard.config
    fields = _fields(config)
    sends_input = _sends_input(config)
    measured, selected = [sizes.payload_bytes("$states.input")] if sends_input else [], ""
    # Made here, as they are (the key function judges them): only JSONata evaluates a JSONata expression.
    for field, selection in (("selection", config.key), ("payload_selection", config.payload)):
        if selection.kind == schema.KIND_JSONATA:
            fields[field] = f"${field}"
            selected += f"${field} := ({selection.expression}); "
            measured.append(f"($exists(${field}) ? {sizes.payload_bytes(f'${field}')} : 0)")
    given = "$states.input" if sends_input else "null"
    request = record_tasks.jsonata_object({"input": f"$fits ? {given} : null", "too_large": "$not($fits)", **fields})
    size = " + ".join(measured)
    compute = invoke(
        guard,
        config,
        "ComputeKey",
        guard.key_function,
        expression(f"({selected}$fits := {size} <= {_input_limit(config)}; {request})"),
        outputs=SAME_INPUT,
        assign={guard.facts.name: expression(_drawn(config, "$states.result"))},
    )
    # A JSONata expression that raised building the request is the payload's where only the payload is JSONata.
    payload_raises = config.payload.kind == schema.KIND_JSONATA and config.key.kind != schema.KIND_JSONATA
    compute.add_catch(missing, errors=[schema.KEY_MISSING] if payload_raises else [schema.KEY_MISSING, QUERY_FAILED])
    if config.payload.kind not in (schema.KIND_WHOLE_INPUT, schema.KIND_NONE):  # only a selection can select nothing
        compute.add_catch(
            payload_missing(guard), errors=[schema.PAYLOAD_MISSING, QUERY_FAILED] if payload_raises else [schema.PAYLOAD_MISSING]
        )
    return compute


def _drawn(config: GuardConfig, facts: str) -> str:
    """JSONata for the guard's variable ``facts`` (an object, JSONata), with a new owner token where the guard
    draws its token before its first write (in an inline Map: ``record_tasks.owner_written``)."""
    return config.placement.choose(f"$merge([{facts}, {record_tasks.jsonata_object({OWNER: record_tasks.NEW_OWNER})}])", facts)


def acquire(guard: IdempotencyGuard, inspect: sfn.IChainable, missing: sfn.Fail) -> tuple[GuardState, list[GuardState]]:
    """``(start state, every write that takes a free key)``, the last of which takes the key already in
    the variable; a taken key goes to ``inspect`` with the key in the variable.

    The key is computed natively in ``Acquire``'s own request where it can be (``_jsonata.key_expressions``);
    ``Acquire`` raises, before anything is written, for a missing key or an input beyond the native
    bounds, and the key function tells which it was: it computes the key, which ``AcquireComputed``
    takes, or fails ``Idempotency.KeyMissing``. A JMESPath key starts with the key function, and its
    write is ``Acquire``.

    Each write that takes the key writes the token of its state entry (``record_tasks.ENTRY_OWNER``), the
    same in each of its retries. In an inline Map (``placement.Placement``), ``Begin`` draws the token before
    ``Acquire`` (a state's retries evaluate its request again, a $uuid() in it anew; a state's ``Assign``,
    once), and ``ComputeKey`` draws another, which ``AcquireComputed`` writes. Where that is seen at synth,
    ``Acquire`` is an ``_Entry``."""
    config, facts = guard.config, guard.facts
    native = config.native
    compute = _compute_key(guard, missing)
    keyed = _holding(guard, "AcquireComputed" if native else "Acquire", record_tasks.acquire(config, facts, computed=True))
    compute.next(keyed)
    keyed.catch(inspect, [CONDITION_FAILED], assign=refused(guard))
    if not native:
        return compute, [keyed]
    told = config.placement.known
    task = _holding(guard, "Acquire", record_tasks.acquire(config, facts), entry=told is None)
    # The failed write's key is computed again: a catcher cannot see the request's values.
    task.catch(inspect, [CONDITION_FAILED], assign=refused(guard, record_tasks.key(config, facts)))
    task.catch(compute, [QUERY_FAILED])
    if not told:
        return task, [task, keyed]
    begin = _begin(guard)
    begin.next(task)
    return begin, [task, keyed]


def _begin(guard: IdempotencyGuard) -> GuardState:
    """``Begin``, which draws the run's owner token: each run of the guard starts afresh, and what the
    variable held from an earlier run (a loop) goes."""
    return kit(guard).Pass.jsonata(guard, "Begin", state_name=guard.config.name("Begin"), assign=_drawing(guard))


def _drawing(guard: IdempotencyGuard) -> dict[str, str]:
    return {guard.facts.name: expression(record_tasks.jsonata_object({OWNER: record_tasks.NEW_OWNER}))}


class _Entry(ItemTask):
    """``Acquire`` of a guard whose place is seen at synth (``placement.Placement``), made before it is placed:
    the state its predecessors go to. In an inline Map it is named and rendered as ``Begin`` (as ``_begin``
    renders), whose next state, its twin, renders the write as ``Acquire``; anywhere else it is named
    ``Acquire``, and its twin, bound into the graph right after it, renders the write under that same name,
    which the template keeps once (its twin's). The twin is a state of its own in the CDK's graph, with no
    transitions: the write's are the entry's."""

    def __init__(self, guard: IdempotencyGuard, construct_id: str, **props: Any) -> None:
        super().__init__(guard, construct_id, **props)
        config = guard.config
        self._name = config.placement.choose(config.name("Begin"), config.name("Acquire"))
        self._draws = _drawing(guard)
        self._twin = _Twin(self, construct_id, entry=self)
        self._twin.add_prefix(config.prefix)

    @property
    def state_id(self) -> str:
        return getattr(self, "_name", None) or super().state_id

    def _when_bound_to_graph(self, graph: sfn.StateGraph) -> None:
        super()._when_bound_to_graph(graph)
        self._twin.bind_to_graph(graph)

    def to_state_json(self, query_language: sfn.QueryLanguage | None = None) -> Any:
        # As the CDK renders a JSONata Pass: its query language where the state machine's is JSONPath.
        declared = {} if query_language == sfn.QueryLanguage.JSONATA else {"QueryLanguage": "JSONata"}
        return {"Type": "Pass", **declared, "Next": self._twin.state_id, "Assign": self._draws}

    def write(self, query_language: sfn.QueryLanguage | None = None) -> Any:
        return super().to_state_json(query_language)


class _Twin(sfn.CustomState):
    """The write of an ``_Entry``, named ``Acquire``."""

    def __init__(self, scope: _Entry, construct_id: str, *, entry: _Entry) -> None:
        super().__init__(scope, construct_id, state_json={})
        self._entry = entry

    def to_state_json(self, query_language: sfn.QueryLanguage | None = None) -> Any:
        return self._entry.write(query_language)


def takeover(guard: IdempotencyGuard, inspect: sfn.IChainable) -> ItemTask:
    task = _holding(guard, "Takeover", record_tasks.takeover(guard.config, guard.facts))
    task.catch(inspect, [CONDITION_FAILED], assign=refused(guard))
    return task


def refused(guard: IdempotencyGuard, known: str | None = None) -> dict[str, str] | None:
    """The Assign of the Catch of a write that would have made the run the holder, refused by its condition:
    the guard's variable is ``known`` (JSONata; None: as it is), with the owner token the write wrote
    (``record_tasks.owner_written``), by which the route knows the record as the run's own if an earlier
    attempt of that very write was applied. A token of the write's state entry is computed again here, in
    the same entry; one drawn first is in the variable already (where that is seen only at synth, the Assign
    writes it again)."""
    config, facts = guard.config, guard.facts
    if config.placement.known and known is None:
        return None
    base = known if known is not None else f"${facts.name}"
    token = record_tasks.owner_written(config, facts)
    return {facts.name: expression(f"$merge([{base}, {record_tasks.jsonata_object({OWNER: token})}])")}
