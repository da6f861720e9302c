"""Resource types moto's CloudFormation does not model, kept out of the user's terminal.

Gap: moto's CloudFormation skips a resource type it does not implement, and says so twice per parse
of the template (it parses it more than once): a ``UserWarning`` ("Tried to parse AWS::...") and a
warning of the ``moto`` logger ("No Moto CloudFormation support for AWS::..."), which Python prints
to stderr when nothing is set up to log. The stacks here hold a few such types, none of which the
emulated behaviour depends on: the TLS-only policies of a bucket and a queue (the emulator does not
enforce TLS), Lambda's asynchronous-invocation settings (in-process calls do not use them) and an
alarm. ``recorded`` silences the logger's notice while a stack is created and collects the types it names,
so that a caller can state them once, in plain words (``Deployment.unmodelled``); ``install`` drops the
``UserWarning`` for as long as the emulator runs, since moto parses a stack's template again outside a deploy
(reading its resources, as the command line does).
"""

from __future__ import annotations

import contextlib
import logging
import re
import types
import warnings
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .patches import Patch

_NOTICE = re.compile(r"No Moto CloudFormation support for (\S+)")
_MOTO_LOGGER = "moto"  # the logger moto's CloudFormation parser warns through
_SKIPPED = "Tried to parse AWS::"  # its UserWarning's words


class _Collector(logging.Filter):
    def __init__(self, types: set[str]) -> None:
        super().__init__()
        self.types = types

    def filter(self, record: logging.LogRecord) -> bool:
        notice = _NOTICE.fullmatch(record.getMessage())
        if notice is None:
            return True
        self.types.add(notice.group(1))
        return False


@contextlib.contextmanager
def recorded() -> Iterator[set[str]]:
    """While the block runs, moto's notices about resource types it skips are not shown; the set
    yielded fills with those types."""
    types: set[str] = set()
    collector, logger = _Collector(types), logging.getLogger(_MOTO_LOGGER)
    logger.addFilter(collector)
    try:
        yield types
    finally:
        logger.removeFilter(collector)


def install(patch: Patch) -> None:
    """moto's CloudFormation parser warns through a ``warnings`` of its own, which drops the ``UserWarning`` that
    repeats the logger's notice (not a filter in ``warnings``' global list: a test runner resets that list for
    each test, and ``catch_warnings`` undoes it for every thread at once)."""
    from moto.cloudformation import parsing

    def warn(message: Any, category: Any = None, *args: Any, **kwargs: Any) -> None:
        if not str(message).startswith(_SKIPPED):
            warnings.warn(message, category, *args, **{**kwargs, "stacklevel": kwargs.get("stacklevel", 1) + 1})

    patch(parsing, "warnings", types.SimpleNamespace(warn=warn))
