"""What the delivery loops share: a ``Cycle`` (one batch delivered and what became of its records), ``drain()``,
and the reading of a partial batch response, ``{"batchItemFailures": [{"itemIdentifier": ...}]}``: the whole
batch fails where it names a record that is not in the batch, an empty or null one, or is not a list; an empty
or null list is a success ("Amazon Simple Queue Service as a source", "Success and failure conditions"; the
Lambda developer guide's partial batch response pages say the same)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..runs import Deployment, Execution


@dataclass
class Cycle:
    """One batch delivered: the messages it sent (their ids), the execution (a pipe's) or the function's
    response (a mapping's), and what became of the messages."""

    message_ids: list[str]
    execution: Execution | None
    deleted: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)  # on the queue, to come again (or go to the dead-letter queue)
    acknowledgement_lost: bool = False  # what it would have deleted was left on the queue
    visibility_lapsed: bool = False  # its messages were received again while its execution ran
    response: Any = None  # a starter function's result, or its error
    discarded: list[str] = field(default_factory=list)  # a stream's records dropped after their last retry


class Loop:
    """A source drained one batch (``cycle()``) at a time."""

    cycles: list[Cycle]

    def cycle(self) -> Cycle | None:
        raise NotImplementedError

    def drain(self, max_cycles: int = 100) -> list[Cycle]:
        """Cycle until the source has nothing more to deliver (a queue's messages deleted or moved to its
        dead-letter queue, a stream's shards read to their end); the cycles run."""
        start = len(self.cycles)
        for _ in range(max_cycles):
            if self.cycle() is None:
                return self.cycles[start:]
        raise RuntimeError(f"the source still had records to deliver after {max_cycles} cycles")


def logical_id_in(reference: Any) -> str | None:
    """The logical id a template's ``Ref`` or ``Fn::GetAtt`` names, or None for anything else (a plain name)."""
    return reference.get("Ref") or reference.get("Fn::GetAtt", [None])[0] if isinstance(reference, dict) else None


def referenced(deployment: Deployment, reference: Any) -> str:
    """The logical id of the resource of the stack that a template's ``Ref`` or ``Fn::GetAtt`` names (a pipe's
    source or target, a mapping's queue or function)."""
    logical_id = logical_id_in(reference)
    if logical_id not in deployment.resources:
        raise LookupError(
            f"{reference!r} names no resource of {deployment.stack_name}: a pipe's or a mapping's source and target must be"
        )
    return str(logical_id)


def deployed(deployment: Deployment, reference: Any) -> str:
    """The physical id of the resource ``reference`` names (a queue's URL, a state machine's ARN)."""
    return str(deployment.resources[referenced(deployment, reference)])


def cycle_of(ids: list[str], failed: set[str], **outcome: Any) -> Cycle:
    """The cycle of a batch of ``ids`` whose ``failed`` records stay to come again and the rest are done."""
    return Cycle(ids, deleted=[i for i in ids if i not in failed], left=[i for i in ids if i in failed], **outcome)


def failures(response: Any, ids: list[str]) -> set[str]:
    """The messages a partial batch response leaves on the queue: those it names; all of them where it names
    a message not in the batch, an empty or null one, or its list is not a list; none where it has no list."""
    listed = response.get("batchItemFailures") if isinstance(response, dict) else None
    if listed is None or listed == []:
        return set()
    if not isinstance(listed, list):
        return set(ids)
    named = {failure.get("itemIdentifier") if isinstance(failure, dict) else None for failure in listed}
    return set(ids) if not named <= set(ids) else {name for name in ids if name in named}
