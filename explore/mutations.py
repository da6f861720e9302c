"""Mistakes planted in a generated definition, each of which the explorer must catch: a fence dropped from a
condition, a rule of the route loosened. A mutation changes one text of one state (and only where that
text is, or it refuses: a mutation that no longer applies must not pass as caught); the request it makes
stays one DynamoDB accepts, so that what the explorer finds is the harm the mistake lets through, not a
refused request.

``takeover-without-lease`` is the takeover as it was before issue 51 (fenced on owner and status alone):
the explorer finds the interleaving the issue reported, a holder extended between a duplicate's read and
its takeover.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
from dataclasses import dataclass
from typing import Any

from .configurations import Configuration
from .transitions import Bounds


@dataclass(frozen=True)
class Mutation:
    """In the state whose name ends with ``state`` (in any scope), each regular expression of ``edits``
    is replaced (``re.sub``); ``configuration`` and ``bounds`` are where the explorer finds what it breaks,
    ``breaks`` the promise it must report."""

    name: str
    summary: str
    state: str
    edits: tuple[tuple[str, str], ...]
    configuration: str
    bounds: Bounds
    breaks: str

    def apply(self, configuration: Configuration) -> Configuration:
        definition = copy.deepcopy(configuration.definition)
        found = 0
        for states in _state_maps(definition):
            for name in list(states):
                if not name.endswith(self.state):
                    continue
                changed = json.dumps(states[name])
                for before, after in self.edits:
                    edited = re.sub(before, after, changed)
                    if edited == changed:
                        raise ValueError(f"mutation {self.name}: {before!r} is not in {name}")
                    changed = edited
                found += 1
                states[name] = json.loads(changed)
        if found != 1:
            raise ValueError(f"mutation {self.name}: {found} states end with {self.state!r}, not one")
        return dataclasses.replace(configuration, definition=definition, name=f"{configuration.name}+{self.name}")


def _state_maps(graph: dict[str, Any]) -> list[dict[str, Any]]:
    found = [graph["States"]]
    for state in graph["States"].values():
        for branch in state.get("Branches", []):
            found.extend(_state_maps(branch))
        if "ItemProcessor" in state:
            found.extend(_state_maps(state["ItemProcessor"]))
    return found


CLOCK = Bounds(faults=0, crashes=0, redrives=0, duplicates=0, ticks=3)
RECOVERY = Bounds(faults=0, crashes=1, redrives=1, duplicates=0, ticks=1)
RESTART = Bounds(faults=0, crashes=0, redrives=0, duplicates=0, ticks=1, restarts=1)

VARIABLE = r"\$idempotency_[0-9a-f]+"
LEASE = rf"{VARIABLE}\.record\.in_progress_expiration\.N"

MUTATIONS = (
    Mutation(
        "takeover-without-lease",
        "the takeover fenced on owner and status alone, as before issue 51",
        ".Takeover",
        (
            (r" AND \(#in_progress_expiration = :previous_lease OR attribute_not_exists\(#in_progress_expiration\)\)", ""),
            (rf", ':previous_lease': \{{'N': \$exists\({LEASE}\) \? {LEASE} : '0'\}}", ""),
        ),
        "guard",
        CLOCK,
        "live_holder_kept",
    ),
    Mutation(
        "complete-unfenced",
        "Complete writes whatever owns the record",
        ".Complete",
        ((r"'attribute_not_exists\(#id\) OR #owner = :owner'", "'attribute_not_exists(#id) OR attribute_exists(#id)'"),),
        "guard",
        CLOCK,
        "fenced_writes",
    ),
    Mutation(
        "takeover-without-status",
        "the takeover fenced on owner and lease alone: it may take a record its holder completed",
        ".Takeover",
        ((" AND #status = :previous_status", " AND (#status = :previous_status OR #status <> :previous_status)"),),
        "guard",
        CLOCK,
        "completed_kept",
    ),
    Mutation(
        "extend-on-released",
        "ExtendLease succeeds on a record that is gone (it writes one)",
        ".Extend",
        (("'#owner = :owner AND #status = :held'", "'attribute_not_exists(#owner) OR (#owner = :owner AND #status = :held)'"),),
        "guard",
        RECOVERY,
        "fenced_writes",
    ),
    Mutation(
        "release-unfenced",
        "Release deletes the record whoever owns it",
        ".Release",
        (("'ConditionExpression': '#owner = :owner'", "'ConditionExpression': '#owner = :owner OR #owner <> :owner'"),),
        "guard",
        Bounds(faults=1, crashes=0, redrives=0, duplicates=0, ticks=3),
        "fenced_writes",
    ),
    Mutation(
        "release-never-deletes",
        "Release deletes nothing: a failed body leaves its key held",
        ".Release",
        (("'ConditionExpression': '#owner = :owner'", "'ConditionExpression': '#owner = :owner AND #owner <> :owner'"),),
        "guard-bare",
        Bounds(faults=1, crashes=0, redrives=0, duplicates=0, ticks=0),
        "no_key_stuck",
    ),
    Mutation(
        "replay-forged",
        "Replay gives back the duplicate's own input, not the stored result",
        ".Replay",
        ((rf"\$parse\({VARIABLE}\.record\.data\.S\)", "$states.input"),),
        "guard-bare",
        Bounds(faults=0, crashes=0, redrives=0, duplicates=0, ticks=0),
        "replay_exact",
    ),
    Mutation(
        "acquire-in-progress",
        "Acquire takes a record in progress, not only one absent or finished and expired",
        ".Acquire",
        ((r"\(#expiration < :now AND #status <> :status\)", "(#expiration < :now OR #status = :status)"),),
        "guard",
        CLOCK,
        "live_holder_kept",
    ),
    Mutation(
        "own-by-execution",
        "the route knows a record as the run's own by its execution alone, as a whole workflow did before issue 53",
        ".Route",
        (
            (
                rf"({VARIABLE})\.record\.owner\.S = {VARIABLE}\.owner",
                r"$substringBefore(\1.record.owner.S, '#') = $states.context.Execution.Id",
            ),
        ),
        "workflow-express",
        RESTART,
        "live_holder_kept",
    ),
    Mutation(
        "redrivable-taken-over",
        "the owner check takes over an ended holder that can be redriven, as under FailurePolicy.RELEASE",
        ".OwnerRunning",
        ((r"\.RedriveStatus in \[", ".RedriveStatus in ['NEVER'] and ["),),
        "workflow-kept-for-redrive",
        RECOVERY,
        "kept_for_redrive",
    ),
    Mutation(
        "route-ignores-lease",
        "the route waits for no holder: every record in progress looks lapsed",
        ".Route",
        (
            (
                rf"\$number\(({VARIABLE}\.record\.in_progress_expiration\.N)\) > \$millis\(\)",
                r"$number(\1) > $millis() + 86400000",
            ),
        ),
        "guard",
        CLOCK,
        "live_holder_kept",
    ),
)


def named(name: str) -> Mutation:
    for mutation in MUTATIONS:
        if mutation.name == name:
            return mutation
    raise KeyError(f"no mutation {name!r}: {', '.join(mutation.name for mutation in MUTATIONS)}")
