"""Gap: moto's CloudFormation cannot complete a custom resource here, and says nothing when one fails.

moto 5.2.5 (``cloudformation/custom_model.py``) creates a ``Custom::*`` resource by invoking its ``ServiceToken``
function on a thread of its own; the stack completes when the function's response reaches moto's server. An
``AWS::CloudFormation::CustomResource``, the type of the CDK's ``CustomResource`` unless given a ``resource_type``
("you can specify AWS::CloudFormation::CustomResource (the default) as the resource type, or you can specify your
own resource type name", CustomResourceProps), moto skips: the stack completes without calling its handler. Three
things keep the rest from working in the harness:

- ``ResourceProperties`` keep their JSON types (``true``, ``5``), where CloudFormation hands a custom resource every
  property value as a string: "Because CloudFormation converts every input as string for custom resources, we will
  use these encoded values to cast them into proper types" (aws-cdk, ``aws-eks/lib/cluster-resource.ts``,
  ``encodeValues``); "custom resource properties are always stringified by CloudFormation" (aws-cdk pull request
  4000, the custom-resources README); observed in aws-cloudformation/cloudformation-coverage-roadmap issue 1037. The
  User Guide says only that they "are sent, verbatim, to the custom resource provider in the request's
  ResourceProperties field" (Custom resource request objects). The CDK's own handlers count on strings: the bucket
  notifications handler (``s3.Bucket(event_bridge_enabled=True)``, ``add_event_notification``) calls
  ``props.get('Managed', 'true').lower()``, which fails on a boolean.
- ``ResponseURL`` is moto's server (``http://host.docker.internal:5000/...``, or the container's address inside
  Docker), where nothing listens in the in-process mode the harness runs moto in: the response is lost and the
  stack stays ``CREATE_IN_PROGRESS``. On AWS the URL is "a presigned S3 bucket that receives responses from the
  custom resource provider" (Custom resource request objects), and a provider that does not answer ``SUCCESS`` or
  ``FAILED`` before the timeout fails the stack operation (Custom resource request types).
- Nothing says which resource failed, nor why: moto records events of the stack alone.

Here a custom resource of either type is created in the deploy's own thread, before the resources that refer to it.
Its properties are sent as CloudFormation sends them (every scalar a string, ``true``/``false`` in lower case; lists
and objects keep their shape; ``ServiceToken`` as is), with a ``ResponseURL`` on a listener the harness runs on
127.0.0.1 (an ephemeral port, opened on first use, closed when the emulator exits; a proxy in ``HTTP_PROXY`` must
leave it out, ``NO_PROXY=127.0.0.1``). A ``SUCCESS`` response sets the resource's ``PhysicalResourceId`` (its
``Ref``) and its ``Data``, which "You can access ... by name in the template with Fn::GetAtt" (Custom resource
response objects). A ``FAILED`` response fails the stack with the reason AWS gives it in its events, "Received
response status [FAILED] from custom resource. Message returned: " and its ``Reason``; so does a handler that
raises, or returns without answering (AWS would wait for ``ServiceTimeout``, "The default value is 3600 seconds (1
hour)", Custom resource request objects), one the harness cannot run (below), and a ``ServiceToken`` that is an
SNS topic or no function. The failed resource's event (its logical id, type, ``CREATE_FAILED`` and the reason) is
recorded and the stack ends ``CREATE_FAILED`` (``UPDATE_FAILED`` in an update), as on AWS with "Preserve
successfully provisioned resources": "you can troubleshoot resources in a CREATE_FAILED or UPDATE_FAILED status"
(Choose how to handle failures when provisioning resources); moto rolls nothing back. The deploy's error names the
resource and the reason.

What the harness runs, and what it refuses:

- Python handlers run in process, their boto3 calls on the emulator: the CDK's bucket notifications (EventBridge,
  an SQS queue, an SNS topic, a Lambda function), and a ``CustomResource`` whose ``ServiceToken`` is a Python
  function of your own that answers at ``ResponseURL`` (``cfnresponse``, ``urllib``).
- Node.js handlers run with ``node``, their AWS SDK calls on the emulator (``gaps.node_handlers``):
  ``AwsCustomResource`` (its SDK call made, ``get_response_field`` reading the response), log retention
  (``log_retention=``, ``logs.LogRetention``: the log group made and its retention set), ``auto_delete_objects=True``
  (its Create does nothing), the provider framework (``custom_resources.Provider``: its Node.js onEvent function
  invokes your Python ``on_event_handler`` through the emulator's Lambda and answers with what it returned), and
  handlers of your own on Node.js.
- Refused, the deploy failing with the resource named and why: a handler on another runtime or a container image, a
  Node.js one with no ``node`` on ``PATH``, and, of the provider framework, an ``on_event_handler`` that is not Python
  (the emulator's Lambda runs Python functions only, ``testing/lambdas.py``) and an ``is_complete_handler``: the
  framework's waiter state machine would poll it while the stack is created, where a state machine that
  CloudFormation creates runs only once the deploy is done (``gaps.state_machines``).

moto sends no ``Update`` and no ``Delete`` request (its custom resource has neither an update nor a delete), where
AWS sends both (Custom resource request types). Nor does the harness: an update that changes a custom resource's
properties fails, naming it (moto would drop the resource from the stack, its ``Fn::GetAtt`` then undefined), and
removing one or deleting its stack does not call its handler: ``auto_delete_objects`` empties no bucket, and log
retention's ``removal_policy`` deletes no log group.

Evidence: tests/emulator/gaps/test_custom_resources.py.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any, NoReturn
from urllib.parse import urlsplit

from . import node_handlers

if TYPE_CHECKING:
    from ..patches import Patch

GENERIC_TYPE = "AWS::CloudFormation::CustomResource"  # the other custom resources' types are Custom::<name>
# How long a handler that returned may still take to answer (one that answers from a thread of its own).
ANSWER_GRACE_SECONDS = 1.0


class CustomResourceFailed(Exception):
    """A custom resource not created: CloudFormation stops creating the stack's resources at it."""

    def __init__(self, logical_id: str, resource_type: str, reason: str) -> None:
        super().__init__(f"{logical_id} ({resource_type}): {reason}")
        self.logical_id, self.resource_type, self.reason = logical_id, resource_type, reason


