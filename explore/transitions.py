"""Everything that may happen next in the explored world, within the bounds: a run's step (its call taking
effect and replying, failing before its effect, or taking effect with its reply lost), the clock's tick, an
execution crashing (aborted, timed out, or dead of an error no Catch takes), a Standard execution's
redrive, an Express execution restarted from the beginning while its first attempt still runs, the release function receiving a status-change event (late, twice, or never: it may simply not
happen), and DynamoDB's TTL deleting an expired item at any moment after its expiration.

Each transition is labelled with what happened, in words, for the trace of a counterexample.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from idempotent_constructs.lambda_src import schema

from . import services
from .configurations import MACHINE, Configuration
from .invariants import REDRIVABLE, REDRIVEN, Checks, Exemption, Violation
from .machine import FAULT, LOST, OK, Machine, Step
from .world import EPOCH_MS, TICK_MS, Budget, Event, Execution, Run, World, describe_item, execution_arn, text, value

KEY = "order-1"


@dataclass(frozen=True)
class Bounds:
    """How far the explorer looks: ``executions`` of one key; in all, ``faults`` calls that fail (before their
    effect, or after it with the reply lost), ``crashes``, ``redrives`` of a failed Standard execution, status-
    change events delivered twice (``duplicates``), and ``ticks`` of the clock (a second each). Each execution's
    clock is ahead of the true one by 0, or (one of them, of two or more) by ``skew`` milliseconds: two
    executions' clocks differ by at most ``skew``."""

    executions: int = 2
    faults: int = 1
    crashes: int = 1
    redrives: int = 1
    duplicates: int = 1
    ticks: int = 3
    skew: int = 1000
    restarts: int = 0

    def __str__(self) -> str:
        return (
            f"{self.executions} executions, {self.faults} faults, {self.crashes} crashes, {self.redrives} redrives, "
            f"{self.duplicates} duplicate events, {self.restarts} restarts, {self.ticks} ticks of 1 s, skew {self.skew} ms"
        )


@dataclass
class Next:
    """A world that may come next, what happened (in words, when asked: ``said``), and the exemption it
    shows (if any)."""

    said: Callable[[], str]
    world: World
    exemption: Exemption | None = None


