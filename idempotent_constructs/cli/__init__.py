"""``idempotent-constructs``: compute a workflow's key, inspect, list, reset and purge its records, and
draw the states its guard generates.

For operators at a terminal and for scripts (``--json``). It imports no CDK (the package loads its
constructs lazily) and imports boto3 and rich only when a command needs them, so it starts fast.
Every operator mistake ends in one ``Error: ...`` line that says what went wrong and what to do, with
exit status 1 (2 for a malformed command line), never a traceback; a traceback means a bug.

One module per concern: the group and its error handling (``group``, ``explain``), the table a command
works on (``target``), each family of commands (``key``, ``key-changes``, ``graph``, ``records``) and what they print
(``render``). ``operations`` is the plain boto3 layer beneath them.
"""

from __future__ import annotations

from . import graph_command, key_changes_command, key_command, probe_command, records_command, wrap_command  # noqa: F401  (each registers its commands on the group)
from .group import cli, main
from .target import Target

__all__ = ["Target", "cli", "main"]
