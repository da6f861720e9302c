"""The release function: frees the keys of Standard executions that ended without releasing them."""

from __future__ import annotations

from typing import Any

from aws_cdk import Aws, Duration, Lazy
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda_destinations as destinations
from aws_cdk import aws_sqs as sqs
from constructs import Construct, IConstruct

from ...lambda_src import schema
from .. import nag, read_once
from .iam import ItemGrants, ListProducer, executions_arn, leading_keys_condition, own_executions_rule
from .shared import SharedFunction, singleton

RELEASE_FUNCTION_ID = "IdempotencyReleaseFunction"  # API: see key_function


class ReleaseFunction(SharedFunction):
    """Frees the keys of Standard executions that failed, timed out or were aborted (one per stack).

    One EventBridge rule matches the status changes of every state machine registered with
    ``watch``; the function may describe those state machines' executions (it asks for their metadata
    only), list the records they hold from each table's holder index (``dynamodb:LeadingKeys``: their
    executions' ARNs) and delete the records of the namespaces their guards use, nothing else (one
    statement per table, listing the namespaces). It reads no execution history. State machines named with this stack's prefix (``generated_name``) are matched and
    granted by that prefix, once, so the rule's event pattern (2,048 characters by default) does not
    grow with each workflow.
    """

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(
            scope,
            construct_id,
            handler="release.handler",
            asynchronous=True,
            description="idempotent-constructs: releases keys of crashed Standard executions",
        )
        self._state_machine_arns: list[Any] = []
        self._watched: set[str] = set()
        self._executions: list[str] = []  # the watched state machines' executions' ARNs, as patterns
        self._tables: dict[str, str] = {}  # table node path -> its name, for the function's environment
        self._deletable = ItemGrants(self.role, "dynamodb:DeleteItem")
        self.rule = events.Rule(
            self,
            "OnExecutionEnded",
            description="idempotent-constructs: a watched Standard execution failed, timed out or was aborted",
            event_pattern=events.EventPattern(
                source=["aws.states"],
                detail_type=["Step Functions Execution Status Change"],
                detail={
                    "status": list(schema.EXECUTION_ENDED_WITHOUT_RELEASE),
                    "stateMachineArn": Lazy.any(ListProducer(self._state_machine_arns)),
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
        nag.dead_letters(self.dead_letters, self.alarm)

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
            self._executions.append(executions_arn(pattern))
            self.role.add_to_policy(
                iam.PolicyStatement(actions=["states:DescribeExecution"], resources=[executions_arn(pattern)])
            )
            nag.acknowledge(
                self.role,
                {
                    own_executions_rule(pattern): "states:DescribeExecution on the watched state machines' own executions "
                    "(any execution name): the release function reads that a crashed execution has not been redriven since."
                },
            )
        for table, namespace in items:
            self._deletable.add(table, namespace)
            self._list_held(table)

    def _list_held(self, table: dynamodb.ITable) -> None:
        """Let the function query ``table``'s holder index for the watched executions' records, and name
        the table in its environment."""
        path = read_once.path(table)
        if path in self._tables:
            return
        self._tables[path] = read_once.table(table).name
        self.function.add_environment(schema.TABLES_ENV, ",".join(self._tables.values()))
        self.role.add_to_principal_policy(
            iam.PolicyStatement(
                sid=f"QueryHeldTable{len(self._tables) - 1}",
                actions=["dynamodb:Query"],
                resources=[f"{table.table_arn}/index/{schema.HOLDER_INDEX}"],
                conditions=leading_keys_condition(Lazy.any(ListProducer(self._executions))),
            )
        )


def release_function(scope: IConstruct) -> ReleaseFunction:
    """The stack's release function, created on first use."""
    return singleton(scope, RELEASE_FUNCTION_ID, ReleaseFunction)
