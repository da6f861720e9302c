"""Gap: moto's CloudFormation creates a state machine from its ``DefinitionString`` alone. It ignores
its ``DefinitionSubstitutions``, so the state machine keeps the ``${name}`` placeholders, and its
``DefinitionS3Location``, so a definition stored in S3 becomes an empty one (which moto's interpreter
refuses).

AWS's resource handler for AWS::StepFunctions::StateMachine reads the object ``DefinitionS3Location``
names (``Bucket``, ``Key``, ``Version``) when there is no ``DefinitionString``, then replaces each
``${name}`` of the definition with its substitution's value before it creates or updates the state
machine (``DefinitionProcessor.transformDefinition`` in aws-cloudformation-resource-providers-stepfunctions:
``StringUtils.replaceEachRepeatedly``). Here the resolved properties get the same reading (from moto's
S3) and replacement (``assembly.substitute``) on their way into moto. The default
``DefinitionLocation.TEMPLATE`` needs the substitutions: each workflow's own parts and tokens are
substitutions; ``DefinitionLocation.ASSET`` and the templates ``idempotent-constructs wrap`` writes need
both.

Evidence: tests/emulator/gaps/test_definition_substitutions.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..patches import Patch


def _substituted(cloudformation_json: Any, account_id: str) -> Any:
    from moto.s3.models import s3_backends

    from ..._readers.assembly import substitute

    properties = cloudformation_json.get("Properties", {})
    location = properties.get("DefinitionS3Location")
    if "DefinitionString" not in properties and isinstance(location, dict):
        bucket, key = location["Bucket"], location["Key"]
        stored = s3_backends[account_id]["aws"].get_object(bucket, key, version_id=location.get("Version"))
        if stored is None:  # AWS fails the resource: the object must exist
            raise ValueError(f"DefinitionS3Location: no object s3://{bucket}/{key}")
        properties = {name: value for name, value in properties.items() if name != "DefinitionS3Location"}
        properties["DefinitionString"] = stored.value.decode("utf-8")
    substitutions = properties.get("DefinitionSubstitutions")
    if substitutions and isinstance(properties.get("DefinitionString"), str):
        text = substitute(properties["DefinitionString"], {name: str(value) for name, value in substitutions.items()})
        properties = {**properties, "DefinitionString": text}
    return {**cloudformation_json, "Properties": properties}


def install(patch: Patch) -> None:
    from moto.stepfunctions.models import StateMachine

    create = StateMachine.create_from_cloudformation_json
    update = StateMachine.update_from_cloudformation_json

    def create_from_cloudformation_json(
        cls: Any, resource_name: str, cloudformation_json: Any, account_id: str, *args: Any, **kwargs: Any
    ) -> Any:
        read = _substituted(cloudformation_json, account_id)
        return create.__func__(cls, resource_name, read, account_id, *args, **kwargs)

    def update_from_cloudformation_json(
        cls: Any,
        original_resource: Any,
        new_resource_name: str,
        cloudformation_json: Any,
        account_id: str,
        *args: Any,
        **kwargs: Any,
    ) -> Any:
        read = _substituted(cloudformation_json, account_id)
        return update.__func__(cls, original_resource, new_resource_name, read, account_id, *args, **kwargs)

    patch(StateMachine, "create_from_cloudformation_json", classmethod(create_from_cloudformation_json))
    patch(StateMachine, "update_from_cloudformation_json", classmethod(update_from_cloudformation_json))
