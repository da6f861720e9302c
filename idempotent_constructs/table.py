"""The DynamoDB table that holds idempotency records; one table can serve many workflows."""

from __future__ import annotations

from typing import Any

from aws_cdk import Annotations, RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from ._synth import nag, option_kinds, options
from ._synth.functions import TABLE_KEY_ACTIONS, WORKFLOW_ITEM_ACTIONS, key_statement, leading_keys, leading_keys_condition
from .errors import Problems
from .key import namespace_problems
from .lambda_src import schema

# What Powertools' DynamoDBPersistenceLayer does to its records: get_item, put_item (to acquire),
# update_item and delete_item. A workflow's states never put (WORKFLOW_ITEM_ACTIONS).
POWERTOOLS_ACTIONS = ("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem")
# What the command line and operations read with: items, the namespace index (Query, then BatchGetItem), scans.
READ_ACTIONS = ("dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query", "dynamodb:Scan", "dynamodb:DescribeTable")
TABLE = "IdempotencyTable"
# Every option of an IdempotencyTable: what it takes, what it does, its default (options.Option).
TABLE_MODEL = options.Options(
    options.Option(
        "table", option_kinds.EXISTING_TABLE, "an existing table to use instead of creating one.", "a new table.", (TABLE,)
    ),
    options.Option(
        "removal_policy",
        option_kinds.REMOVAL_POLICY,
        "what happens to a created table when it leaves the stack.",
        "``RemovalPolicy.RETAIN``. ``DESTROY`` deletes every record and is warned about.",
        (TABLE,),
    ),
    options.Option(
        "encryption_key",
        option_kinds.KMS_KEY,
        "a customer managed KMS key for a created table.",
        "the AWS managed key for DynamoDB.",
        (TABLE,),
    ),
    options.Option("point_in_time_recovery", option_kinds.BOOL, "continuous backups of a created table.", "``True``.", (TABLE,)),
)
# What each option takes.
TABLE_OPTIONS: dict[str, option_kinds.Kind] = TABLE_MODEL.kinds(TABLE)


