"""A synthesized stack as a snapshot that stays the same from machine to machine, and across CDK releases that
change nothing the stack says: what the CDK derives from content it does not show (asset hashes, the function
versions named after them, the asset metadata), what it adds of its own (the bootstrap version check, its
analytics metadata) masked or left out; each state machine's definition rendered as JSON, so that a diff reads
state by state rather than as one escaped line. For pytest with syrupy: ``assert stable_template(stack) ==
snapshot(extension_class=JSONSnapshotExtension)`` (docs/guides/testing.md).
"""

from __future__ import annotations

import json
import re
from typing import Any

from .._readers.assembly import DefinitionNotHere, state_machine_definitions

ASSET_HASH = re.compile(r"[0-9a-f]{64}")
# The CDK names a function's version after a digest of its code and configuration ("CurrentVersion" and 40 hex
# characters, the first 8 upper case): a new asset is a new name.
VERSION_NAME = re.compile(r"(CurrentVersion)[0-9A-F]{8}[0-9a-f]{32}")
# What the CDK adds to every stack of its own, which a CDK release may change: `cdk bootstrap`'s version check, and
# the analytics it reports (a compressed list of the constructs used).
CDK_PARAMETERS, CDK_RULES, CDK_CONDITIONS = ("BootstrapVersion",), ("CheckBootstrapVersion",), ("CDKMetadataAvailable",)
CDK_METADATA = "AWS::CDK::Metadata"
# The library's own texts a definition is made of (``_synth.definition``): rendered into each state machine.
DEFINITION_MAPPINGS = "IdempotentDefinitions"
STATE_MACHINE = "AWS::StepFunctions::StateMachine"


def stable_template(stack_or_template: Any) -> dict[str, Any]:
    """The template of ``stack_or_template`` (a ``Stack``, or a synthesized template as a dict) as a stable
    snapshot: asset hashes ``<asset-hash>``, versions named after code ``CurrentVersion<code-hash>``, asset and
    CDK metadata left out, and each state machine's ``DefinitionString`` (or ``DefinitionS3Location``) replaced
    by ``Definition``: its JSON, references written ``${LogicalId}`` (``state_machine_definitions``)."""
    template = _template(stack_or_template)
    definitions = _definitions(template)
    resources: dict[str, Any] = {}
    for logical_id, resource in template.get("Resources", {}).items():
        if resource.get("Type") == CDK_METADATA:
            continue
        resource = dict(resource)
        if logical_id in definitions:
            properties = {k: v for k, v in resource["Properties"].items() if not k.startswith("Definition")}
            resource["Properties"] = {**properties, "Definition": definitions[logical_id]}
        metadata = {k: v for k, v in resource.get("Metadata", {}).items() if not k.startswith("aws:asset:")}
        resource.pop("Metadata", None)
        if metadata:
            resource["Metadata"] = metadata
        resources[logical_id] = resource
    stable = {**template, "Resources": resources}
    for section, names in (("Parameters", CDK_PARAMETERS), ("Rules", CDK_RULES), ("Conditions", CDK_CONDITIONS)):
        kept = {name: value for name, value in template.get(section, {}).items() if name not in names}
        stable.pop(section, None)
        if kept:
            stable[section] = kept
    mappings = {name: value for name, value in template.get("Mappings", {}).items() if name != DEFINITION_MAPPINGS}
    stable.pop("Mappings", None)
    if mappings:
        stable["Mappings"] = mappings
    text = ASSET_HASH.sub("<asset-hash>", json.dumps(stable, sort_keys=True))
    return dict(json.loads(VERSION_NAME.sub(r"\1<code-hash>", text)))


def _definitions(template: dict[str, Any]) -> dict[str, Any]:
    """Each state machine's definition that the template holds; one kept in S3 (an asset not at hand) is left
    as its masked location."""
    resources = template.get("Resources", {})
    machines = [logical_id for logical_id, resource in resources.items() if resource.get("Type") == STATE_MACHINE]
    found: dict[str, Any] = {}
    for machine in machines:
        alone = {k: v for k, v in resources.items() if k == machine or v.get("Type") != STATE_MACHINE}
        try:
            found.update(state_machine_definitions({**template, "Resources": alone}))
        except DefinitionNotHere:
            continue
    return found


def _template(stack_or_template: Any) -> dict[str, Any]:
    if isinstance(stack_or_template, dict):
        return stack_or_template
    from aws_cdk.assertions import Template

    return dict(Template.from_stack(stack_or_template).to_json())
