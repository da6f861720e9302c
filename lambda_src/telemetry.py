"""Structured logs and metrics of the shared functions: one JSON object per line, stdlib only.

Log lines carry the fields Powertools' Logger writes (``level``, ``location``, ``message``,
``timestamp``, ``service``) plus the record's namespace and key hash; never a payload. Metrics are
CloudWatch embedded metric format (EMF) lines, which Lambda's log delivery turns into metrics with no
API call. (Powertools itself would add about 25 ms of imports to every cold start of the key
function, which runs on every execution, and a package the asset would have to bundle without Docker.)
"""

from __future__ import annotations

import json
import logging
import os
import time
from typing import Any

try:  # imported as part of the library
    from . import schema
except ImportError:  # imported by the Lambda runtime from the asset root
    import schema  # type: ignore[no-redef]

SERVICE = "idempotent-constructs"


class _JsonLines(logging.Handler):
    """Writes each record as one JSON line to the current standard output (Lambda sends it to the
    function's log group)."""

    def emit(self, record: logging.LogRecord) -> None:
        entry = {
            "level": record.levelname,
            "location": f"{record.funcName}:{record.lineno}",
            "message": record.getMessage(),
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "service": SERVICE,
            **getattr(record, "fields", {}),
        }
        print(json.dumps(entry, separators=(",", ":")), flush=True)


def get_logger(name: str) -> logging.Logger:
    """A logger writing JSON lines, at ``LOG_LEVEL`` (default INFO), not also through the root logger."""
    logger = logging.getLogger(f"idempotent_constructs.{name}")
    if not logger.handlers:
        logger.addHandler(_JsonLines())
        logger.propagate = False
    logger.setLevel(os.environ.get("LOG_LEVEL", "INFO"))
    return logger


def record_fields(record_id: str) -> dict[str, Any]:
    """The fields that label a log line with a record: its namespace and key hash."""
    namespace, _, key_hash = record_id.rpartition("#")
    return {"idempotency_namespace": namespace, "idempotency_key_hash": key_hash}


def emit_metric(namespace: str, name: str, value: float = 1) -> None:
    """One EMF line: ``value`` of metric ``name`` in the workflow's metric namespace."""
    print(
        json.dumps(
            {
                "_aws": {
                    "Timestamp": int(time.time() * 1000),
                    "CloudWatchMetrics": [
                        {"Namespace": schema.metrics_namespace(namespace), "Dimensions": [[]], "Metrics": [{"Name": name, "Unit": "Count"}]}
                    ],
                },
                name: value,
                "idempotency_namespace": namespace,
            },
            separators=(",", ":"),
        ),
        flush=True,
    )
