"""The Amazon States Language as Step Functions runs it, for the definitions the explorer synthesizes:
JSONata states (a JSONPath one, or a field the explorer does not know, raises ``Unsupported`` rather than
be guessed at), each field evaluated by the project's JSONata engine with the run's clock and UUIDs.

A run advances in *steps*. A step begins at a *visible* state, one whose outcome depends on the world
around the run: a Task (a call that reads or writes what other runs see) or a Choice or Pass that reads
the clock. It executes that state with one *outcome* for its call (``OK``; ``FAULT``: failed before taking
effect; ``LOST``: took effect and its reply was lost), then every state after it that depends on nothing
but the run (Choice and Pass states that do not read the clock, Wait, Parallel and Map entries, Succeed,
Fail), up to the next visible state or the run's end. What other runs do between two steps cannot change
what those states do, so each step is one transition of the explored world.

Retry and Catch run as written: a retry is the same state entered once (its ``State.EnteredTime`` kept,
``State.RetryCount`` grown); a Wait's or a retrier's delay is left to the clock, which may tick between any
two steps, so no delay is assumed of any length. Parallel branches and Map items run one after the other.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import Any

from idempotent_constructs._jsonata.engine import UNDEFINED, Clock, JSONataError, evaluate
from idempotent_constructs.lambda_src import schema

from . import services
from .configurations import MACHINE, Configuration
from .world import EPOCH_MS, Frame, Run, World, describe_item, iso, text, value

OK, FAULT, LOST = "ok", "fault", "lost"
QUERY_FAILED = "States.QueryEvaluationError"
# The errors a call fails with where the explorer injects a fault: before its effect, or after it (the reply lost).
FAULT_ERRORS = {
    "dynamodb": "DynamoDB.ProvisionedThroughputExceededException",
    "lambda": "Lambda.ServiceException",
    "sfn": "Sfn.ThrottlingException",
}
LOST_ERRORS = {"dynamodb": "DynamoDB.InternalServerError", "lambda": "Lambda.SdkClientException"}
# The side effect's own failure, before it acts (a declined payment): not an error the service retries.
EFFECT_FAILED = "Effect.Failed"
INJECTED = "injected by the explorer"
# A bound of the exploration, not of the definition: the retries of a waiter's poll explored. A poll only
# reads, and the waiter decides on its last read and the clock, so more polls reach no world that fewer do
# but for their count; the retrier's MaxAttempts (tens, for a deadline that jittered delays may take many
# polls to reach) would multiply the worlds by it. A waiter whose polls run out gives up (InFlight), as one
# past its deadline does.
POLL_RETRIES = 1


class Unsupported(Exception):
    """The definition holds something the explorer does not interpret."""


class Refused(Exception):
    """A call the states built was refused as AWS refuses it (a request DynamoDB does not accept)."""


class Failed(Exception):
    """A state failed with ``error`` and ``cause``."""

    def __init__(self, error: str, cause: str = "") -> None:
        super().__init__(error)
        self.error, self.cause = error, cause


@dataclass
class Write:
    """An item call a step made that changed the item: the action, the request, the item before and after."""

    action: str
    request: dict[str, Any]
    before: dict[str, Any] | None
    after: dict[str, Any] | None


@dataclass
class Step:
    """What one step did: the run after it, its item write (if one took effect), the function calls it made
    (by kind), what it did in words, the requests its history records, and the item as it left it."""

    run: Run
    world: World
    write: Write | None = None
    calls: list[str] = field(default_factory=list)
    said: list[str] = field(default_factory=list)


@cache
def _evaluate(expression: str, bindings: str, millis: int, draws: str, drawn: int) -> tuple[Any, int, str | None]:
    """``(value, UUIDs drawn, error)`` of one evaluation; keyed on the clock and the draws only where the
    expression reads them."""
    count = drawn

    def uuid() -> str:
        nonlocal count
        count += 1
        return f"{draws}-uuid-{count}"

    try:
        result = evaluate(expression, value(bindings), clock=Clock(millis, uuid))
    except JSONataError as error:
        return None, count, f"The JSONata expression '{expression[:60]}...' threw an error during evaluation. {error}"
    if result is UNDEFINED:
        return None, count, f"The JSONata expression '{expression[:60]}...' returned nothing (undefined)."
    return result, count, None


@lru_cache(maxsize=65536)
def _context(arn: str, execution: str, redrives: int, state: str, entered: int, retries: int) -> str:
    """The context object's text, as a state of the run reads it (``$states.context``)."""
    return text(
        {
            "Execution": {"Id": arn, "Name": execution, "RedriveCount": redrives},
            "StateMachine": {"Name": MACHINE},
            "State": {"Name": state, "EnteredTime": iso(entered), "RetryCount": retries},
        }
    )


