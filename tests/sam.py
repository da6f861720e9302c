"""A SAM template translated to CloudFormation as SAM's transform translates it (aws-sam-translator), for
the tests of `idempotent-constructs wrap --format sam`."""

from __future__ import annotations

import os
from typing import Any

from samtranslator.translator.transform import transform


class _NoManagedPolicies:
    """SAM's loader of AWS managed policies by name (for a function's ``Policies``); the templates here name none."""

    def load(self) -> dict[str, str]:
        return {}


def translated(template: dict[str, Any], region: str = "us-east-1") -> dict[str, Any]:
    """``template`` (packaged: its ``CodeUri`` and ``DefinitionUri`` in S3) as CloudFormation."""
    previous = os.environ.get("AWS_DEFAULT_REGION")
    os.environ["AWS_DEFAULT_REGION"] = region  # the translator writes ARNs of the region of its session
    try:
        return dict(transform(template, {}, _NoManagedPolicies()))
    finally:
        if previous is None:
            del os.environ["AWS_DEFAULT_REGION"]
        else:
            os.environ["AWS_DEFAULT_REGION"] = previous
