"""The one patcher: sets attributes of moto's classes and modules, and undoes them, in named groups
(each gap of ``testing.gaps``, and the harness's own hooks)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

# patch(owner, name, value): set ``owner.name`` to ``value`` until the group is undone.
Patch = Callable[[Any, str, Any], None]
_ABSENT = object()


class Patches:
    def __init__(self) -> None:
        self._installers: dict[str, Callable[[Patch], None]] = {}
        self._undo: dict[str, list[tuple[Any, str, Any]]] = {}

    def install(self, group: str, installer: Callable[[Patch], None]) -> None:
        """Run ``installer(patch)``; what it patches is undone with ``group``."""
        self._installers[group] = installer
        self._apply(group)

    def _apply(self, group: str) -> None:
        undo = self._undo.setdefault(group, [])

        def patch(owner: Any, name: str, value: Any) -> None:
            if any(o is owner and n == name for changes in self._undo.values() for o, n, _ in changes):
                raise RuntimeError(f"{owner!r}.{name} is patched twice: two workarounds of one gap?")
            # The attribute as defined on ``owner`` itself (a staticmethod stays one), or absent.
            undo.append((owner, name, vars(owner).get(name, _ABSENT)))
            setattr(owner, name, value)

        self._installers[group](patch)

    def _revert(self, group: str) -> None:
        changes = self._undo.pop(group, [])
        for owner, name, original in reversed(changes):
            if original is _ABSENT:
                delattr(owner, name)
            else:
                setattr(owner, name, original)

    @contextlib.contextmanager
    def suspended(self, group: str) -> Iterator[None]:
        """Undo ``group`` while the block runs, and install it again after."""
        if group not in self._installers:
            raise ValueError(f"no workaround {group!r}; installed: {', '.join(sorted(self._installers))}")
        self._revert(group)
        try:
            yield
        finally:
            self._apply(group)

    def remove(self) -> None:
        for group in reversed(list(self._undo)):
            self._revert(group)
        self._installers.clear()
