"""A clock of renders: each state of the library's whose graph tells a guard where its runs are (a guard's
writes, a document's Parallel) notes when it was rendered (``tick``), so that what is seen of a guard's place at
synth (``guard.placement``) is looked at again only where something was rendered since it was last looked at."""

from __future__ import annotations

_clock = [0]


def tick() -> int:
    """The time of a render that happens now."""
    _clock[0] += 1
    return _clock[0]


def now() -> int:
    """The time of the last render."""
    return _clock[0]
