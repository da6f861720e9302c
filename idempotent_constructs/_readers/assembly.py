"""A cloud assembly (``cdk.out``) read as `cdk deploy` reads it: its file assets, published to the CDK
bootstrap bucket, the construct path of each resource, and each state machine's definition. Needs no
emulator: the embedded one (moto) and the cross-check against ministack (``crosscheck/``) deploy with
it, and the command-line tool's ``graph`` and ``key-changes`` read templates with it (``machines_in``). Also the one replacement of ``${Name}``
placeholders as CloudFormation makes it (``substitute``), which the synth uses as well."""

from __future__ import annotations

import contextlib
import io
import json
import re
import zipfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The account and region of the embedded emulator (moto's), and of the placeholders in rendered definitions.
ACCOUNT = "123456789012"
REGION = "us-east-1"
# A placeholder CloudFormation replaces in a definition (DefinitionSubstitutions) or an asset manifest: ${Name}.
PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")
# How the CDK writes an unresolved string token in a text (a name or ARN known only at deploy time),
# "${Token[TOKEN.123]}": a value, never a placeholder of the user's.
TOKEN = re.compile(r"\$\{Token\[[^\]]+\]\}")


def construct_paths(assembly_dir: Path, stack_name: str) -> dict[str, str]:
    """Logical id -> construct path, from the cloud assembly manifest."""
    artifact = json.loads((assembly_dir / "manifest.json").read_text())["artifacts"][stack_name]
    metadata = dict(artifact.get("metadata", {}))
    if "additionalMetadataFile" in artifact:
        metadata.update(json.loads((assembly_dir / artifact["additionalMetadataFile"]).read_text()))
    return {
        entry["data"]: path.strip("/")
        for path, entries in metadata.items()
        for entry in entries
        if entry["type"] == "aws:cdk:logicalId"
    }


def resource_paths(template: dict[str, Any], template_path: Path) -> dict[str, str | None]:
    """Logical id -> construct path of each resource of a template read from ``template_path``: from the
    cloud assembly the template is in, or from the template's own path metadata; None where neither says."""
    paths: dict[str, str] = {}
    if (template_path.parent / "manifest.json").exists():
        with contextlib.suppress(KeyError, ValueError):  # a manifest of another assembly, or none we can read
            paths = construct_paths(template_path.parent, template_path.name.removesuffix(".template.json"))
    return {
        logical_id: paths.get(logical_id) or resource.get("Metadata", {}).get("aws:cdk:path")
        for logical_id, resource in template.get("Resources", {}).items()
    }


@dataclass(frozen=True)
class FoundMachine:
    """A state machine of a template read from a file: its stack, logical id, construct path (None where
    the files do not say), a readable name (the path without ``/Resource``, or ``{stack}/{logical id}``)
    and its definition as Step Functions gets it."""

    stack: str
    logical_id: str
    path: str | None
    name: str
    definition: dict[str, Any]


class UnreadableTemplate(ValueError):
    """A template file that is not there, not JSON, or whose definitions are elsewhere."""


def machines_in(source: Path) -> Iterator[FoundMachine]:
    """Each state machine of a template file (``*.template.json``) or of each template of a cloud assembly
    directory (``cdk.out``), a definition in S3 read from the directory the template is in."""
    templates = sorted(source.glob("*.template.json")) if source.is_dir() else [source]
    if not templates:
        raise UnreadableTemplate(f"no template in {source}: give a *.template.json or a cloud assembly directory (cdk.out)")
    for template_path in templates:
        try:
            template = json.loads(template_path.read_text(encoding="utf-8"))
            definitions = state_machine_definitions(template, template_path.parent)
        except (OSError, ValueError, DefinitionNotHere) as error:
            raise UnreadableTemplate(f"cannot read the template {template_path}: {error}") from None
        stack = template_path.name.removesuffix(".template.json")
        paths = resource_paths(template, template_path)
        for logical_id, definition in definitions.items():
            path = paths[logical_id]
            name = path.removesuffix("/Resource") if path else f"{stack}/{logical_id}"
            yield FoundMachine(stack, logical_id, path, name, definition)


def names_resource(wanted: str, *, stack_name: str, logical_id: str, path: str | None) -> bool:
    """Whether ``wanted`` names a resource of the stack ``stack_name``: a construct id or a part of its
    construct path (``Refunds``, ``Refunds/StateMachine``, ``MyStack/Refunds``), or its logical id.

    A bare template written by ``app.synth()`` carries no construct paths (``path`` is None): there the
    logical id stands for the path, as CDK derives it, the path's construct ids below the stack
    joined with their non-alphanumeric characters dropped, then a hash (``Refunds/StateMachine/Resource``
    is ``RefundsStateMachine3A5B7C9D``); ``wanted`` is matched against how it begins.
    """
    if wanted == logical_id:
        return True
    if path is not None:
        return f"/{wanted.strip('/')}/" in f"/{path}/"
    below_stack = wanted.strip("/").removeprefix(f"{stack_name}/")
    stem = re.sub(r"[^A-Za-z0-9]", "", below_stack)
    return bool(stem) and logical_id.startswith(stem)


def publish_file_assets(s3: Any, assembly_dir: Path, stack_name: str, *, account: str, region: str) -> str | None:
    """Upload the stack's file assets (directories zipped, the template too) to the buckets its asset
    manifest names, creating them if need be; returns the template's S3 URL, for ``TemplateURL``."""
    manifest_path = assembly_dir / f"{stack_name}.assets.json"
    if not manifest_path.exists():
        return None

    pseudo = {"AWS::AccountId": account, "AWS::Region": region, "AWS::Partition": "aws"}
    template_url = None
    for asset in json.loads(manifest_path.read_text()).get("files", {}).values():
        source = assembly_dir / asset["source"]["path"]
        body = zip_directory(source) if source.is_dir() else source.read_bytes()
        for destination in asset["destinations"].values():
            bucket, key = substitute(destination["bucketName"], pseudo), substitute(destination["objectKey"], pseudo)
            with contextlib.suppress(s3.exceptions.BucketAlreadyOwnedByYou):
                s3.create_bucket(Bucket=bucket)
            s3.put_object(Bucket=bucket, Key=key, Body=body)
            if source.name == f"{stack_name}.template.json":
                template_url = f"https://s3.{region}.amazonaws.com/{bucket}/{key}"
    return template_url


def without_bootstrap_checks(template: dict[str, Any]) -> dict[str, Any]:
    """``template`` without what the CDK adds for a bootstrapped account: the bootstrap-version rule and
    its parameter, and the analytics resource with its condition."""
    template = json.loads(json.dumps(template))
    template.pop("Rules", None)
    template.get("Parameters", {}).pop("BootstrapVersion", None)
    if not template.get("Parameters"):
        template.pop("Parameters", None)
    template["Resources"].pop("CDKMetadata", None)
    template.get("Conditions", {}).pop("CDKMetadataAvailable", None)
    if not template.get("Conditions"):
        template.pop("Conditions", None)
    return template


def zip_directory(directory: Path) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(directory.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(directory).as_posix())
    return buffer.getvalue()


def substitute(text: str, substitutions: Mapping[str, str]) -> str:
    """``text`` with its ``${name}`` placeholders replaced as the resource handler of
    AWS::StepFunctions::StateMachine replaces them (``StringUtils.replaceEachRepeatedly``, in
    aws-cloudformation-resource-providers-stepfunctions): every name at once, again on the result until
    nothing changes; a placeholder no entry names stays as it is (``unfilled`` names them). The one
    implementation: a document's ``definition_substitutions`` (``asl``), the check of a shared definition
    (``definition``) and the emulators' deploys all replace placeholders with it."""
    if not substitutions:
        return text
    pattern = re.compile("|".join(re.escape("${" + name + "}") for name in substitutions))
    for _ in range(len(substitutions) + 1):
        replaced = pattern.sub(lambda match: str(substitutions[match.group(0)[2:-1]]), text)
        if replaced == text:
            return text
        text = replaced
    raise ValueError("DefinitionSubstitutions refer to each other endlessly")


def unfilled(text: str, substitutions: Mapping[str, str]) -> list[str]:
    """The names of the placeholders of ``text`` that ``substitutions`` gives no value, in the order
    they first appear (a CDK token is a value, not a placeholder)."""
    return list(
        dict.fromkeys(
            match.group(1)
            for match in PLACEHOLDER.finditer(text)
            if match.group(1) not in substitutions and not TOKEN.fullmatch(match.group(0))
        )
    )


class DefinitionNotHere(LookupError):
    """A definition in S3 (``DefinitionS3Location``) whose asset is not in the directory given."""


def state_machine_definitions(template: dict[str, Any], assets: Path | None = None) -> dict[str, dict[str, Any]]:
    """Each state machine's definition in a synthesized template, by logical id, as JSON.

    The CDK emits definitions as ``Fn::Join`` with references to other resources; each reference is
    replaced by a stable placeholder (``${LogicalId.Attribute}``, and an ARN-shaped one for
    ``Fn::GetAtt ... Arn``) so that the result can be validated and snapshot-tested. A definition
    shared through the template's Mappings (``Fn::FindInMap``) is looked up, one in S3 read from the
    directory ``assets`` (a cloud assembly, where the CDK leaves it as ``asset.{key}``, or the template's, for a
    path as ``aws cloudformation package`` reads it; ``DefinitionNotHere`` if it is not there), and its ``DefinitionSubstitutions`` are made as CloudFormation makes them.
    """

    pseudo = {"AWS::Partition": "aws", "AWS::Region": REGION, "AWS::AccountId": ACCOUNT, "AWS::URLSuffix": "amazonaws.com"}
    arn_shapes = {"AWS::Lambda::Function": ("lambda", "function:"), "AWS::DynamoDB::Table": ("dynamodb", "table/")}

    def render(part: Any) -> str:
        if isinstance(part, str):
            return part
        if "Ref" in part:
            return pseudo.get(part["Ref"], "${{{}}}".format(part["Ref"]))
        if "Fn::GetAtt" in part:
            logical_id, attribute = part["Fn::GetAtt"]
            kind = template["Resources"].get(logical_id, {}).get("Type", "")
            if attribute == "Arn" and kind in arn_shapes:
                service, resource = arn_shapes[kind]
                return f"arn:aws:{service}:{REGION}:{ACCOUNT}:{resource}{logical_id}"
            return f"${{{logical_id}.{attribute}}}"
        if "Fn::Join" in part:
            separator, parts = part["Fn::Join"]
            return str(separator).join(render(item) for item in parts)
        if "Fn::FindInMap" in part:
            mapping, first, second = (render(item) for item in part["Fn::FindInMap"])
            return str(template["Mappings"][mapping][first][second])
        raise ValueError(f"cannot render {part!r} in a state machine definition")

    definitions = {}
    for logical_id, resource in template.get("Resources", {}).items():
        if resource["Type"] != "AWS::StepFunctions::StateMachine":
            continue
        properties = resource["Properties"]
        substitutions = {name: render(value) for name, value in properties.get("DefinitionSubstitutions", {}).items()}
        location = properties.get("DefinitionS3Location")
        if location is None or "DefinitionString" in properties:
            text = render(properties.get("DefinitionString"))
        else:
            # The CDK's asset (its key), or a path relative to the template as `aws cloudformation package` reads it.
            key = location if isinstance(location, str) else f"asset.{location.get('Key')}"
            asset = assets / key if assets is not None else None
            if asset is None or not asset.is_file():
                raise DefinitionNotHere(
                    f"the definition of {logical_id} is in S3 ({json.dumps(location)}), not in the template: give the "
                    "cloud assembly directory it was synthesized into"
                )
            text = asset.read_text(encoding="utf-8")
        definitions[logical_id] = json.loads(substitute(text, substitutions))
    return definitions
