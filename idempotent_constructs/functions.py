"""The Lambda functions shared by every idempotent workflow of a stack (one of each per stack)."""

from __future__ import annotations

import atexit
import functools
import hashlib
import importlib.metadata
import importlib.util
import math
import shutil
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

import jsii
from aws_cdk import Acknowledgment, Aws, Duration, IStableAnyProducer, Lazy, RemovalPolicy, Stack, Stage, Validations
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_destinations as destinations
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct, IConstruct

from .lambda_src import schema

# Construct IDs are API: changing one replaces the function in every deployed stack.
KEY_FUNCTION_ID = "IdempotencyKeyFunction"
RELEASE_FUNCTION_ID = "IdempotencyReleaseFunction"
RESULT_FUNCTION_ID = "IdempotencyResultFunction"
RESULTS_BUCKET_ID = "IdempotencyResults"
RUNTIME = lambda_.Runtime.PYTHON_3_14
DISABLE_ASSET_STAGING = "aws:cdk:disable-asset-staging"  # the context `cdk synth --no-staging` sets


def executions_arn(state_machine_name: str) -> str:
    """Every execution of the named state machine, in the stack's account and region."""
    return f"arn:{Aws.PARTITION}:states:{Aws.REGION}:{Aws.ACCOUNT_ID}:execution:{state_machine_name}:*"


def acknowledge_own_executions(construct: IConstruct, state_machine_name: str, reason: str) -> None:
    """cdk-nag (AwsSolutionsChecks) reports a permission on ``executions_arn`` as a wildcard: it
    names one state machine's executions, whose names cannot be known in advance."""
    Validations.of(construct).acknowledge(
        Acknowledgment(
            id="AwsSolutions::AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:states:<AWS::Region>:"
            f"<AWS::AccountId>:execution:{state_machine_name}:*]",
            reason=reason,
        )
    )


def item_statement(table: dynamodb.ITable, namespace: str, *actions: str) -> iam.PolicyStatement:
    """``actions`` on the items of ``table`` whose id starts with ``{namespace}#``, and no others.
    The statement remembers ``(table, namespace)`` (``records_of``)."""
    statement = iam.PolicyStatement(
        actions=list(actions),
        resources=[table.table_arn],
        conditions={"ForAllValues:StringLike": {"dynamodb:LeadingKeys": [f"{namespace}#*"]}},
    )
    statement.idempotency_records = (table, namespace)  # type: ignore[attr-defined]  # read by records_of
    return statement


def records_of(graph: sfn.StateGraph) -> list[tuple[dynamodb.ITable, str]]:
    """``(table, namespace)`` of the records the states of ``graph`` may touch, those in its Parallel
    branches and Map item processors included (their policy statements are pushed up to it)."""
    found = (getattr(statement, "idempotency_records", None) for statement in graph.policy_statements)
    return list(dict.fromkeys(item for item in found if item is not None))


# What DynamoDB needs of a caller of a table encrypted with a customer managed key (named one by one:
# no wildcard actions).
TABLE_KEY_ACTIONS = ["kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey", "kms:ReEncryptFrom", "kms:ReEncryptTo"]


def key_statement(key: kms.IKey) -> iam.PolicyStatement:
    """Use of a table's customer managed key for item reads and writes."""
    return iam.PolicyStatement(actions=TABLE_KEY_ACTIONS, resources=[key.key_arn])


def _as_nag_renders(resolved: Any) -> str:
    """A resolved ARN as cdk-nag names it in a finding: ``Ref`` as ``<Name>``, ``GetAtt`` as ``<Name.Attr>``."""
    if isinstance(resolved, str):
        return resolved
    if "Fn::Join" in resolved:
        return "".join(_as_nag_renders(part) for part in resolved["Fn::Join"][1])
    if "Ref" in resolved:
        return f"<{resolved['Ref']}>"
    return f"<{'.'.join(resolved['Fn::GetAtt'])}>"


# Bundled with the handlers: Powertools' Logger and Metrics, pure Python, and what they import that the
# Lambda runtime lacks. Copied at synth time (no Docker, no layer version to pin per region).
BUNDLED_PACKAGES = ("aws_lambda_powertools", "typing_extensions")


