"""Holding a state: executions stop before a chosen state until the test lets them go on
(``LocalEmulator.hold``), so that "a duplicate arrives while the first run is in its body" is a fact the
test sets up, not a race it hopes to win on a loaded machine."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    from .patches import Patch

# An execution held longer than this goes on by itself, so that a test that forgets a hold cannot hang.
LONGEST_HOLD_SECONDS = 300.0


class Hold:
    """Executions that reach the state named ``state`` (in Parallel branches and Map iterations too) of
    the state machine named ``state_machine`` (any, if None) wait before entering it until ``release``;
    the ``with`` block of ``LocalEmulator.hold`` releases them when it ends, whatever happens in it."""

    def __init__(self, state: str, state_machine: str | None = None) -> None:
        self.state, self.state_machine = state, state_machine
        self._released = threading.Event()
        self._condition = threading.Condition()
        self._waiting: list[str] = []

    @property
    def waiting(self) -> list[str]:
        """The ARNs of the executions waiting at the state now, in the order they arrived (an execution
        once for each of its Map iterations or Parallel branches that waits there)."""
        with self._condition:
            return list(self._waiting)

    def arrived(self, count: int = 1, timeout: float = 60.0) -> list[str]:
        """Wait until ``count`` executions wait at the state; returns their ARNs. Raises ``TimeoutError``
        past ``timeout`` seconds."""
        with self._condition:
            if not self._condition.wait_for(lambda: len(self._waiting) >= count, timeout):
                raise TimeoutError(f"{len(self._waiting)} of {count} executions reached {self.state} within {timeout} s")
            return list(self._waiting)

    def release(self) -> None:
        """Let the waiting executions, and any that arrive later, enter the state."""
        self._released.set()

    def holds(self, state: str, execution_arn: str) -> bool:
        # arn:aws:states:{region}:{account}:execution:{state machine name}:{execution name}
        return state == self.state and self.state_machine in (None, execution_arn.split(":")[6])

    def wait_here(self, execution_arn: str) -> None:
        if self._released.is_set():
            return
        with self._condition:
            self._waiting.append(execution_arn)
            self._condition.notify_all()
        try:
            self._released.wait(LONGEST_HOLD_SECONDS)
        finally:
            with self._condition:
                self._waiting.remove(execution_arn)


class Holds:
    """The holds in force; ``install`` makes moto's interpreter honour them."""

    def __init__(self) -> None:
        self._holds: list[Hold] = []
        self._lock = threading.Lock()

    def add(self, hold: Hold) -> None:
        with self._lock:
            if any(other.state == hold.state and None in (other.state_machine, hold.state_machine) for other in self._holds):
                raise ValueError(f"{hold.state} is already held in every state machine: one hold at a time")
            self._holds.append(hold)

    def remove(self, hold: Hold) -> None:
        hold.release()
        with self._lock:
            self._holds.remove(hold)

    def install(self, patch: Patch) -> None:
        """Wrap the interpreter's entry into a state (``CommonStateField._eval_body``, before its
        StateEntered event): a held state's execution waits there."""
        from moto.stepfunctions.parser.asl.component.state.state import CommonStateField

        enter: Callable[..., Any] = CommonStateField._eval_body

        def held_entry(state: Any, env: Any) -> Any:
            execution = env.states.context_object.context_object_data["Execution"]["Id"]
            with self._lock:
                holding = [hold for hold in self._holds if hold.holds(state.name, execution)]
            for hold in holding:
                hold.wait_here(execution)
            if holding and not env.is_running():
                return None  # stopped while held: it never enters the state (moto checks before, not after)
            return enter(state, env)

        patch(CommonStateField, "_eval_body", held_entry)
