"""Gap: moto's CloudFormation updates a stack in an order of its own, and deletes what it should not.

moto 5.2.5 (``ResourceMap.update``) first deletes every resource the new template leaves out, whatever
its ``DeletionPolicy`` (though no ``AWS::Lambda::Version``, whose class has no delete), then creates the
new resources, then updates the changed ones. So a function's new ``current_version`` is published before
the function's new configuration is applied, with the number of the version just deleted.

AWS updates the stack's resources first, each after those it depends on, and only then removes the old
ones: "UPDATE_COMPLETE_CLEANUP_IN_PROGRESS: Ongoing removal of old resources for one or more stacks after
a successful stack update" (CloudFormation User Guide, stack status codes). A removed resource is kept
if its ``DeletionPolicy`` says so: "This capability also applies to stack update operations that lead to
resources being deleted from stacks. For example, if you remove the resource from the stack template,
and then update the stack with the template." (DeletionPolicy attribute); a function version without it
is deleted (DeleteFunction with its qualifier). The CDK's ``current_version`` is such a resource: a new
function configuration is a new ``AWS::Lambda::Version`` of another logical id, and the old one leaves
the template, so whether an execution that started before a deploy can still call the version its
definition names depends on it.

Here an update changes the changed resources, functions first (a reference to a new resource creates it,
as moto resolves references: a function's new version is published once the function is changed), then
creates the rest of the new ones, and last removes the old ones: a removed resource whose policy is
``Retain`` (or ``RetainExceptOnCreate``) is kept, and a removed version without it is deleted. A version
deleted here is never numbered again (moto numbers a new one after those it holds; AWS after every one
published).

Evidence: tests/emulator/gaps/test_stack_updates.py.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..patches import Patch

KEPT = ("Retain", "RetainExceptOnCreate")


def _in_passes(names: list[str], act: Callable[[str], None], attempts: int) -> None:
    """``act`` on each name, again in another pass on those that raised (one that another must precede),
    as moto's own update does; the last error raised if some never succeed."""
    left, error = list(names), None
    for _ in range(attempts):
        for name in list(left):
            try:
                act(name)
            except Exception as raised:  # a dependency not yet met: tried again in the next pass
                error = raised
            else:
                left.remove(name)
        if not left:
            return
    assert error is not None
    raise error


def install(patch: Patch) -> None:
    from moto.awslambda.models import LambdaStorage, lambda_backends
    from moto.cloudformation import parsing

    def update(self: Any, template: dict[str, Any], parameters: dict[str, Any] | None = None) -> None:
        actions = self.build_resource_diff(template, parameters)
        removed = {name: self._resource_json_map[name] for name in actions["Remove"]}
        self._template = template
        if parameters:
            self.input_parameters = parameters
        self.load_mapping()
        self.load_parameters()
        self.load_conditions()
        self._resource_json_map = template["Resources"]

        def modify(name: str) -> None:
            self._parsed_resources[name] = parsing.parse_and_update_resource(
                name, self._resource_json_map[name], self, account_id=self._account_id, region_name=self._region_name
            )

        def remove(name: str) -> None:
            resource, resource_json = self._parsed_resources.get(name), removed[name]
            arn = str(getattr(resource, "physical_resource_id", ""))  # a version's ARN (lambda_versions)
            if resource is not None and resource_json.get("DeletionPolicy") not in KEPT:
                if resource_json.get("Type") == "AWS::Lambda::Version" and ":function:" in arn:
                    *_, function, version = arn.split(":")
                    storage = lambda_backends[self._account_id][self._region_name]._lambdas
                    with contextlib.suppress(Exception):  # its function already deleted, with every version
                        storage.del_function(function, version)
                        gone = storage.__dict__.setdefault("_idempotent_deleted_versions", {})
                        gone[function] = gone.get(function, 0) + 1
                else:
                    self._delete_resource(resource, resource_json)  # raises: tried again in the next pass
            self._parsed_resources.pop(name, None)

        # A function's new configuration before anything that refers to its new version (which publishes it).
        changed = sorted(actions["Modify"], key=lambda name: self._resource_json_map[name].get("Type") != "AWS::Lambda::Function")
        _in_passes(changed, modify, parsing.MAX_UPDATE_ATTEMPTS)
        for name in actions["Add"]:
            _ = self[name]  # made as moto makes a resource: by reading it
        _in_passes(actions["Remove"], remove, parsing.MAX_UPDATE_ATTEMPTS)

    patch(parsing.ResourceMap, "update", update)
    publish = LambdaStorage.publish_version

    def publish_version(self: Any, name_or_arn: str, description: str = "") -> Any:
        """Numbers a new version after every version ever published, as AWS does: moto numbers it after the
        versions it holds, and would give a deleted version's number again."""
        name = name_or_arn.rpartition(":function:")[2].split(":")[0]  # a name, or an ARN's
        gone = self.__dict__.get("_idempotent_deleted_versions", {}).get(name, 0)
        versions = self._functions.get(name, {}).get("versions")
        if not gone or versions is None:
            return publish(self, name_or_arn, description)
        versions[:0] = [None] * gone  # counted by len(), never read: the last one is the latest published
        try:
            return publish(self, name_or_arn, description)
        finally:
            del versions[:gone]

    patch(LambdaStorage, "publish_version", publish_version)