class Transitions:
    def __init__(self, configuration: Configuration, bounds: Bounds, machine: Machine) -> None:
        self.configuration, self.bounds, self.machine = configuration, bounds, machine
        self.checks = Checks(configuration, bounds.skew)
        # A step depends on the run, the clock, the items and the executions alone: each is taken once.
        self._steps: dict[tuple[object, ...], Step] = {}

    def initial(self) -> list[World]:
        """The executions started at once, with every skew the bounds allow (the executions are alike, so
        which of them are ahead does not matter: the first ones are behind)."""
        count, worlds = self.bounds.executions, []
        # All ahead is none ahead: what matters is how far apart two clocks are.
        skews = {
            tuple([0] * (count - ahead) + [self.bounds.skew] * ahead) for ahead in (range(count) if self.bounds.skew else (0,))
        }
        for skew in sorted(skews):
            executions = tuple(
                Execution(name=f"e{n + 1}", arn=execution_arn(MACHINE, f"e{n + 1}"), skew=skew[n]) for n in range(count)
            )
            budget = Budget(
                faults=self.bounds.faults,
                crashes=self.bounds.crashes,
                redrives=self.bounds.redrives if self.configuration.standard else 0,
                duplicates=self.bounds.duplicates if self.configuration.standard else 0,
                ticks=self.bounds.ticks,
                restarts=0 if self.configuration.standard or self.configuration.runs_per_execution > 1 else self.bounds.restarts,
            )
            world = World(now=EPOCH_MS, items=(), executions=executions, runs=(), events=(), budget=budget)
            for execution in executions:
                for number in range(self.configuration.runs_per_execution):
                    name = execution.name if self.configuration.runs_per_execution == 1 else f"{execution.name}.{number + 1}"
                    placeholder = Run(name=name, execution=execution.name, frames=())
                    world = world._replace(runs=(*world.runs, placeholder))
                    world = world.with_run(self.machine.start(name, execution.name, {"id": KEY}, world))
            worlds.append(world)
        return worlds

    def successors(self, world: World) -> Iterator[Next]:
        for run in world.runs:
            if run.running:
                for outcome in self.machine.outcomes(run):
                    if outcome == OK or world.budget.faults > 0:
                        found = self.step(world, run, outcome)
                        if found is not None:
                            yield found
        if world.budget.ticks > 0 and not world.ended:
            now = world.now + TICK_MS
            ticked = world._replace(now=now, budget=world.budget._replace(ticks=world.budget.ticks - 1))
            yield Next(lambda: f"the clock ticks: {(now - EPOCH_MS) // 1000} s", ticked)
        for execution in world.executions:
            if execution.status == "RUNNING" and world.budget.crashes > 0:
                yield self.crash(world, execution)
            if execution.status in ("FAILED", "ABORTED") and world.budget.redrives > 0:
                yield self.redrive(world, execution)
            # After the start (a tick later at least: a restart enters its states later than the attempt it restarts).
            if execution.status == "RUNNING" and world.budget.restarts > 0 and world.now > EPOCH_MS:
                yield self.restart(world, execution)
        for event in world.events:
            yield from self.deliver(world, event)
        for record_id, held in world.items:
            item = value(held)
            if int(item.get(schema.EXPIRATION, {}).get("N", 0)) * 1000 < world.now:
                said = f"DynamoDB's TTL deletes the expired record {describe_item(item)}"
                with _happening(said):
                    exemption = self.checks.expired(world, item)
                yield Next(lambda said=said: said, world.with_item(record_id, None), exemption)  # type: ignore[misc]

    # --- a run's step ---------------------------------------------------------------------------------------
    def step(self, world: World, run: Run, outcome: str) -> Next | None:
        """``run``'s step with ``outcome``; None where a lost reply changed nothing (the call was refused, or
        wrote what was there) and its state retries it: the same state again, later, as a failure before its
        effect that is retried (``Machine.outcomes``)."""
        state = run.top.state
        before_body = self.in_body(run)
        execution = world.execution(run.execution)
        others = tuple((other.arn, other.status, other.redrives) for other in world.executions)
        key = (run, outcome, world.now, world.items, execution, others)
        step = self._steps.get(key)
        if step is None:
            step = self._steps[key] = self.machine.step(run, world, outcome)
        retried = step.run.running and step.run.frames == (*run.frames[:-1], step.run.top) and step.run.top.state == state
        if outcome == LOST and step.write is None and "effect" not in step.calls and retried:
            return None
        after = world.with_run(step.run).with_execution(step.world.execution(run.execution))._replace(items=step.world.items)
        if outcome != OK:
            after = after._replace(budget=after.budget._replace(faults=after.budget.faults - 1))
        starts = not before_body and self.in_body(step.run) and step.run.running

        def label() -> str:  # in words, only where it is needed: a new state's, or a broken promise's
            said = f"{run.name} {state}: " + "; ".join(step.said or ["done"])
            if step.write is not None:
                said += f" [record {describe_item(step.write.before)} -> {describe_item(step.write.after)}]"
            if starts:
                said += f" [{run.name} starts the body]"
            if not step.run.running:
                said += f" [{run.name} ends {step.run.ended}: {(step.run.output or '')[:100]}]"
            return said

        exemption = None
        try:
            if step.write is not None:
                watch, exemption = self.checks.write(after, run, step.write.before, step.write.after)
                after = after._replace(watch=watch)
            if starts:
                watch, shown = self.checks.body(after, step.run)
                after = after._replace(watch=watch)
                exemption = exemption or shown
            after, shown = self.settle_execution(after, step.run)
            exemption = exemption or shown
        except Violation as violation:
            violation.happened = [label()]
            raise
        return Next(label, after, exemption)

    def in_body(self, run: Run) -> bool:
        frame = run.frames[0] if run.frames else None
        return frame is not None and frame.scope == self.machine.root and frame.state in self.configuration.body

    def settle_execution(self, world: World, run: Run) -> tuple[World, Exemption | None]:
        """After ``run``'s step: if it ended, its execution's status (a failed iteration fails its Map, and so
        the execution, whose other runs stop), and a Standard execution's status-change event; and the
        exemption its end shows, if any."""
        if run.running:
            return world, None
        exemption = self.checks.ended(world, run)
        execution = world.execution(run.execution)
        others = [other for other in world.runs if other.execution == execution.name and other.name != run.name]
        if run.ended == "FAILED":
            for other in others:
                if other.running:
                    world = world.with_run(other._replace(ended="ABORTED"))
            return self.end(world, execution, "FAILED"), exemption
        if all(not other.running for other in others):
            failed = any(other.ended != "SUCCEEDED" for other in others)
            return self.end(world, execution, "FAILED" if failed else "SUCCEEDED"), exemption
        return world, exemption

    def end(self, world: World, execution: Execution, status: str) -> World:
        world = world.with_execution(execution._replace(status=status))
        watched = self.configuration.standard and not self.configuration.kept_for_redrive  # by the release function
        if watched and status in schema.EXECUTION_ENDED_WITHOUT_RELEASE:
            world = world._replace(events=(*world.events, Event(execution.name, status, execution.redrives)))
        return world

    # --- the others -----------------------------------------------------------------------------------------
    def crash(self, world: World, execution: Execution) -> Next:
        for run in world.runs:
            if run.execution == execution.name and run.running:
                world = world.with_run(run._replace(ended="ABORTED"))
        world = world._replace(budget=world.budget._replace(crashes=world.budget.crashes - 1))
        return Next(lambda: f"{execution.name} crashes (aborted)", self.end(world, execution, "ABORTED"))

    def redrive(self, world: World, execution: Execution) -> Next:
        """``RedriveExecution``: the execution continues each run that did not succeed from the state it
        failed or stopped in, with the input and variables it had there (AWS's "Redriving executions")."""
        execution = execution._replace(status="RUNNING", redrives=execution.redrives + 1)
        world = world.with_execution(execution)._replace(budget=world.budget._replace(redrives=world.budget.redrives - 1))
        label, exemption = f"{execution.name} is redriven", None
        resumed = []
        for run in world.runs:  # every run resumes first: one that fails again then fails the others (its Map)
            if run.execution == execution.name and run.ended in ("FAILED", "ABORTED"):
                step = self.machine.resume(run, world)
                world = step.world
                resumed.append(step.run.name)
                if self.in_body(step.run) and step.run.running:
                    item = next((value(held) for _, held in world.items), None)
                    if item is None or item.get(schema.OWNER, {}).get("S") not in world.watch.mine(run.name):
                        exemption = REDRIVEN
                label += f"; {run.name} resumes at {run.top.state}"
        if exemption is REDRIVEN and self.configuration.kept_for_redrive:
            with _happening(label):
                raise Violation(REDRIVABLE, f"{execution.name} is redriven into its body without its key")
        for name in resumed:
            with _happening(label):
                world, shown = self.settle_execution(world, world.run(name))
                exemption = exemption or shown
        return Next(lambda: label, world, exemption)

    def restart(self, world: World, execution: Execution) -> Next:
        """An asynchronous Express execution that AWS runs again from the beginning ("at-least-once workflow
        execution": Step Functions developer guide, "Execution guarantees"). AWS does not say whether the
        restart keeps the execution's id, nor that the first attempt has stopped: the worst case is played,
        the same id (``Execution.Id``) and the first attempt still running. The restart is an execution of its
        own here (``e1'``: its runs end apart from the first attempt's), with the same ARN, and a clock 1 ms
        ahead of the first attempt's: the one assumption made, that two attempts never enter a state in the same
        millisecond (the owner token of a write is its state's entry: ``record_tasks.ENTRY_OWNER``)."""
        again = Execution(name=f"{execution.name}'", arn=execution.arn, skew=execution.skew + 1)
        world = world._replace(
            executions=(*world.executions, again), budget=world.budget._replace(restarts=world.budget.restarts - 1)
        )
        world = world._replace(runs=(*world.runs, Run(name=again.name, execution=again.name, frames=())))
        world = world.with_run(self.machine.start(again.name, again.name, {"id": KEY}, world))
        return Next(lambda: f"AWS restarts {execution.name} from the beginning, with its id ({again.name})", world)

    def deliver(self, world: World, event: Event) -> Iterator[Next]:
        """The release function's handler on ``event``: the record it deletes, if any, must be the ended
        execution's own, and once it ran, no key the execution holds is left held."""
        execution = world.execution(event.execution)
        detail = {"status": event.status, "executionArn": execution.arn, "redriveCount": event.redrives}
        records: list[tuple[str | None, str | None]] = [*world.items] or [(None, None)]
        for record_id, held in records:
            reply = services.release_call(text({"detail": detail}), execution.status, execution.redrives, record_id or "", held)
            said = f"the release function gets {event.execution}'s {event.status} event: {text(reply.result)}"
            pending = tuple(other for other in world.events if other != event)
            after = world._replace(events=pending)
            with _happening(said):
                if record_id is not None and reply.item != held:
                    self.checks.released(world, execution.name, value(held) if held else None)
                    after = after.with_item(record_id, None if reply.item is None else value(reply.item))
                self.checks.delivered(after, event)
            yield Next(lambda said=said: said, after)  # type: ignore[misc]
            if world.budget.duplicates > 0 and not event.duplicate:
                twice = after._replace(
                    events=(*pending, event._replace(duplicate=True)),
                    budget=world.budget._replace(duplicates=world.budget.duplicates - 1),
                )
                yield Next(lambda said=said: said + " (it will come again)", twice)  # type: ignore[misc]


@contextlib.contextmanager
def _happening(said: str) -> Iterator[None]:
    """A promise broken in the block is broken by what ``said`` says happened."""
    try:
        yield
    except Violation as violation:
        violation.happened = violation.happened or [said]
        raise


__all__ = ["FAULT", "Bounds", "Next", "Transitions", "Violation"]
