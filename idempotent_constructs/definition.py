"""Where a workflow's definition lives: in the template, or as an S3 asset the template points to.

A guarded definition is tens of kilobytes, and CloudFormation refuses a template over 1 MB (through S3,
as ``cdk deploy`` sends it). ``DefinitionLocation.ASSET`` writes the definition to a file that the CDK
publishes as an asset with the stack's other assets: the template then holds ``DefinitionS3Location``
and, for each token of the definition (a table's name, a function's ARN), a ``DefinitionSubstitutions``
entry that Step Functions puts back in place of ``${name}`` when it creates the state machine. The
state machine that runs is the same as with ``DefinitionLocation.TEMPLATE``: the same definition,
byte for byte once substituted.
"""

from __future__ import annotations

import json
import re
import tempfile
from enum import Enum
from pathlib import Path
from typing import Any

from aws_cdk import Token
from aws_cdk import aws_stepfunctions as sfn


class DefinitionLocation(Enum):
    """Where ``IdempotentStateMachine`` keeps its definition."""

    TEMPLATE = "template"
    """In the template (``DefinitionString``): readable in the template and its diffs, and deployable
    with nothing but the template; each guarded workflow adds tens of kilobytes to it."""
    ASSET = "asset"
    """In an S3 asset (``DefinitionS3Location``, tokens as ``DefinitionSubstitutions``): a few hundred
    bytes of template per workflow, for stacks of more workflows than one template holds."""


# How the CDK writes an unresolved string token (the name of a resource not created yet, an ARN).
_TOKEN = re.compile(r"\$\{Token\[[^\]]+\]\}")
SUBSTITUTION_PREFIX = "IdempotencyToken"


def placeholders(text: str) -> tuple[str, dict[str, str]]:
    """``text`` with each distinct token written ``${IdempotencyToken<n>}``, and the substitutions that
    give each placeholder its token back (resolved by the CDK in the stack that holds the workflow)."""
    substitutions: dict[str, str] = {}
    names: dict[str, str] = {}

    def name(match: re.Match[str]) -> str:
        token = match.group(0)
        if token not in names:
            names[token] = f"{SUBSTITUTION_PREFIX}{len(names)}"
            substitutions[names[token]] = token
        return "${" + names[token] + "}"

    replaced = _TOKEN.sub(name, text)
    assert all(Token.is_unresolved(token) for token in substitutions.values())
    return replaced, substitutions


def render(graph: sfn.StateGraph, query_language: sfn.QueryLanguage | None) -> dict[str, Any]:
    """The definition of ``graph`` as ``DefinitionBody.from_chainable`` renders it (its states, and the
    state machine's query language when one is given)."""
    definition = dict(graph.to_graph_json(query_language))
    if query_language is not None:
        definition["QueryLanguage"] = query_language.value
    return definition


def asset_body(graph: sfn.StateGraph, query_language: sfn.QueryLanguage | None) -> tuple[sfn.DefinitionBody, dict[str, str]]:
    """``(a DefinitionBody read from an asset file, its DefinitionSubstitutions)`` for ``graph``."""
    text, substitutions = placeholders(json.dumps(render(graph, query_language), separators=(",", ":")))
    # The CDK copies the file into the cloud assembly, named by its content's hash, when it synthesizes.
    path = Path(tempfile.mkdtemp(prefix="idempotent-definition-")) / "definition.asl.json"
    path.write_text(text)
    return sfn.DefinitionBody.from_file(str(path)), substitutions
