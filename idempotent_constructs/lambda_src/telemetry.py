"""Structured logs of the shared functions, through Powertools for AWS Lambda.

Log lines are Powertools Logger's JSON (``level``, ``location``, ``message``, ``timestamp``,
``service``) labelled with the record's namespace and key hash; never a payload. (Outcome metrics
count states entered, from the state machine's execution log.) Powertools is bundled into the
functions' asset at synth time (``BUNDLED_PACKAGES`` in ``idempotent_constructs._synth.functions``).
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

from aws_lambda_powertools import Logger

try:  # imported as part of the library
    from . import schema
except ImportError:  # imported by the Lambda runtime from the asset root
    import schema  # type: ignore[no-redef,import-not-found]

SERVICE = "idempotent-constructs"


class _CurrentStdout(logging.StreamHandler):  # type: ignore[type-arg]  # generic only in typeshed
    """Writes to whatever ``sys.stdout`` is at the time (Lambda's, or a test's capture)."""

    @property
    def stream(self) -> Any:
        return sys.stdout

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


def get_logger() -> Logger:
    """The functions' logger, at ``LOG_LEVEL`` (default INFO)."""
    logger = Logger(service=SERVICE, level=os.environ.get("LOG_LEVEL", "INFO"), logger_handler=_CurrentStdout())
    # Its lines go out once, through its own handler, not again through the runtime's root logger.
    logging.getLogger(SERVICE).propagate = False
    return logger


def record_fields(record_id: str) -> dict[str, Any]:
    """The fields that label a log line with a record: its namespace and key hash."""
    namespace, key_hash = schema.split_id(record_id)
    return {"idempotency_namespace": namespace, "idempotency_key_hash": key_hash}