class IdempotencyTable(Construct):
    """A DynamoDB table for idempotency records, secure by default.

    Created with: partition key ``id`` (string), on-demand billing, TTL on ``expiration``,
    point-in-time recovery, server-side encryption with a KMS key (the AWS managed key unless
    ``encryption_key`` is given), no fixed physical name (two stacks can deploy side by side),
    ``RemovalPolicy.RETAIN`` so records survive the stack, and deletion protection, so that no one
    deletes them by deleting the table (off only with ``removal_policy=RemovalPolicy.DESTROY``).

    Or adopt an existing table with ``table=``; it must have a string partition key named ``id``,
    and TTL on ``expiration`` is your responsibility.
    """

    @TABLE_MODEL.documented(TABLE)
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        table: dynamodb.ITable | None = None,
        removal_policy: RemovalPolicy | None = None,
        encryption_key: kms.IKey | None = None,
        point_in_time_recovery: bool | None = None,
    ) -> None:
        """
        :options: each option's documentation is written here from table.TABLE_MODEL
        """
        super().__init__(scope, construct_id)
        # One pass: the type of every parameter (by name), then the values of those of the right type.
        found = options.Validation(self, TABLE_MODEL, TABLE, locals())
        if found.values["table"] is not None and (
            removal_policy is not None or encryption_key is not None or point_in_time_recovery is not None
        ):
            found.add(
                "table: an existing table was given together with options for creating one "
                "(removal_policy, encryption_key, point_in_time_recovery); pass one or the other"
            )
        found.raise_if_any()

        if table is not None:
            self.table: dynamodb.ITable = table
            return
        if removal_policy == RemovalPolicy.DESTROY:
            Annotations.of(self).add_warning_v2(
                "idempotent-constructs:table-destroy",
                "removal_policy=DESTROY deletes every idempotency record with the stack; duplicates "
                "arriving after a redeploy would run again. Use it for test stacks only.",
            )
        self.table = dynamodb.Table(
            self,
            "Table",
            partition_key=dynamodb.Attribute(name=schema.ID, type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            time_to_live_attribute=schema.EXPIRATION,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=point_in_time_recovery is not False
            ),
            encryption=(
                dynamodb.TableEncryption.CUSTOMER_MANAGED if encryption_key is not None else dynamodb.TableEncryption.AWS_MANAGED
            ),
            encryption_key=encryption_key,
            removal_policy=removal_policy or RemovalPolicy.RETAIN,
            # Nobody deletes the records by deleting the table, unless the stack is to take it (DESTROY).
            deletion_protection=removal_policy != RemovalPolicy.DESTROY,
        )
        self.table.add_global_secondary_index(
            index_name=schema.NAMESPACE_INDEX,
            partition_key=dynamodb.Attribute(name=schema.SHARD, type=dynamodb.AttributeType.STRING),
            sort_key=dynamodb.Attribute(name=schema.ID, type=dynamodb.AttributeType.STRING),
            projection_type=dynamodb.ProjectionType.KEYS_ONLY,
        )
        self.table.add_global_secondary_index(
            index_name=schema.HOLDER_INDEX,
            partition_key=dynamodb.Attribute(name=schema.HELD_BY, type=dynamodb.AttributeType.STRING),
            projection_type=dynamodb.ProjectionType.KEYS_ONLY,
        )
        if point_in_time_recovery is not False:
            nag.table(self)

    @property
    def table_name(self) -> str:
        return self.table.table_name

    @property
    def table_arn(self) -> str:
        return self.table.table_arn

    def grant_workflow_access(self, grantee: iam.IGrantable) -> iam.Grant:
        """Exactly what a workflow's states call on its records, as the library's own workflow roles
        have it: get, update and delete items (acquiring is a conditional update, never a put), plus
        the use of the table's customer managed KMS key if it has one.

        On every record of the table: the roles the library creates are limited further, to their
        workflow's namespace.
        """
        # On the table's items only (Table.grant would add its indexes, which no item action reaches).
        grant = iam.Grant.add_to_principal(
            grantee=grantee, actions=list(WORKFLOW_ITEM_ACTIONS), resource_arns=[self.table.table_arn]
        )
        if self.table.encryption_key is None:
            return grant
        # Table.grant leaves a customer managed key to the caller (its grant_*_data methods add more table actions).
        return grant.combine(
            iam.Grant.add_to_principal(
                grantee=grantee, actions=TABLE_KEY_ACTIONS, resource_arns=[self.table.encryption_key.key_arn]
            )
        )

    def grant_read_records(self, grantee: iam.IGrantable) -> iam.Grant:
        """Read records for inspection tools: get, query (the namespace index too), scan and describe the table."""
        return self.table.grant(grantee, *READ_ACTIONS)

    def grant_powertools_idempotency(self, function: lambda_.Function, *, key_prefix: str | None = None) -> iam.Grant:
        """Let a Lambda function that uses Powertools for AWS Lambda (Python) idempotency keep its
        records in this table, next to the workflows' records.

        Grants the four item actions Powertools' ``DynamoDBPersistenceLayer`` uses (get, put, update
        and delete item) on this table, only for items whose id starts with ``{key_prefix}#`` (a
        ``dynamodb:LeadingKeys`` condition; plus the table's customer managed key, if any), and sets two environment variables on the function:
        ``IDEMPOTENCY_TABLE_NAME`` (this table) and ``IDEMPOTENCY_KEY_PREFIX``. The function's code
        passes them on::

            persistence = DynamoDBPersistenceLayer(table_name=os.environ["IDEMPOTENCY_TABLE_NAME"])

            @idempotent(persistence_store=persistence, config=IdempotencyConfig(event_key_jmespath="order_id"),
                        key_prefix=os.environ["IDEMPOTENCY_KEY_PREFIX"])
            def handler(event, context): ...

        Powertools then writes ``{key_prefix}#{hash}`` records beside the workflows'
        ``{namespace}#{hash}`` ones, with the same attribute names (``id``, ``status``,
        ``expiration`` as the TTL attribute, ``in_progress_expiration``, ``data``, ``validation``),
        which are Powertools' defaults; its statuses are ``INPROGRESS`` and ``COMPLETED`` (it deletes
        the record when the function raises). Give each further decorated function
        (``idempotent_function``) its own persistence layer and its own prefix, for example
        ``f"{prefix}.charge"``: Powertools hashes only the selected data, so two functions selecting
        equal data under one prefix would share a record, and a layer shared by two decorators keeps
        the first one's settings but the last one's prefix, so records land under the wrong id.

        Takes a ``lambda_.Function`` rather than an ``IFunction``: only a function defined in this app
        can have its environment set.

        :param function: the function whose code uses Powertools' idempotency utility.
        :param key_prefix: the prefix of its record ids, a namespace like a workflow's (letters,
            digits and ``_ . : / = + @ -``). Default: the function's construct path, stable across
            deploys and distinct from every workflow's default namespace.
        """
        option_kinds.check(
            self,
            {
                "function": option_kinds.instance_of(
                    lambda_.Function, lambda value: "a function defined in this app (lambda_.Function)"
                )
            },
            {"function": function},
            required=("function",),
        )
        prefix = key_prefix if key_prefix is not None else function.node.path
        problems = Problems(function)
        problems.extend(namespace_problems(prefix, "key_prefix"))
        problems.raise_if_any()
        function.add_environment(schema.TABLE_NAME_ENV, self.table_name)
        function.add_environment(schema.KEY_PREFIX_ENV, prefix)
        if self.table.encryption_key is not None:
            function.add_to_role_policy(key_statement(self.table.encryption_key))
        return iam.Grant.add_to_principal(
            grantee=function,
            actions=list(POWERTOOLS_ACTIONS),
            resource_arns=[self.table.table_arn],
            conditions=leading_keys_condition(leading_keys([prefix])[0]),
        )


def _workflow_table(value: Any) -> bool:
    return isinstance(value, IdempotencyTable) or option_kinds.implements(value, dynamodb.ITable)


# Where a workflow's or a guard's records live: what their ``table`` option takes.
WORKFLOW_TABLE = option_kinds.Kind("IdempotencyTable or a table (dynamodb.ITable)", _workflow_table, option_kinds.table_fix)