class _Listener:
    """What serves the ResponseURLs: each response PUT to it, kept by the token in its path."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._answers: dict[str, tuple[threading.Event, list[bytes]]] = {}

    def url(self, token: str) -> str:
        with self._lock:
            if self._server is None:
                self._server = _Server(self)
                threading.Thread(target=self._server.serve_forever, name="custom-resource-responses", daemon=True).start()
            self._answers[token] = (threading.Event(), [])
            return f"http://127.0.0.1:{self._server.server_address[1]}/{token}"

    def receive(self, token: str, body: bytes) -> None:
        with self._lock:
            arrived, bodies = self._answers.get(token, (threading.Event(), []))
        bodies.append(body)
        arrived.set()

    def answer(self, token: str, wait: float) -> dict[str, Any] | None:
        """The response PUT for ``token`` (waiting up to ``wait`` seconds for it), or None."""
        with self._lock:
            arrived, bodies = self._answers[token]
        arrived.wait(wait)
        with self._lock:
            self._answers.pop(token, None)
        if not bodies:
            return None
        try:
            return dict(json.loads(bodies[0]))
        except ValueError:
            return {"Unreadable": f"its response at its ResponseURL is no JSON object: {bodies[0][:200]!r}"}

    def close(self) -> None:
        with self._lock:
            server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, listener: _Listener) -> None:
        super().__init__(("127.0.0.1", 0), _Answer)  # an ephemeral port
        self.listener = listener


class _Answer(BaseHTTPRequestHandler):
    def do_PUT(self) -> None:
        body = node_handlers.request_body(self)  # by its Content-Length, or chunked (a Node.js handler's without one)
        assert isinstance(self.server, _Server)
        self.server.listener.receive(self.path.strip("/"), body)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        """Nothing on the terminal."""


LISTENER = _Listener()


def close() -> None:
    """Close the listener and the Node.js handlers' endpoint (LocalEmulator's exit); the next custom resource opens
    them again."""
    LISTENER.close()
    node_handlers.close()


def as_sent(value: Any) -> Any:
    """A property's value as CloudFormation sends it to a custom resource: each scalar a string, the shape kept."""
    if isinstance(value, dict):
        return {key: as_sent(item) for key, item in value.items()}
    if isinstance(value, list):
        return [as_sent(item) for item in value]
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return value


