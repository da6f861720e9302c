"""IAM statements the guards and the shared functions share: item access limited to a namespace's
records, a table's key, a state machine's own executions, and cdk-nag acknowledgments of them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import jsii
from aws_cdk import Annotations, IResolvable, IStableAnyProducer, Lazy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_stepfunctions as sfn
from constructs import IValidation

from ...lambda_src import schema
from .. import nag, read_once


def executions_arn(state_machine_name: str) -> str:
    """Every execution of the named state machine, in the stack's account and region."""
    aws = read_once.pseudo()
    return f"arn:{aws.partition}:states:{aws.region}:{aws.account_id}:execution:{state_machine_name}:*"


def own_executions_rule(state_machine_name: str) -> str:
    """The rule id of cdk-nag's (AwsSolutionsChecks) finding on a permission on ``executions_arn``, which it reports
    as a wildcard: that names one state machine's executions, whose names cannot be known in advance."""
    return f"{nag.SOLUTIONS}IAM5[Resource::arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:{state_machine_name}:*]"


def item_statement(table: dynamodb.ITable, namespace: str, *actions: str) -> iam.PolicyStatement:
    """``actions`` on the items of ``table`` whose id starts with ``{namespace}#``, and no others.
    The statement remembers ``(table, namespace)`` (``records_of``)."""
    statement = iam.PolicyStatement(
        actions=list(actions),
        resources=[read_once.table(table).arn],
        conditions=leading_keys_condition(leading_keys([namespace])[0]),
    )
    statement.idempotency_records = (table, namespace)  # type: ignore[attr-defined]  # read by records_of
    return statement


def kept_for_redrive(graph: sfn.StateGraph) -> list[str]:
    """The namespaces of the guards in ``graph`` (branches and item processors included) that keep a failed
    execution's key for its redrive (``FailurePolicy.KEEP_FOR_REDRIVE``: their statements say so)."""
    found = (getattr(statement, "idempotency_kept_for_redrive", None) for statement in graph.policy_statements)
    return list(dict.fromkeys(namespace for namespace in found if namespace is not None))


def records_of(graph: sfn.StateGraph) -> list[tuple[dynamodb.ITable, str]]:
    """``(table, namespace)`` of the records the states of ``graph`` may touch, those in its Parallel
    branches and Map item processors included (their policy statements are pushed up to it)."""
    found = (getattr(statement, "idempotency_records", None) for statement in graph.policy_statements)
    return list(dict.fromkeys(item for item in found if item is not None))


# The DynamoDB item actions a workflow's own states call on its records (the guard's Tasks of the
# optimized integration): a read of the record, conditional updates to acquire, complete, extend or mark
# it failed, and a delete to release it. Never a put: acquiring is an update whose condition refuses a
# live holder. The library's workflow roles and IdempotencyTable.grant_workflow_access grant these.
WORKFLOW_ITEM_ACTIONS = ("dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem")


# What DynamoDB needs of a caller of a table encrypted with a customer managed key (named one by one:
# no wildcard actions).
TABLE_KEY_ACTIONS = ["kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey", "kms:ReEncryptFrom", "kms:ReEncryptTo"]


def key_statement(key: kms.IKey) -> iam.PolicyStatement:
    """Use of a table's customer managed key for item reads and writes."""
    return iam.PolicyStatement(actions=TABLE_KEY_ACTIONS, resources=[key.key_arn])


def as_nag_renders(resolved: Any) -> str:
    """A resolved ARN as cdk-nag names it in a finding: ``Ref`` as ``<Name>``, ``GetAtt`` as ``<Name.Attr>``."""
    if isinstance(resolved, str):
        return resolved
    if "Fn::Join" in resolved:
        return "".join(as_nag_renders(part) for part in resolved["Fn::Join"][1])
    if "Ref" in resolved:
        return f"<{resolved['Ref']}>"
    return f"<{'.'.join(resolved['Fn::GetAtt'])}>"


# The characters a shared function's ``dynamodb:LeadingKeys`` list may take of IAM's 10,240 per role
# (inline policies, whitespace not counted): the rest of its policy takes under 2,000.
LEADING_KEYS_BUDGET = 7000