def expression_of(template: Any) -> str | None:
    if isinstance(template, str) and template.startswith("{%") and template.endswith("%}"):
        return template[2:-2].strip()
    return None


class Machine:
    """One configuration's definition, its scopes indexed: ``""`` the definition's own states, and
    ``"{state}#{n}"`` (a Parallel's branch) and ``"{state}#items"`` (a Map's item processor) within."""

    def __init__(self, configuration: Configuration) -> None:
        self.configuration = configuration
        self.definition = configuration.definition
        self.language = self.definition.get("QueryLanguage", "JSONPath")
        self.scopes: dict[str, dict[str, Any]] = {}
        self._index("", self.definition)
        processor = configuration.item_processor
        self.root = "" if processor is None else f"{processor}#items"
        self._visible: dict[tuple[str, str], bool] = {}
        self._entry: dict[tuple[str, str], bool] = {}
        self.entered: set[str] = set()  # the states some run entered (by name), for the report's coverage

    def _index(self, scope: str, graph: dict[str, Any]) -> None:
        self.scopes[scope] = graph
        for name, state in graph["States"].items():
            inner = f"{scope}/{name}" if scope else name
            for number, branch in enumerate(state.get("Branches", [])):
                self._index(f"{inner}#{number}", branch)
            if "ItemProcessor" in state:
                self._index(f"{inner}#items", state["ItemProcessor"])

    def state(self, scope: str, name: str) -> dict[str, Any]:
        found: dict[str, Any] = self.scopes[scope]["States"][name]
        return found

    @property
    def names(self) -> set[str]:
        """The name of every state of the definition."""
        return {name for graph in self.scopes.values() for name in graph["States"]}

    def start(self, run: str, execution: str, payload: Any, world: World) -> Run:
        """A run entering its first state, settled at its first visible state."""
        begun = Run(name=run, execution=execution, frames=())
        stepper = _Stepper(self, world, begun)
        stepper.enter(self.root, self.scopes[self.root]["StartAt"], payload)
        stepper.settle()
        return stepper.done().run

    def visible(self, frame: Frame) -> bool:
        """Whether the state ``frame`` is in is visible: a Task, or a Choice or Pass that reads the clock."""
        key = (frame.scope, frame.state)
        if key not in self._visible:
            state = self.state(*key)
            clock = "$millis" in json.dumps(state)
            self._visible[key] = state["Type"] == "Task" or (state["Type"] in ("Choice", "Pass") and clock)
        return self._visible[key]

    def outcomes(self, run: Run) -> tuple[str, ...]:
        """The outcomes the visible state of ``run`` may have: a write (an item write, a function's invocation)
        may lose its reply, and any call may fail before its effect, where that failure is not retried (a
        failure its state retries is the same state again, later: the clock may tick between any two steps,
        so it is no new behaviour, and the bounds never spend a retrier's attempts); a state that calls
        nothing has one outcome."""
        frame = run.top
        state = self.state(frame.scope, frame.state)
        if state["Type"] != "Task":
            return (OK,)
        service, action = self.service(state)
        found: tuple[str, ...] = (OK,)
        if _Stepper.retry(frame, state, self.fault(state)) is None:
            found += (FAULT,)
        if service == "lambda" or (service == "dynamodb" and action in services.WRITES):
            found += (LOST,)
        return found

    def entry_read(self, scope: str, name: str) -> bool:
        """Whether the state reads when it was entered (``State.EnteredTime``: the owner token of a write that
        takes the key). Where it does not, its frames hold 0, so that states alike are one state."""
        key = (scope, name)
        if key not in self._entry:
            self._entry[key] = "EnteredTime" in json.dumps(self.state(scope, name))
        return self._entry[key]

    def fault(self, state: dict[str, Any]) -> str:
        """The error a Task fails with before its effect: the service's transient one, or the side effect's own."""
        service, action = self.service(state)
        if service == "lambda" and action == "invoke" and self.function(state["Arguments"]["FunctionName"]) == "effect":
            return EFFECT_FAILED
        return FAULT_ERRORS[service]

    def service(self, state: dict[str, Any]) -> tuple[str, str]:
        resource = state["Resource"]
        if resource.startswith("arn:aws:states:::dynamodb:"):
            return "dynamodb", resource.rsplit(":", 1)[1]
        if resource == "arn:aws:states:::lambda:invoke":
            return "lambda", "invoke"
        if resource == "arn:aws:states:::aws-sdk:sfn:describeExecution":
            return "sfn", "describeExecution"
        if resource.startswith("${") or ":function:" in resource:
            return "lambda", "direct"
        raise Unsupported(f"the explorer does not call {resource}")

    def function(self, name: str) -> str:
        """What the function a Task names is: "effect", "result" or "key"."""
        logical_id = name[2:].split("}")[0].split(".")[0] if name.startswith("${") else name.rsplit(":", 1)[-1]
        kind = self.configuration.functions.get(logical_id)
        if kind is None:
            raise Unsupported(f"the explorer does not know the function {name}")
        return kind

    def step(self, run: Run, world: World, outcome: str) -> Step:
        """``run``'s visible state executed with ``outcome``, then every state after it up to the next visible
        one (or the run's end)."""
        stepper = _Stepper(self, world, run)
        stepper.execute(outcome)
        stepper.settle()
        return stepper.done()

    def resume(self, run: Run, world: World) -> Step:
        """``run``, redriven: its state entered again, its retries spent afresh, then settled."""
        frame = run.top
        stepper = _Stepper(self, world, run._replace(ended=None, output=None))
        entered = world.clock(run) if self.entry_read(frame.scope, frame.state) else 0
        stepper.frames[-1] = frame._replace(entered=entered, retries=(), results=())
        stepper.settle()
        return stepper.done()