def why(stack_name: str, account: str, region: str) -> str:
    """Why a stack did not complete: each resource that failed (logical id, type, status, reason), else each custom
    resource still waiting for its handler's response; for the deploy's error."""
    from moto.cloudformation.models import cloudformation_backends

    stack = cloudformation_backends[account][region].get_stack(stack_name)
    failed = [
        f"{event.logical_resource_id} ({event.resource_type}) {event.resource_status}: {event.resource_status_reason}"
        for event in stack.events
        if event.resource_status.endswith("_FAILED") and event.resource_type != "AWS::CloudFormation::Stack"
    ]
    waiting = [
        f"{resource.logical_id} ({getattr(resource, 'cf_resource_type', 'a custom resource')}) has had no response "
        "from its handler at its ResponseURL"
        for resource in stack.custom_resources.values()
        if not resource.is_created()
    ]
    return "; ".join(failed or waiting) or "no resource event says why"


def _function(backend: Any, token: str, refuse: Callable[[str], NoReturn]) -> Any:
    """The Lambda function a ServiceToken names, if the harness can run it."""
    if token.startswith("arn:") and token.split(":")[2] == "sns":
        refuse(f"its ServiceToken {token} is an SNS topic: the harness runs custom resources backed by a Lambda function only")
    try:
        function = backend.get_function(token)
    except Exception:  # moto's UnknownFunctionException, or a token that is no ARN
        refuse(f"its ServiceToken {token} names no Lambda function of the emulator")
    runtime = str(function.run_time or "")
    if runtime.startswith("nodejs"):
        reason = node_handlers.refusal(backend, function)
        if reason:
            refuse(reason)
    elif not runtime.startswith("python"):
        refuse(
            f"its handler, the function {function.function_name}, runs on {runtime or 'a container image'}, which the harness "
            "does not run (it runs Python handlers in process, Node.js ones with node): deploy this stack to AWS to test it"
        )
    return function


def _invoke(function: Any, event: dict[str, Any], response_port: int) -> tuple[Any, bool]:
    """Run ``function``'s handler on ``event``: what it returned or raised (as Lambda reports an error), and whether it
    raised. A Python one runs in process (``testing/lambdas.py``), a Node.js one with node (``node_handlers``)."""
    if str(function.run_time).startswith("nodejs"):
        return node_handlers.invoke(function, event, response_port)
    headers: dict[str, str] = {}
    result = function.invoke(json.dumps(event), {}, headers)
    raised = "x-amz-function-error" in headers
    return json.loads(result) if raised else result, raised


def _failed(stack: Any, failed: CustomResourceFailed, operation: str) -> Any:
    """``stack`` stopped at ``failed``: its event, and the stack's, as CloudFormation records them."""
    from moto.cloudformation.models import Event

    stack.events.append(
        Event(
            stack_id=stack.stack_id,
            stack_name=stack.name,
            logical_resource_id=failed.logical_id,
            physical_resource_id="",
            resource_type=failed.resource_type,
            resource_status=f"{operation}_FAILED",
            resource_status_reason=failed.reason,
            resource_properties=None,
        )
    )
    stack._add_stack_event(
        f"{operation}_FAILED", f"The following resource(s) failed to {operation.lower()}: [{failed.logical_id}]."
    )
    stack.status = f"{operation}_FAILED"
    return stack


