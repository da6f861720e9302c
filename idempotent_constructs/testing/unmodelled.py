"""Resource types moto's CloudFormation does not model, kept out of the user's terminal.

Gap: moto's CloudFormation skips a resource type it does not implement, and says so twice per parse
of the template (it parses it more than once): a ``UserWarning`` ("Tried to parse AWS::...") and a
warning of the ``moto`` logger ("No Moto CloudFormation support for AWS::..."), which Python prints
to stderr when nothing is set up to log. The stacks here hold a few such types, none of which the
emulated behaviour depends on: the TLS-only policies of a bucket and a queue (the emulator does not
enforce TLS), Lambda's asynchronous-invocation settings (in-process calls do not use them) and an
alarm. ``recorded`` silences both notices while a stack is created and collects the types they name,
so that a caller can state them once, in plain words (``Deployment.unmodelled``).
"""

from __future__ import annotations

import contextlib
import logging
import re
import warnings
from collections.abc import Iterator

_NOTICE = re.compile(r"No Moto CloudFormation support for (\S+)")
_MOTO_LOGGER = "moto"  # the logger moto's CloudFormation parser warns through


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
    # Its UserWarning repeats the notice the collector records. Ignored for the whole process, not within
    # ``warnings.catch_warnings()``, whose undoing is not thread-safe: a deploy that overlapped another's end
    # printed the warning (seen in a full run).
    warnings.filterwarnings("ignore", message="Tried to parse AWS::", category=UserWarning)
    try:
        yield types
    finally:
        logger.removeFilter(collector)
