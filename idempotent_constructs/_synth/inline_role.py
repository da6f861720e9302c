"""``InlineRole``: the roles the library creates (a workflow's, a shared function's), their permissions
in one inline policy.

``iam.Role`` puts what is granted to it in a separate ``AWS::IAM::Policy``: one more resource per
workflow against CloudFormation's 500 a stack. This role keeps them in its own ``Policies`` (the same
permissions, the same 10,240 characters IAM allows a role's inline policies), so that a workflow takes
three resources (four with its metrics). A statement that names the state machine itself would then
make the role depend on the state machine that depends on it: a state machine with a Distributed Map
(whose permissions name it) gets the CDK's role instead (``fits``).
"""

from __future__ import annotations

from typing import Any

from aws_cdk import aws_iam as iam
from constructs import Construct

from .._readers import asl
from . import read_once


def state_machines_of_this_account(name: str | None = None) -> iam.IPrincipal:
    """Step Functions, for the state machine ``name`` of this account and Region only (``aws:SourceArn``: its ARN,
    or a version's or an alias's of it, which append ``:{version or alias}``), or for any of them where
    CloudFormation names it (``None``): the confused-deputy guard the CDK gives a state machine's own role since
    aws-cdk-lib 2.274, narrowed to the state machine the role is for. (One pattern, ``{name}*``, rather than the
    exact name and ``{name}:*``: a role's trust is in every workflow's template, and a hundred workflows' fit one.)"""
    aws = read_once.pseudo()
    arn = f"arn:{aws.partition}:states:{aws.region}:{aws.account_id}:stateMachine:{name or ''}*"
    return iam.ServicePrincipal("states.amazonaws.com", conditions={"ArnLike": {"aws:SourceArn": arn}})


class InlineRole(iam.Role):
    """A role ``assumed_by`` a service whose statements are its inline policy ``Policy``."""

    def __init__(
        self, scope: Construct, construct_id: str, *, assumed_by: iam.IPrincipal, description: str | None = None
    ) -> None:
        self.document = iam.PolicyDocument(minimize=True)
        super().__init__(
            scope,
            construct_id,
            assumed_by=assumed_by,
            description=description,
            inline_policies={"Policy": self.document},
        )

    def add_to_principal_policy(self, statement: iam.PolicyStatement) -> iam.AddToPrincipalPolicyResult:
        self.document.add_statements(statement)
        return iam.AddToPrincipalPolicyResult(statement_added=True, policy_dependable=self)

    @staticmethod
    def fits(definition: dict[str, Any]) -> bool:
        """Whether the role of a state machine of this ``definition`` can have its permissions inline: none of its
        states is a Distributed Map."""
        return not any(
            state.get("Type") == "Map" and state.get("ItemProcessor", {}).get("ProcessorConfig", {}).get("Mode") == "DISTRIBUTED"
            for _, _, state in asl.all_states(definition, "")
        )
