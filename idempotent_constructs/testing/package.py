"""What ``aws cloudformation package`` (and ``sam package``) does to a template that names local paths, as
``idempotent-constructs wrap`` writes it: each path uploaded to a bucket of the emulator, a folder zipped,
and the property rewritten to the object's location, as the AWS CLI writes it."""

from __future__ import annotations

import contextlib
import hashlib
import json
from pathlib import Path
from typing import Any

from .._readers.assembly import zip_directory
from .._synth.portable import LOCAL_PATHS

BUCKET = "idempotent-constructs-packages"


def package(s3: Any, template: dict[str, Any], directory: Path) -> dict[str, Any]:
    """``template`` with each local path (relative to ``directory``) uploaded and replaced by its S3
    location: ``{S3Bucket, S3Key}`` for Lambda's code, ``{Bucket, Key}`` for a definition (SAM's
    ``DefinitionUri`` too), an ``s3://`` URI for SAM's ``CodeUri``."""
    template = json.loads(json.dumps(template))
    with contextlib.suppress(s3.exceptions.BucketAlreadyOwnedByYou):
        s3.create_bucket(Bucket=BUCKET)
    for resource in template.get("Resources", {}).values():
        prop = LOCAL_PATHS.get(resource["Type"])
        local = resource.get("Properties", {}).get(prop) if prop else None
        if not isinstance(local, str) or local.startswith("s3://"):
            continue
        source = directory / local
        body = zip_directory(source) if source.is_dir() else source.read_bytes()
        key = hashlib.md5(body).hexdigest() + (".zip" if source.is_dir() else "")  # as the AWS CLI names it
        s3.put_object(Bucket=BUCKET, Key=key, Body=body)
        if prop == "CodeUri":
            resource["Properties"][prop] = f"s3://{BUCKET}/{key}"
        elif prop in ("Code", "Content"):
            resource["Properties"][prop] = {"S3Bucket": BUCKET, "S3Key": key}
        else:
            resource["Properties"][prop] = {"Bucket": BUCKET, "Key": key}
    return template