def install(patch: Patch) -> None:
    from moto.awslambda.utils import get_backend
    from moto.cloudformation import models, parsing
    from moto.cloudformation.custom_model import CustomModel

    def create(
        cls: Any, /, resource_name: str, cloudformation_json: dict[str, Any], account_id: str, region_name: str, **kwargs: Any
    ) -> Any:
        logical_id, resource_type, stack_id = kwargs["LogicalId"], kwargs["ResourceType"], kwargs["StackId"]

        def refuse(reason: str) -> NoReturn:
            raise CustomResourceFailed(logical_id, resource_type, reason)

        properties = cloudformation_json["Properties"]
        resource = CustomModel(region_name, str(uuid.uuid4()), logical_id, resource_name)
        resource.cf_resource_type = resource_type  # moto sets it once created; why() reads it before
        models.cloudformation_backends[account_id][region_name].get_stack(stack_id).add_custom_resource(resource)
        function = _function(get_backend(account_id, region_name), str(properties["ServiceToken"]), refuse)
        token = uuid.uuid4().hex
        response_url = LISTENER.url(token)
        event = {
            "RequestType": "Create",
            "ServiceToken": properties["ServiceToken"],
            "ResponseURL": response_url,
            "StackId": stack_id,
            "RequestId": resource.request_id,
            "LogicalResourceId": logical_id,
            "ResourceType": resource_type,
            "ResourceProperties": as_sent(properties),  # ServiceToken, a string, as it is
        }
        returned, raised = _invoke(function, event, int(urlsplit(response_url).port or 0))
        answer = LISTENER.answer(token, 0.0 if raised else ANSWER_GRACE_SECONDS)
        if answer is None and raised:
            refuse(
                f"its handler raised {returned.get('errorType')}: {returned.get('errorMessage')}, and sent no response to its "
                "ResponseURL (AWS would wait for ServiceTimeout, an hour by default, then fail the resource)"
            )
        if answer is None:
            refuse(
                "its handler returned without sending a response to its ResponseURL (a ServiceToken's function must PUT "
                "SUCCESS or FAILED there; returning data is the provider framework's way): AWS would wait for ServiceTimeout"
            )
        if "Unreadable" in answer:
            refuse(answer["Unreadable"])
        if answer.get("Status") != "SUCCESS":
            refuse(
                f"Received response status [{answer.get('Status')}] from custom resource. Message returned: {answer.get('Reason', '')}"
            )
        resource.resource_name = str(answer.get("PhysicalResourceId") or resource_name)
        resource.set_data(dict(answer.get("Data") or {}))
        return resource

    def update(cls: Any, /, original_resource: Any, new_resource_name: str, cloudformation_json: dict[str, Any], **_: Any) -> Any:
        raise CustomResourceFailed(
            original_resource.logical_id,
            str(getattr(original_resource, "cf_resource_type", "a custom resource")),
            "its properties changed, and the harness sends custom resources no Update request (nor does moto): "
            "deploy a new stack to test the new properties",
        )

    class_of = parsing.resource_class_from_type
    patch(parsing, "resource_class_from_type", lambda kind: CustomModel if kind == GENERIC_TYPE else class_of(kind))
    patch(CustomModel, "create_from_cloudformation_json", classmethod(create))
    patch(CustomModel, "update_from_cloudformation_json", classmethod(update))
    create_stack, update_stack = models.CloudFormationBackend.create_stack, models.CloudFormationBackend.update_stack

    def create_or_fail(backend: Any, name: str, *args: Any, **kwargs: Any) -> Any:
        try:
            return create_stack(backend, name, *args, **kwargs)
        except CustomResourceFailed as failed:
            return _failed(backend.get_stack(name), failed, "CREATE")

    def update_or_fail(backend: Any, name: str, *args: Any, **kwargs: Any) -> Any:
        try:
            return update_stack(backend, name, *args, **kwargs)
        except CustomResourceFailed as failed:
            return _failed(backend.get_stack(name), failed, "UPDATE")

    patch(models.CloudFormationBackend, "create_stack", create_or_fail)
    patch(models.CloudFormationBackend, "update_stack", update_or_fail)
