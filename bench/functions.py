"""The benchmark's Lambda functions: one asset (``bench/lambdas``), a handler each."""

from __future__ import annotations

from pathlib import Path

from aws_cdk import Duration
from aws_cdk import aws_lambda as lambda_
from constructs import Construct


def bench_function(scope: Construct, construct_id: str, handler: str, memory_mb: int) -> lambda_.Function:
    """A Python function of ``bench/lambdas`` (``handler``: "module.function")."""
    return lambda_.Function(
        scope,
        construct_id,
        runtime=lambda_.Runtime.PYTHON_3_13,
        handler=handler,
        code=lambda_.Code.from_asset(str(Path(__file__).parent / "lambdas"), exclude=["__pycache__", "*.pyc"]),
        memory_size=memory_mb,
        timeout=Duration.seconds(10),
    )