class _Stepper:
    """The mutable working copy of one run (and the world it changes) while a step executes."""

    def __init__(self, machine: Machine, world: World, run: Run) -> None:
        self.machine, self.world = machine, world
        self.run = run
        self.frames = list(run.frames)
        self.variables: dict[str, Any] = dict(value(run.variables))
        self.variables_text = run.variables
        self.drawn = run.drawn
        self.ended, self.output = run.ended, run.output
        self.step = Step(run=run, world=world)
        self.execution = world.execution(run.execution)

    # --- the run as it is ---------------------------------------------------------------------------------
    @property
    def clock(self) -> int:
        return self.world.now + self.execution.skew

    def done(self) -> Step:
        run = self.run._replace(
            frames=tuple(self.frames),
            variables=self.variables_text,
            drawn=self.drawn,
            ended=self.ended,
            output=self.output,
        )
        self.step.run = run
        self.step.world = self.world.with_run(run)
        return self.step

    def current(self) -> tuple[Frame, dict[str, Any]]:
        frame = self.frames[-1]
        state = self.machine.state(frame.scope, frame.state)
        language = state.get("QueryLanguage", self.machine.language)
        if language != "JSONata":
            raise Unsupported(f"{frame.state} is a {language} state: the explorer interprets JSONata states only")
        return frame, state

    def bindings(self, frame: Frame, **states: Any) -> str:
        """The text of what a field of ``frame``'s state reads: the run's variables, and ``$states`` (its input,
        its context object, and ``states``: its result or error output). Built from texts the run holds
        already; equal bindings are equal texts, which ``_evaluate`` is keyed on."""
        context = _context(
            self.execution.arn, self.execution.name, self.execution.redrives, frame.state, frame.entered, sum(frame.retries)
        )
        extra = "".join(f',"{name}":{text(given)}' for name, given in sorted(states.items()))
        inner = self.variables_text[1:-1]
        return "{" + inner + ("," if inner else "") + '"states":{"context":' + context + ',"input":' + frame.input + extra + "}}"

    def field(self, template: Any, bindings: str) -> Any:
        """A field's value: a ``{% ... %}`` text evaluated, within objects and arrays too; anything else as it is."""
        expression = expression_of(template)
        if expression is not None:
            millis = self.clock if "$millis" in expression else 0
            if "$uuid" in expression:
                result, self.drawn, error = _evaluate(expression, bindings, millis, self.run.name, self.drawn)
            else:
                result, _, error = _evaluate(expression, bindings, millis, "", 0)
            if error is not None:
                raise Failed(QUERY_FAILED, error)
            return result
        if isinstance(template, dict):
            return {name: self.field(inner, bindings) for name, inner in template.items()}
        if isinstance(template, list):
            return [self.field(inner, bindings) for inner in template]
        return template

    # --- moving -------------------------------------------------------------------------------------------
    def enter(self, scope: str, name: str, payload: Any) -> None:
        self.machine.entered.add(name)
        entered = self.clock if self.machine.entry_read(scope, name) else 0
        self.frames.append(Frame(scope=scope, state=name, input=text(payload), entered=entered))

    def goto(self, state: dict[str, Any], output: Any) -> None:
        """Leave the current state with ``output``: to its ``Next``, or out of its scope where it ends."""
        frame = self.frames.pop()
        if state.get("End"):
            self.leave_scope(output)
        else:
            self.enter(frame.scope, state["Next"], output)

    def leave_scope(self, output: Any) -> None:
        """The scope of the frame just left ended with ``output``: the run's end, or one branch's or item's."""
        if not self.frames:
            self.ended, self.output = "SUCCEEDED", text(output)
            return
        parent = self.frames[-1]
        results = (*parent.results, text(output))
        state = self.machine.state(parent.scope, parent.state)
        inner = f"{parent.scope}/{parent.state}" if parent.scope else parent.state
        if state["Type"] == "Parallel" and len(results) < len(state["Branches"]):
            self.frames[-1] = parent._replace(results=results)
            self.enter(f"{inner}#{len(results)}", state["Branches"][len(results)]["StartAt"], value(parent.items))
            return
        items = value(parent.items)
        if state["Type"] == "Map" and len(results) < len(items):
            self.frames[-1] = parent._replace(results=results)
            self.enter(f"{inner}#items", state["ItemProcessor"]["StartAt"], items[len(results)])
            return
        self.frames[-1] = parent._replace(results=results)
        try:
            self.finish(state, [value(result) for result in results])
        except Failed as failure:
            self.fail(failure)

    def finish(self, state: dict[str, Any], result: Any) -> None:
        """The current state succeeded with ``result``: its ``Assign`` and ``Output``, then on."""
        frame = self.frames[-1]
        bindings = self.bindings(frame, result=result)
        output = self.field(state.get("Output", "{% $states.result %}"), bindings)
        assigned = self.field(state.get("Assign", {}), bindings)
        self.assign(assigned)
        self.goto(state, output)

    def assign(self, assigned: dict[str, Any]) -> None:
        if assigned and self.frames[-1].scope != self.machine.root:
            raise Unsupported("an Assign inside a branch or an item: the explorer keeps one scope of variables a run")
        self.variables.update(assigned)
        self.variables_text = text(self.variables)

    # --- failing --------------------------------------------------------------------------------------------
    def fail(self, failure: Failed) -> None:
        """The current state failed: a retrier with attempts left tries it again, else a catcher takes the
        error, else it fails the state around its scope, or the run, which keeps its frames as they were
        where it failed (a redrive resumes there)."""
        where = list(self.frames)
        while self.frames:
            frame, state = self.current()
            retried = self.retry(frame, state, failure.error)
            if retried is not None:
                self.frames[-1] = retried
                return
            for catcher in state.get("Catch", []):
                if _matches(catcher["ErrorEquals"], failure.error):
                    self.catch(frame, catcher, failure)
                    return
            self.frames.pop()  # the Parallel or Map around the scope fails with it
        self.frames = where
        self.ended, self.output = "FAILED", text({"Error": failure.error, "Cause": failure.cause})

    def catch(self, frame: Frame, catcher: dict[str, Any], failure: Failed) -> None:
        bindings = self.bindings(frame, errorOutput={"Error": failure.error, "Cause": failure.cause})
        try:
            output = self.field(catcher.get("Output", "{% $states.errorOutput %}"), bindings)
            self.assign(self.field(catcher.get("Assign", {}), bindings))
        except Failed as failed:
            raise Unsupported(f"a catcher of {frame.state} raised: {failed.cause}") from None
        self.frames.pop()
        self.enter(frame.scope, catcher["Next"], output)

    @staticmethod
    def retry(frame: Frame, state: dict[str, Any], error: str) -> Frame | None:
        for number, retrier in enumerate(state.get("Retry", [])):
            if _matches(retrier["ErrorEquals"], error):
                attempts = list(frame.retries) + [0] * (number + 1 - len(frame.retries))
                limit = retrier.get("MaxAttempts", 3)
                if schema.STILL_IN_FLIGHT in retrier["ErrorEquals"]:
                    limit = min(limit, POLL_RETRIES)
                if attempts[number] >= limit:
                    return None
                attempts[number] += 1
                return frame._replace(retries=tuple(attempts), results=())
        return None

    # --- executing --------------------------------------------------------------------------------------------
    def settle(self) -> None:
        """Execute the states that depend on nothing but the run, up to a visible one or the run's end."""
        while self.ended is None and not self.machine.visible(self.frames[-1]):
            try:
                self.quiet()
            except Failed as failure:
                self.fail(failure)

    def execute(self, outcome: str) -> None:
        frame, state = self.current()
        try:
            if state["Type"] == "Task":
                self.task(frame, state, outcome)
            else:
                self.quiet()
                if self.frames and self.ended is None:
                    moment = (self.clock - EPOCH_MS) / 1000
                    self.step.said.append(f"on to {self.frames[-1].state}, its clock at {moment:g} s")
        except Failed as failure:
            self.fail(failure)

    def quiet(self) -> None:
        """Execute the current state, one that calls nothing."""
        frame, state = self.current()
        kind = state["Type"]
        bindings = self.bindings(frame)
        inner = f"{frame.scope}/{frame.state}" if frame.scope else frame.state
        if kind in ("Pass", "Wait"):
            self.finish(state, value(frame.input))
        elif kind == "Choice":
            for rule in state.get("Choices", []):
                if self.condition(rule["Condition"], bindings):
                    self.choose(state, rule, bindings, rule["Next"])
                    return
            if "Default" not in state:
                raise Failed("States.NoChoiceMatched", f"no choice of {frame.state} matched")
            self.choose(state, state, bindings, state["Default"])
        elif kind == "Succeed":
            output = self.field(state.get("Output", "{% $states.input %}"), bindings)
            self.frames.pop()
            self.leave_scope(output)
        elif kind == "Fail":
            error = self.field(state.get("Error", "States.Fail"), bindings)
            cause = self.field(state.get("Cause", ""), bindings)
            raise Failed(str(error), str(cause))  # a Fail state has no Retry nor Catch: its scope fails
        elif kind == "Parallel":
            given = self.field(state.get("Arguments", "{% $states.input %}"), bindings)
            self.frames[-1] = frame._replace(results=(), items=text(given))
            self.enter(f"{inner}#0", state["Branches"][0]["StartAt"], given)
        elif kind == "Map":
            if "ItemSelector" in state or "ItemsPath" in state:
                raise Unsupported(f"{frame.state}: the explorer does not interpret ItemSelector")
            items = self.field(state.get("Items", "{% $states.input %}"), bindings)
            if not isinstance(items, list):
                raise Failed(QUERY_FAILED, f"the Map state {frame.state}'s items are not an array")
            self.frames[-1] = frame._replace(results=(), items=text(items))
            if not items:
                self.finish(state, [])
            else:
                self.enter(f"{inner}#items", state["ItemProcessor"]["StartAt"], items[0])
        else:
            raise Unsupported(f"the explorer does not interpret {kind} states ({frame.state})")

    def choose(self, state: dict[str, Any], rule: dict[str, Any], bindings: str, target: str) -> None:
        frame = self.frames[-1]
        output = self.field(rule.get("Output", state.get("Output", "{% $states.input %}")), bindings)
        self.assign(self.field(rule.get("Assign", {}), bindings))
        self.frames.pop()
        self.enter(frame.scope, target, output)

    def condition(self, template: Any, bindings: str) -> bool:
        verdict = self.field(template, bindings)
        if not isinstance(verdict, bool):
            raise Failed(QUERY_FAILED, f"a Choice condition gave {verdict!r}, not a boolean")
        return verdict

    # --- calling ----------------------------------------------------------------------------------------------
    def task(self, frame: Frame, state: dict[str, Any], outcome: str) -> None:
        service, action = self.machine.service(state)
        arguments = self.field(state.get("Arguments", "{% $states.input %}"), self.bindings(frame))
        if outcome == FAULT:
            error = self.machine.fault(state)
            self.step.said.append(f"failed before taking effect ({error})")
            raise Failed(error, INJECTED)
        reply = self.call(frame, service, action, arguments)
        if outcome == LOST:
            self.step.said.append(f"its reply was lost ({LOST_ERRORS[service]})")
            raise Failed(LOST_ERRORS[service], INJECTED)
        if reply.failed:
            raise Failed(reply.error or "", reply.cause)
        self.finish(state, reply.result)

    def call(self, frame: Frame, service: str, action: str, arguments: Any) -> services.Reply:
        world = self.world
        if service == "dynamodb":
            record_id = arguments["Key"]["id"]["S"]
            before = dict(world.items).get(record_id)
            request = services.table_request(arguments)
            reply = services.item_call(action, request, before)
            if reply.error is not None and reply.error != "DynamoDB.ConditionalCheckFailedException":
                raise Refused(f"{frame.state}: DynamoDB refused its request: {reply.error}: {reply.cause}")
            if action == "getItem":
                verdict = "read " + (describe_item(value(before)) if before else "nothing")
            else:
                verdict = (
                    "refused by its condition" if reply.failed else "took effect" if reply.item != before else "changed nothing"
                )
            self.step.said.append(f"{action} {verdict}")
            if reply.item != before:
                after = None if reply.item is None else value(reply.item)
                self.step.write = Write(action, arguments, self.world.item(record_id), after)
                self.world = self.world.with_item(record_id, after)
            return reply
        if service == "sfn":
            described = world.by_arn(arguments["ExecutionArn"])
            if described is None:
                return services.Reply(error="Sfn.ExecutionDoesNotExistException", cause="no such execution")
            self.step.said.append(f"describeExecution: {described.name} is {described.status}")
            # Every ended execution that did not succeed is redrivable: AWS's 14 days do not pass here.
            redrivable = described.status in schema.EXECUTION_ENDED_WITHOUT_RELEASE
            return services.Reply(
                result={
                    "ExecutionArn": described.arn,
                    "Status": described.status,
                    "RedriveCount": described.redrives,
                    "RedriveStatus": "REDRIVABLE" if redrivable else "NOT_REDRIVABLE",
                }
            )
        if action == "invoke":
            name, payload = arguments["FunctionName"], arguments.get("Payload")
        else:
            name, payload = self.machine.state(frame.scope, frame.state)["Resource"], arguments
        kind = self.machine.function(name)
        self.step.calls.append(kind)
        if kind == "effect":
            self.step.said.append("the side effect")
            result = services.effect(self.run.name, self.machine.configuration.padding)
            return services.Reply(result=services.invoked(result) if action == "invoke" else result)
        record_id = payload.get("id") or payload.get("idempotency", {}).get("id")
        before = dict(world.items).get(record_id) if record_id else None
        reply = services.function_call(kind, text(payload), before, world.now)
        self.step.said.append(f"the {kind} function " + (f"failed with {reply.error}" if reply.failed else "returned"))
        if record_id and reply.item != before:
            after = None if reply.item is None else value(reply.item)
            self.step.write = Write("function", payload, self.world.item(record_id), after)
            self.world = self.world.with_item(record_id, after)
        result = services.invoked(reply.result) if action == "invoke" else reply.result
        return reply._replace(result=result)


# What States.ALL does not catch: "a terminal error", and one that "always causes the execution to fail"
# (Step Functions' error handling; testing/gaps/uncatchable_errors.py).
TERMINAL = ("States.DataLimitExceeded", "States.Runtime")


def _matches(errors: list[str], error: str) -> bool:
    return error in errors or ("States.ALL" in errors and error not in TERMINAL)
