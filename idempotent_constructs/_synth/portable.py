"""A synthesized stack as a template of its own (``idempotent-constructs wrap``), for a team that deploys
with ``aws cloudformation package`` and ``deploy``, or with SAM, and has no CDK bootstrap.

``portable`` rewrites the stack's template: the CDK's bootstrap parts go (the version rule and its
parameter, the analytics resource, construct paths in metadata) and each file asset becomes a local path
beside the template, in the property that ``package`` uploads (``LOCAL_PATHS``); the asset is copied
there. A state machine definition keeps the file's own ``${Placeholder}`` names. ``as_sam`` writes the same
stack as a SAM template: its functions ``AWS::Serverless::Function`` with ``CodeUri``, its state machine
``AWS::Serverless::StateMachine`` with ``DefinitionUri``.
"""

from __future__ import annotations

import json
import re
import shutil
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .._readers.assembly import without_bootstrap_checks
from ..errors import IdempotencyConfigurationError

# The property of each resource type that `aws cloudformation package` and `sam package` upload when it
# names a local path ("Packaging" in the AWS CLI's `cloudformation package` reference).
LOCAL_PATHS = {
    "AWS::Lambda::Function": "Code",
    "AWS::Lambda::LayerVersion": "Content",
    "AWS::StepFunctions::StateMachine": "DefinitionS3Location",
    "AWS::Serverless::Function": "CodeUri",
    "AWS::Serverless::StateMachine": "DefinitionUri",
}
SAM_TRANSFORM = "AWS::Serverless-2016-10-31"
_LOGICAL_ID_HASH = re.compile(r"[0-9A-F]{8}$")


def portable(assembly_dir: Path, stack_name: str, out: Path) -> dict[str, Any]:
    """The template of ``stack_name`` in the cloud assembly ``assembly_dir``, its assets copied under
    ``out`` and named by paths relative to it. Raises ``IdempotencyConfigurationError`` for an asset the
    template uses where ``package`` uploads nothing."""
    template = without_bootstrap_checks(json.loads((assembly_dir / f"{stack_name}.template.json").read_text()))
    manifest = (
        json.loads((assembly_dir / f"{stack_name}.assets.json").read_text())
        if (assembly_dir / f"{stack_name}.assets.json").exists()
        else {"files": {}}
    )
    sources = {  # object key -> the asset's source in the assembly
        destination["objectKey"]: assembly_dir / asset["source"]["path"]
        for asset in manifest["files"].values()
        for destination in asset["destinations"].values()
        if asset["source"]["path"] != f"{stack_name}.template.json"
    }
    code = sorted({key for key in sources if _is_code(sources[key])})
    copied: dict[str, str] = {}
    for logical_id, resource in template["Resources"].items():
        for cdk_only in ("aws:cdk:path", "aws:asset:path", "aws:asset:property"):
            resource.get("Metadata", {}).pop(cdk_only, None)
        if not resource.get("Metadata"):
            resource.pop("Metadata", None)
        prop = LOCAL_PATHS.get(resource["Type"], "")
        location = resource.get("Properties", {}).get(prop)
        key = location.get("S3Key", location.get("Key")) if isinstance(location, dict) else None
        if not isinstance(key, str) or key not in sources:
            continue
        if key not in copied:
            source = sources[key]
            if _is_code(source):
                relative = "functions" if len(code) == 1 else f"functions-{code.index(key) + 1}"
                if source.is_dir():
                    shutil.copytree(source, out / relative, dirs_exist_ok=True)
                else:  # the library's functions' code, zipped when it was staged (functions.assets)
                    with zipfile.ZipFile(source) as archive:
                        archive.extractall(out / relative)
                    # Readable by all, whatever the umask: `package` zips the files with their modes, and
                    # Lambda runs the code as another user.
                    for path in (out / relative).rglob("*"):
                        path.chmod(0o755 if path.is_dir() else 0o644)
            else:
                relative = f"statemachine/{_LOGICAL_ID_HASH.sub('', logical_id)}.asl.json"
                (out / "statemachine").mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, out / relative)
            copied[key] = relative
        resource["Properties"][prop] = copied[key]
        if resource["Type"] == "AWS::StepFunctions::StateMachine":
            _own_placeholder_names(out / copied[key], resource["Properties"], template.get("Parameters", {}))
    text = json.dumps(template)
    left = [key for key in sources if key not in copied and key in text]
    if left:
        raise IdempotencyConfigurationError(
            stack_name,
            [
                f"the template uses assets ({', '.join(left)}) where `aws cloudformation package` uploads nothing: deploy it with the CDK"
            ],
        )
    return template


