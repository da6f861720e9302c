"""The one-line message for each error an operator can fix (None for a bug, which keeps its traceback)."""

from __future__ import annotations

import sys
from typing import Any

from ..errors import IdempotencyError


def explain(error: Exception, target: dict[str, Any]) -> str | None:
    """The one-line message for an error an operator can fix; None for a bug (which keeps its traceback)."""
    if isinstance(error, IdempotencyError):  # a record or table that changed or vanished meanwhile, say
        return str(error)
    if "botocore" not in sys.modules:
        return None
    from botocore import exceptions

    endpoint = target.get("endpoint") or ""
    where = f"region {target.get('region')}" + (f" at {endpoint}" if endpoint and "amazonaws.com" not in endpoint else "")
    if isinstance(error, exceptions.NoCredentialsError):
        return (
            "no AWS credentials found: pass --profile or set AWS_PROFILE, or set AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY (any values for a local emulator)"
        )
    if isinstance(error, exceptions.NoRegionError):
        return "no AWS region: pass --region or set AWS_REGION (or give your profile a region)"
    if isinstance(error, exceptions.ProfileNotFound):
        return f"{error}: check --profile or AWS_PROFILE (`aws configure list-profiles` lists them)"
    if isinstance(error, exceptions.ConnectionError):
        return f"cannot reach AWS in {where}: {error}; check AWS_ENDPOINT_URL, the region and the network"
    if isinstance(error, exceptions.ClientError):
        code = error.response.get("Error", {}).get("Code", "")
        text = error.response.get("Error", {}).get("Message", "")
        if code == "ResourceNotFoundException":
            return (
                f"table {target.get('table')!r} not found in {where}: check --table (or the stack), "
                "--region and the account of your credentials"
            )
        if error.operation_name == "DescribeStacks" and "does not exist" in text:
            return f"stack {target.get('stack')!r} not found in {where}: check --stack, --region and the account"
        if code in (
            "UnrecognizedClientException",
            "InvalidClientTokenId",
            "ExpiredToken",
            "ExpiredTokenException",
            "InvalidSignatureException",
        ):
            return f"AWS refused your credentials ({code}: {text}): refresh them, or check --profile / AWS_PROFILE"
        if "AccessDenied" in code:
            return f"not allowed: {text} ({error.operation_name}); ask for that permission, or use another --profile"
        return f"AWS {error.operation_name} failed: {code}: {text}"
    if isinstance(error, exceptions.BotoCoreError):
        return str(error)
    return None
