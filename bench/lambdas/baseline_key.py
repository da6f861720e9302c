"""Key function of the baseline (bench/baseline.py): hashes the input, or the part a JMESPath in the
input names, and computes the record's TTL. Written for the benchmark from the published description of
the aws-samples idempotent workflow, not copied from it."""

import hashlib
import json
import os
import time


def handler(event, context=None):
    selection = event
    expression = event.get("idempotencyKeyJmespath") if isinstance(event, dict) else None
    if expression:
        import jmespath

        selection = jmespath.search(expression, event)
    key = hashlib.md5(json.dumps(selection, sort_keys=True).encode()).hexdigest()
    ttl = int(time.time()) + 60 * int(os.environ.get("TTL_MINUTES", "1440"))
    return {"payload": event, "config": {"key": key, "ttl": str(ttl)}}