def lambda_code(scope: Construct) -> lambda_.Code:
    """The shared functions' code: ``lambda_src`` plus ``BUNDLED_PACKAGES`` as installed here. Its
    hash covers the handlers' bytes and the packages' versions, so the functions are updated exactly
    when either changes."""
    handlers = sorted(path for path in lambda_source_dir().glob("*.py") if path.name != "__init__.py")
    digest = hashlib.sha256()
    for path in handlers:
        digest.update(path.name.encode() + path.read_bytes())
    for name in BUNDLED_PACKAGES:
        digest.update(f"{name}=={importlib.metadata.version(name.replace('_', '-'))}".encode())
    asset_hash = digest.hexdigest()
    # With asset staging disabled (`cdk synth --no-staging`, for SAM local), the cloud assembly points
    # at the staged directory itself: keep it, beside the assembly, instead of a temporary one.
    stage = Stage.of(scope)
    keep_in = Path(stage.outdir) if stage is not None and scope.node.try_get_context(DISABLE_ASSET_STAGING) else None
    return lambda_.Code.from_asset(str(_staged(asset_hash, tuple(handlers), keep_in)), asset_hash=asset_hash)


@functools.cache
def _staged(asset_hash: str, handlers: tuple[Path, ...], keep_in: Path | None = None) -> Path:
    """The handlers and the packages, copied once per process (and content) into a directory of its
    own (``mkdtemp``: private to this user), which the CDK then copies into the cloud assembly; it is
    removed when the process exits, unless it is made in ``keep_in``. Local copying, no Docker, no
    Lambda layer to pin per region."""
    if keep_in is not None:
        keep_in.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f"idempotent-constructs-asset-{asset_hash[:12]}-", dir=keep_in))
    if keep_in is None:
        atexit.register(shutil.rmtree, staging, ignore_errors=True)
    for path in handlers:
        shutil.copy2(path, staging / path.name)
    for name in BUNDLED_PACKAGES:
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.origin is not None, f"{name} is a dependency of this package"
        origin = Path(spec.origin)
        if origin.name == "__init__.py":
            ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
            shutil.copytree(origin.parent, staging / origin.parent.name, ignore=ignore)
        else:
            shutil.copy2(origin, staging / origin.name)
    return staging


def lambda_source_dir() -> Path:
    """The directory that becomes the Lambda asset (``idempotent_constructs/lambda_src``)."""
    return Path(str(resources.files("idempotent_constructs.lambda_src")))