def _is_code(source: Path) -> bool:
    """Whether an asset is a function's code: a directory, or a zip file."""
    return source.is_dir() or source.suffix == ".zip"


def _own_placeholder_names(definition: Path, properties: dict[str, Any], parameters: Mapping[str, Any]) -> None:
    """A substitution that gives a template parameter of the same name as the file's placeholder back
    its name: ``${reserveFlightFunction}``, not ``${IdempotencyToken2}``."""
    substitutions = properties.get("DefinitionSubstitutions", {})
    text = definition.read_text()
    for name, value in list(substitutions.items()):
        parameter = value.get("Ref") if isinstance(value, dict) else None
        if isinstance(parameter, str) and parameter in parameters and parameter not in substitutions:
            text = text.replace("${" + name + "}", "${" + parameter + "}")
            substitutions[parameter] = substitutions.pop(name)
    definition.write_text(text)


def as_sam(template: dict[str, Any]) -> dict[str, Any]:
    """``template`` (as ``portable`` writes it) as a SAM template: the transform, each function an
    ``AWS::Serverless::Function`` and each state machine an ``AWS::Serverless::StateMachine``, their
    properties under SAM's names; the other resources as they are (SAM takes any CloudFormation)."""
    template = json.loads(json.dumps(template))
    resources = {}
    for logical_id, resource in template["Resources"].items():
        convert = _SAM_TYPES.get(resource["Type"])
        converted = convert(resource.get("Properties", {})) if convert is not None else None
        resources[logical_id] = resource if converted is None else {**resource, **converted}
    return {"AWSTemplateFormatVersion": "2010-09-09", "Transform": SAM_TRANSFORM, **template, "Resources": resources}


def _sam_function(properties: dict[str, Any]) -> dict[str, Any] | None:
    renamed = {"Code": "CodeUri"}
    if not isinstance(properties.get("Code"), str) or set(properties) - _SAM_FUNCTION_PROPERTIES:
        return None
    converted = {renamed.get(name, name): value for name, value in properties.items()}
    if "TracingConfig" in converted:
        converted["Tracing"] = converted.pop("TracingConfig")["Mode"]
    if "Tags" in converted:
        converted["Tags"] = {tag["Key"]: tag["Value"] for tag in converted["Tags"]}
    return {"Type": "AWS::Serverless::Function", "Properties": converted}


def _sam_state_machine(properties: dict[str, Any]) -> dict[str, Any] | None:
    renamed = {
        "DefinitionS3Location": "DefinitionUri",
        "StateMachineName": "Name",
        "StateMachineType": "Type",
        "RoleArn": "Role",
        "LoggingConfiguration": "Logging",
        "TracingConfiguration": "Tracing",
        "DefinitionSubstitutions": "DefinitionSubstitutions",
    }
    if not isinstance(properties.get("DefinitionS3Location"), str) or set(properties) - set(renamed):
        return None
    return {"Type": "AWS::Serverless::StateMachine", "Properties": {renamed[name]: value for name, value in properties.items()}}


# The properties of AWS::Lambda::Function that AWS::Serverless::Function takes under the same name (Code
# and TracingConfig renamed above).
_SAM_FUNCTION_PROPERTIES = {
    "Architectures",
    "Code",
    "Description",
    "Environment",
    "FunctionName",
    "Handler",
    "KmsKeyArn",
    "Layers",
    "LoggingConfig",
    "MemorySize",
    "ReservedConcurrentExecutions",
    "Role",
    "Runtime",
    "Tags",
    "Timeout",
    "TracingConfig",
}
_SAM_TYPES: dict[str, Callable[[dict[str, Any]], dict[str, Any] | None]] = {
    "AWS::Lambda::Function": _sam_function,
    "AWS::StepFunctions::StateMachine": _sam_state_machine,
}