def leading_keys(namespaces: Iterable[str], budget: int = LEADING_KEYS_BUDGET) -> tuple[list[str], bool]:
    """``(patterns, widened)``: the ``dynamodb:LeadingKeys`` patterns of the records of ``namespaces``
    (``{namespace}#*`` each), or, if they take more than ``budget`` characters, of the namespaces under
    their ``/``-separated prefixes, cut from the deepest up until they fit (``orders/eu/*``), and at worst
    every record (``*``)."""
    patterns = {(tuple(namespace.split("/")), True) for namespace in namespaces}
    widened = False
    while _size(patterns) > budget:
        depth = max(len(segments) for segments, _ in patterns)
        if depth == 1:
            return ["*"], True
        patterns = {(segments[:-1], False) if len(segments) == depth else (segments, exact) for segments, exact in patterns}
        widened = True
    return sorted(_text(pattern) for pattern in patterns), widened


def leading_keys_condition(patterns: list[str] | IResolvable) -> dict[str, Any]:
    """The condition that limits a statement's item actions to the records whose partition key matches
    one of ``patterns`` (``leading_keys``'s, or a token of them for a list complete only at synth): every
    statement the library makes on records is limited with it."""
    return {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": patterns}}


def _text(pattern: tuple[tuple[str, ...], bool]) -> str:
    segments, exact = pattern
    return schema.id_prefix("/".join(segments)) + "*" if exact else "/".join(segments) + "/*"


def _size(patterns: set[tuple[tuple[str, ...], bool]]) -> int:
    return sum(len(_text(pattern)) + 3 for pattern in patterns)  # quoted, and a comma


@jsii.implements(IValidation)
class ItemGrants:
    """``actions`` on the records of the namespaces ``add``ed, for a role serving many: one statement
    per table listing the namespaces (rendered at synth time, ``leading_keys``), plus the use of its
    customer managed key, so the policy grows by a namespace's name, not a statement, per namespace, and
    stays within IAM's size for a role (a warning says when the list had to be widened to fit)."""

    def __init__(self, role: iam.IRole, *actions: str) -> None:
        self.role, self.actions = role, list(actions)
        self._namespaces: dict[str, list[str]] = {}  # table node path -> namespaces
        role.node.add_validation(self)

    def add(self, table: dynamodb.ITable, namespace: str) -> None:
        path = read_once.path(table)
        if path not in self._namespaces:
            namespaces: list[str] = []
            self._namespaces[path] = namespaces
            self.role.add_to_principal_policy(
                iam.PolicyStatement(
                    # A statement with a Sid is never merged (PolicyDocument(minimize=True) compares the
                    # unresolved lists, which look alike, and would merge two tables' statements into one).
                    sid="".join(action.split(":")[1] for action in self.actions) + f"Table{len(self._namespaces) - 1}",
                    actions=self.actions,
                    resources=[table.table_arn],
                    conditions=leading_keys_condition(Lazy.any(_LeadingKeys(namespaces))),
                )
            )
            if table.encryption_key is not None:
                self.role.add_to_principal_policy(key_statement(table.encryption_key))
        self._namespaces[path].append(namespace)

    def validate(self) -> list[str]:
        for path, namespaces in self._namespaces.items():
            patterns, widened = leading_keys(namespaces)
            if widened:
                Annotations.of(self.role).add_warning_v2(
                    "idempotent-constructs:shared-access-widened",
                    f"{', '.join(self.actions)} on the records of {path}: the {len(set(namespaces))} namespaces of this "
                    f"stack's workflows would take more than IAM's 10,240 characters of policy for one role, so the "
                    f"function may touch the records under {', '.join(patterns[:5])}{', ...' if len(patterns) > 5 else ''}; "
                    'give the workflows namespaces under a few common prefixes ("orders/..."), or spread them over stacks',
                )
        return []


@jsii.implements(IStableAnyProducer)
class _LeadingKeys:
    def __init__(self, namespaces: list[str]) -> None:
        self._namespaces = namespaces

    def produce(self) -> list[str]:
        return leading_keys(self._namespaces)[0]


@jsii.implements(IStableAnyProducer)
class ListProducer:
    """A list that is read when the template is synthesized, after every workflow has registered."""

    def __init__(self, values: list[Any]) -> None:
        self._values = values

    def produce(self) -> list[Any]:
        return list(self._values)