class _SharedFunction(Construct):
    """A function of lambda_src with its own log group and a role that may write only there."""

    def __init__(self, scope: Construct, construct_id: str, *, handler: str, description: str) -> None:
        super().__init__(scope, construct_id)
        self.log_group = logs.LogGroup(self, "Logs", retention=logs.RetentionDays.ONE_YEAR)
        self.role = iam.Role(self, "Role", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"), description=description)
        self.function = lambda_.Function(
            self,
            "Function",
            runtime=RUNTIME,
            architecture=lambda_.Architecture.ARM_64,
            handler=handler,
            code=lambda_code(self),
            memory_size=256,
            timeout=Duration.seconds(30),
            role=self.role,
            log_group=self.log_group,
            description=description,
        )
        # Only its own log group, instead of the AWSLambdaBasicExecutionRole managed policy.
        self.role.add_to_policy(
            iam.PolicyStatement(
                actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                resources=[self.log_group.log_group_arn],
            )
        )


class KeyFunction(_SharedFunction):
    """Computes idempotency keys; pure computation, no AWS permissions beyond its own logs."""

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(
            scope,
            construct_id,
            handler="compute_key.handler",
            description="idempotent-constructs: computes idempotency keys (shared by the stack)",
        )


class ReleaseFunction(_SharedFunction):
    """Frees the keys of Standard executions that failed, timed out or were aborted (one per stack).

    One EventBridge rule matches the status changes of every state machine registered with
    ``watch``; the function may read those state machines' execution histories and delete the
    records of the namespaces their guards use, nothing else (one statement per table, listing the
    namespaces). State machines named with this stack's prefix (``generated_name``) are matched and
    granted by that prefix, once, so the rule's event pattern (2,048 characters by default) does not
    grow with each workflow.
    """

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(
            scope,
            construct_id,
            handler="release.handler",
            description="idempotent-constructs: releases keys of crashed Standard executions",
        )
        self._state_machine_arns: list[Any] = []
        self._watched: set[str] = set()
        self._deletable = _ItemGrants(self.role, "dynamodb:DeleteItem")
        self.rule = events.Rule(
            self,
            "OnExecutionEnded",
            description="idempotent-constructs: a watched Standard execution failed, timed out or was aborted",
            event_pattern=events.EventPattern(
                source=["aws.states"],
                detail_type=["Step Functions Execution Status Change"],
                detail={
                    "status": list(schema.EXECUTION_ENDED_WITHOUT_RELEASE),
                    "stateMachineArn": Lazy.any(_ListProducer(self._state_machine_arns)),
                },
            ),
        )
        # Events that could not be released: EventBridge's undelivered ones, and those whose release
        # still failed after Lambda's two retries (a stale DescribeExecution read, throttling).
        self.dead_letters = sqs.Queue(
            self,
            "DeadLetters",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=Duration.days(14),
        )
        self.rule.add_target(
            targets.LambdaFunction(
                self.function, retry_attempts=8, max_event_age=Duration.hours(2), dead_letter_queue=self.dead_letters
            )
        )
        self.function.configure_async_invoke(
            retry_attempts=2, max_event_age=Duration.hours(1), on_failure=destinations.SqsDestination(self.dead_letters)
        )
        self.alarm = cloudwatch.Alarm(
            self,
            "DeadLettersAlarm",
            alarm_description="idempotent-constructs: an ended execution's keys were not released (they wait for "
            "their lease); the queue holds the events",
            metric=self.dead_letters.metric_approximate_number_of_messages_visible(period=Duration.minutes(5)),
            threshold=1,
            evaluation_periods=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
        Validations.of(self.dead_letters).acknowledge(
            Acknowledgment(
                id="AwsSolutions::AwsSolutions-SQS3",
                reason="This queue is itself the dead-letter queue of the release function's rule target and "
                "asynchronous invocations.",
            )
        )

    def watch(self, state_machine_name: str, items: list[tuple[dynamodb.ITable, str]], *, name_prefix: str | None = None) -> None:
        """Release the records that executions of the state machine ``state_machine_name`` hold in
        ``items`` (``(table, namespace)`` of its guards, ``records_of``) when they end without
        releasing them. With ``name_prefix`` (which the name starts with), every state machine of
        this stack whose name starts with it is watched instead."""
        pattern = f"{name_prefix}*" if name_prefix else state_machine_name
        if pattern not in self._watched:
            self._watched.add(pattern)
            arn = f"arn:{Aws.PARTITION}:states:{Aws.REGION}:{Aws.ACCOUNT_ID}:stateMachine:"
            self._state_machine_arns.append({"prefix": f"{arn}{name_prefix}"} if name_prefix else f"{arn}{state_machine_name}")
            self.role.add_to_policy(
                iam.PolicyStatement(
                    actions=["states:DescribeExecution", "states:GetExecutionHistory"],
                    resources=[executions_arn(pattern)],
                )
            )
            acknowledge_own_executions(
                self.role,
                pattern,
                "states:DescribeExecution and GetExecutionHistory on the watched state machines' own "
                "executions (any execution name): the release function reads which records a crashed "
                "execution held, and that it has not been redriven since.",
            )
        for table, namespace in items:
            self._deletable.add(table, namespace)


class ResultFunction(_SharedFunction):
    """Stores and restores the results of guards with ``ResultStorage.large()`` (one per stack).

    It may update records of the tables it serves, and put and get objects under the namespaces of
    the guards it serves, nothing else.
    """

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(
            scope,
            construct_id,
            handler="results.handler",
            description="idempotent-constructs: stores and restores large results",
        )
        self._records = _ItemGrants(self.role, "dynamodb:UpdateItem", "dynamodb:GetItem")

    def serve(self, table: dynamodb.ITable, namespace: str, bucket: s3.IBucket | None) -> None:
        """Allow completing and reading records of ``namespace`` in ``table``, and keeping their
        results under the namespace's prefix in ``bucket``."""
        self._records.add(table, namespace)
        if bucket is None:
            return
        objects = bucket.arn_for_objects(f"{schema.object_prefix(namespace)}*")
        self.role.add_to_policy(iam.PolicyStatement(actions=["s3:PutObject", "s3:GetObject"], resources=[objects]))
        if bucket.encryption_key is not None:
            self.role.add_to_policy(
                iam.PolicyStatement(actions=["kms:GenerateDataKey", "kms:Decrypt"], resources=[bucket.encryption_key.key_arn])
            )
        Validations.of(self.role).acknowledge(
            Acknowledgment(
                id=f"AwsSolutions::AwsSolutions-IAM5[Resource::{_as_nag_renders(Stack.of(self).resolve(objects))}]",
                reason="s3:PutObject and GetObject on the objects of one namespace: each result's object "
                "name carries its key hash and holder, which cannot be known in advance.",
            )
        )


class ResultsBucket(Construct):
    """The stack's bucket for results too large for their record (created on first use).

    Encrypted (S3 managed keys), public access blocked, TLS only, owner-enforced, retained with the
    stack (like the table: nothing is lost on a redeploy). Objects expire one day after the longest
    record retention of the guards writing under their namespace, by one lifecycle rule per namespace,
    and objects of namespaces no guard writes any more after the longest of those. (Shortening a
    guard's retention shortens its rule for objects already written: a record kept longer than its
    object fails a replay with ``Idempotency.ResultMissing``, until it is reset or expires.)
    """

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        self._retention_days: dict[str, int] = {}
        self.bucket = s3.Bucket(
            self,
            "Bucket",
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            removal_policy=RemovalPolicy.RETAIN,
        )
        cfn = self.bucket.node.default_child
        assert isinstance(cfn, s3.CfnBucket)
        cfn.add_property_override("LifecycleConfiguration", Lazy.any(_LifecycleRules(self._retention_days)))
        Validations.of(self.bucket).acknowledge(
            Acknowledgment(
                id="AwsSolutions::AwsSolutions-S1",
                reason="Holds short-lived copies of workflow results, written and read only by the result "
                "function; access is recorded by CloudTrail, and server access logs would need a second bucket.",
            )
        )

    def retain(self, namespace: str, retention: Duration) -> None:
        """Keep objects under ``namespace/`` at least ``retention``, plus a day."""
        days = math.ceil(retention.to_seconds() / 86400) + 1
        self._retention_days[namespace] = max(days, self._retention_days.get(namespace, 0))


@jsii.implements(IStableAnyProducer)
class _LifecycleRules:
    """The bucket's lifecycle rules, rendered when the template is synthesized (after every guard)."""

    def __init__(self, retention_days: dict[str, int]) -> None:
        self._retention_days = retention_days

    def produce(self) -> Any:
        rules = [
            {
                "Id": f"ExpireResults{index}",
                "Status": "Enabled",
                "Prefix": schema.object_prefix(namespace),
                "ExpirationInDays": days,
            }
            for index, (namespace, days) in enumerate(sorted(self._retention_days.items()))
        ]
        # Objects of namespaces no guard writes any more (S3 applies the shortest matching rule, so
        # this one never shortens a namespace's own).
        rules.append(
            {"Id": "ExpireOthers", "Status": "Enabled", "ExpirationInDays": max(self._retention_days.values(), default=1)}
        )
        rules.append(
            {"Id": "AbortIncompleteUploads", "Status": "Enabled", "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1}}
        )
        return {"Rules": rules}


class _ItemGrants:
    """``actions`` on the records of the namespaces ``add``ed, for a role serving many: one statement
    per table listing the namespaces (rendered at synth time), plus the use of its customer managed
    key, so the policy grows by a namespace's name, not a statement, per namespace."""

    def __init__(self, role: iam.IRole, *actions: str) -> None:
        self.role, self.actions = role, list(actions)
        self._patterns: dict[str, list[str]] = {}  # table node path -> dynamodb:LeadingKeys patterns

    def add(self, table: dynamodb.ITable, namespace: str) -> None:
        path = table.node.path
        if path not in self._patterns:
            patterns: list[str] = []
            self._patterns[path] = patterns
            self.role.add_to_principal_policy(
                iam.PolicyStatement(
                    actions=self.actions,
                    resources=[table.table_arn],
                    conditions={
                        "ForAllValues:StringLike": {"dynamodb:LeadingKeys": Lazy.any(_ListProducer(patterns, unique=True))}
                    },
                )
            )
            if table.encryption_key is not None:
                self.role.add_to_principal_policy(key_statement(table.encryption_key))
        self._patterns[path].append(f"{namespace}#*")


@jsii.implements(IStableAnyProducer)
class _ListProducer:
    """A list that is read when the template is synthesized, after every workflow has registered."""

    def __init__(self, values: list[Any], *, unique: bool = False) -> None:
        self._values = values
        self._unique = unique

    def produce(self) -> list[Any]:
        return sorted(set(self._values)) if self._unique else list(self._values)


_Shared = TypeVar("_Shared", bound=Construct)


def _singleton(scope: IConstruct, construct_id: str, kind: type[_Shared]) -> _Shared:
    stack = Stack.of(scope)
    existing = stack.node.try_find_child(construct_id)
    return existing if isinstance(existing, kind) else kind(stack, construct_id)


def key_function(scope: IConstruct) -> KeyFunction:
    """The stack's key function, created on first use."""
    return _singleton(scope, KEY_FUNCTION_ID, KeyFunction)


def release_function(scope: IConstruct) -> ReleaseFunction:
    """The stack's release function, created on first use."""
    return _singleton(scope, RELEASE_FUNCTION_ID, ReleaseFunction)


def result_function(scope: IConstruct) -> ResultFunction:
    """The stack's result function, created on first use."""
    return _singleton(scope, RESULT_FUNCTION_ID, ResultFunction)


def results_bucket(scope: IConstruct) -> ResultsBucket:
    """The stack's results bucket, created on first use."""
    return _singleton(scope, RESULTS_BUCKET_ID, ResultsBucket)
