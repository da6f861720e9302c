"""Gap: moto's CloudFormation creates a state machine from its ``DefinitionString`` alone, ignoring
its ``DefinitionSubstitutions``, so the state machine keeps the ``${name}`` placeholders.

AWS's resource handler for AWS::StepFunctions::StateMachine replaces each ``${name}`` of the definition
with its substitution's value before it creates or updates the state machine
(``DefinitionProcessor.transformDefinition`` in aws-cloudformation-resource-providers-stepfunctions:
``StringUtils.replaceEachRepeatedly``). Here the resolved properties get the same replacement
(``assembly.substitute``) on their way into moto. The default ``DefinitionLocation.TEMPLATE`` needs it:
each workflow's own parts and tokens are substitutions.

Evidence: tests/emulator/gaps/test_definition_substitutions.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..patches import Patch


def _substituted(cloudformation_json: Any) -> Any:
    from ..._readers.assembly import substitute

    properties = cloudformation_json.get("Properties", {})
    substitutions = properties.get("DefinitionSubstitutions")
    if not substitutions or not isinstance(properties.get("DefinitionString"), str):
        return cloudformation_json
    text = substitute(properties["DefinitionString"], {name: str(value) for name, value in substitutions.items()})
    return {**cloudformation_json, "Properties": {**properties, "DefinitionString": text}}


def install(patch: Patch) -> None:
    from moto.stepfunctions.models import StateMachine

    create = StateMachine.create_from_cloudformation_json
    update = StateMachine.update_from_cloudformation_json

    def create_from_cloudformation_json(cls: Any, resource_name: str, cloudformation_json: Any, *args: Any, **kwargs: Any) -> Any:
        return create.__func__(cls, resource_name, _substituted(cloudformation_json), *args, **kwargs)

    def update_from_cloudformation_json(
        cls: Any, original_resource: Any, new_resource_name: str, cloudformation_json: Any, *args: Any, **kwargs: Any
    ) -> Any:
        return update.__func__(cls, original_resource, new_resource_name, _substituted(cloudformation_json), *args, **kwargs)

    patch(StateMachine, "create_from_cloudformation_json", classmethod(create_from_cloudformation_json))
    patch(StateMachine, "update_from_cloudformation_json", classmethod(update_from_cloudformation_json))
