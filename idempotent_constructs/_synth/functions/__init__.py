"""The Lambda functions shared by every idempotent workflow of a stack (one of each per stack), their
code, and the IAM statements the guards and the functions share: one module each."""

from .assets import BUNDLED_PACKAGES, DISABLE_ASSET_STAGING, RUNTIME, lambda_code, lambda_source_dir
from .iam import (
    TABLE_KEY_ACTIONS,
    WORKFLOW_ITEM_ACTIONS,
    executions_arn,
    item_statement,
    kept_for_redrive,
    key_statement,
    leading_keys,
    leading_keys_condition,
    own_executions_rule,
    records_of,
)
from .key_function import KEY_FUNCTION_ID, KeyFunction, key_function
from .release_function import RELEASE_FUNCTION_ID, ReleaseFunction, release_function
from .result_function import RESULT_FUNCTION_ID, ResultFunction, result_function
from .results_bucket import RESULTS_BUCKET_ID, ResultsBucket, results_bucket

__all__ = [
    "BUNDLED_PACKAGES",
    "DISABLE_ASSET_STAGING",
    "KEY_FUNCTION_ID",
    "RELEASE_FUNCTION_ID",
    "RESULTS_BUCKET_ID",
    "RESULT_FUNCTION_ID",
    "RUNTIME",
    "TABLE_KEY_ACTIONS",
    "WORKFLOW_ITEM_ACTIONS",
    "KeyFunction",
    "ReleaseFunction",
    "ResultFunction",
    "ResultsBucket",
    "executions_arn",
    "item_statement",
    "kept_for_redrive",
    "key_function",
    "key_statement",
    "lambda_code",
    "lambda_source_dir",
    "leading_keys",
    "leading_keys_condition",
    "own_executions_rule",
    "records_of",
    "release_function",
    "result_function",
    "results_bucket",
]
