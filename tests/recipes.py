"""A recipe per AWS event source (docs/guides/event-sources.md): its key and payload, its events as AWS delivers
them (idempotent_constructs.testing.sources), and the workflows that prove each (SourcesStack).

Each workflow's body counts its side effect natively (an UpdateItem on "SideEffects" under
"{recipe}#{orderId}") and outputs ``{"charged": orderId}``, so that a test tells a run from a replay.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aws_cdk import App, RemovalPolicy, Stack
from aws_cdk import aws_stepfunctions as sfn

from idempotent_constructs import (
    IdempotencyKey,
    IdempotencyPayload,
    IdempotencyTable,
    IdempotentBatch,
    IdempotentStateMachine,
)
from idempotent_constructs.testing import sources
from tests.samples import docs_sample
from tests.stacks import FAST, side_effects_table


def _order(order_id: str, amount: float = 42) -> str:
    return json.dumps({"orderId": order_id, "amount": amount})


def _with(event: Any, path: list[str | int], value: Any) -> Any:
    """``event`` with the value at ``path`` replaced: another request under the same key."""
    changed = copy.deepcopy(event)
    target = changed
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return changed


@dataclass(frozen=True)
class Recipe:
    """``key`` and ``payload`` for one source; ``order``, the JSONata that reads the order id from the
    input; ``deliver(order_id)``, its first delivery; ``other(event)``, another request under the same key
    (the same message id or business key, another content); ``business``, whether the key holds across a
    producer's duplicate (``Delivery.duplicated``) too, not only a redelivery."""

    key: IdempotencyKey
    payload: IdempotencyPayload
    order: str
    deliver: Callable[[str], sources.Delivery]
    other: Callable[[Any], Any]
    business: bool = False


_SQS_BODY = "$parse($states.input[0].body)"
RECIPES: dict[str, Recipe] = {
    "SqsPipe": Recipe(
        IdempotencyKey.from_paths("$[0].messageId"),
        IdempotencyPayload.from_paths("$[0].body"),
        f"{_SQS_BODY}.orderId",
        lambda order: sources.sqs_via_pipe(_order(order)),
        lambda event: _with(event, [0, "body"], _order(json.loads(event[0]["body"])["orderId"], 7)),
    ),
    "SqsPipeBusiness": Recipe(
        IdempotencyKey.from_jsonata(f"{_SQS_BODY}.orderId"),
        IdempotencyPayload.from_jsonata(_SQS_BODY),
        f"{_SQS_BODY}.orderId",
        lambda order: sources.sqs_via_pipe(_order(order)),
        lambda event: sources.sqs_via_pipe(_order(json.loads(event[0]["body"])["orderId"], 7)).event,
        business=True,
    ),
    "SqsStarter": Recipe(
        IdempotencyKey.from_paths("$.messageId"),
        IdempotencyPayload.from_paths("$.body"),
        "$parse($states.input.body).orderId",
        lambda order: sources.sqs_via_starter(_order(order)),
        lambda event: _with(event, ["body"], _order(json.loads(event["body"])["orderId"], 7)),
    ),
    "SnsSqs": Recipe(
        IdempotencyKey.from_jsonata(f"$parse({_SQS_BODY}.Message).orderId"),
        IdempotencyPayload.from_jsonata(f"{_SQS_BODY}.Message"),
        f"$parse({_SQS_BODY}.Message).orderId",
        lambda order: sources.sns_to_sqs(_order(order)),
        lambda event: sources.sns_to_sqs(_order(json.loads(json.loads(event[0]["body"])["Message"])["orderId"], 7)).event,
        business=True,
    ),
    "EventBridgeRule": Recipe(
        IdempotencyKey.from_paths("$.detail.orderId"),
        IdempotencyPayload.from_paths("$.detail"),
        "$states.input.detail.orderId",
        lambda order: sources.eventbridge_rule(json.loads(_order(order)), detail_type="OrderPlaced", source="shop.orders"),
        lambda event: _with(event, ["detail", "amount"], 7),
        business=True,
    ),
    "S3EventBridge": Recipe(
        IdempotencyKey.from_paths("$.detail.bucket.name", "$.detail.object.key", "$.detail.object.etag"),
        IdempotencyPayload.from_paths("$.detail.object.size"),
        "$states.input.detail.object.key",
        lambda order: sources.s3_via_eventbridge("uploads", order),
        lambda event: _with(event, ["detail", "object", "size"], 7),
        business=True,
    ),
    "ApiRest": Recipe(
        IdempotencyKey.from_paths("$.headers['Idempotency-Key']"),
        IdempotencyPayload.from_paths("$.body"),
        "$parse($states.input.body).orderId",
        lambda order: sources.api_gateway_rest(_order(order), {"Idempotency-Key": f"k-{order}"}),
        lambda event: _with(event, ["body"], _order(json.loads(event["body"])["orderId"], 7)),
    ),
    "ApiHttp": Recipe(
        IdempotencyKey.from_paths("$.headers['idempotency-key']"),
        IdempotencyPayload.from_paths("$.body"),
        "$parse($states.input.body).orderId",
        lambda order: sources.api_gateway_http(_order(order), {"Idempotency-Key": f"k-{order}"}),
        lambda event: _with(event, ["body"], _order(json.loads(event["body"])["orderId"], 7)),
    ),
    "ApiStartExecution": Recipe(
        IdempotencyKey.from_paths("$.orderId"),
        IdempotencyPayload.whole_input(),
        "$states.input.orderId",
        lambda order: sources.api_gateway_start_execution(_order(order)),
        lambda event: {**event, "amount": 7},
    ),
    "DynamoDbStream": Recipe(
        IdempotencyKey.from_paths("$[0].eventID"),
        IdempotencyPayload.from_paths("$[0].dynamodb.NewImage"),
        "$states.input[0].dynamodb.Keys.pk.S",
        lambda order: sources.dynamodb_stream_via_pipe(
            {"pk": order, "status": "PAID"}, {"pk": order, "status": "NEW"}, keys={"pk": order}
        ),
        lambda event: _with(event, [0, "dynamodb", "NewImage", "status"], {"S": "SHIPPED"}),
    ),
    "Kinesis": Recipe(
        IdempotencyKey.from_paths("$[0].eventID"),
        IdempotencyPayload.from_paths("$[0].data"),
        "$parse($base64decode($states.input[0].data)).orderId",
        lambda order: sources.kinesis_via_pipe(_order(order), order),
        lambda event: _with(event, [0, "data"], sources.kinesis_via_pipe(_order("other"), "other").event[0]["data"]),
    ),
    # A Powertools user's expressions, unchanged: JMESPath, computed by the key function.
    "SqsPipePowertools": Recipe(
        IdempotencyKey.from_jmespath("[0].powertools_json(body).orderId"),
        IdempotencyPayload.from_jmespath("[0].powertools_json(body)"),
        f"{_SQS_BODY}.orderId",
        lambda order: sources.sqs_via_pipe(_order(order)),
        lambda event: sources.sqs_via_pipe(_order(json.loads(event[0]["body"])["orderId"], 7)).event,
        business=True,
    ),
}


def charge(scope: Stack, name: str, order: str, counter_table: str) -> sfn.CustomState:
    """The body's side effect, counted natively under "{name}#{orderId}"."""
    return sfn.CustomState(
        scope,
        f"{name}Charge",
        state_json={
            "Type": "Task",
            "QueryLanguage": "JSONata",
            "Resource": "arn:aws:states:::dynamodb:updateItem",
            "Arguments": {
                "TableName": counter_table,
                "Key": {"id": {"S": "{% '" + name + "#' & " + order + " %}"}},
                "UpdateExpression": "ADD runs :one",
                "ExpressionAttributeValues": {":one": {"N": "1"}},
            },
            "Output": "{% {'charged': " + order + "} %}",
        },
    )


class SourcesStack(Stack):
    """A workflow per recipe, named after it, ``NoPayload`` (keyed by the SQS message id, comparing no
    payload), ``ParsedBody`` (keyed by it, comparing the parsed body), and ``Batch``: a pipe's batch of SQS records, an
    ``IdempotentBatch`` (the event sources guide's sample, ``max_concurrency`` 4); a record whose order the
    counters table holds as ``Blocked#{orderId}`` fails. ``BatchCauses``: an ``IdempotentBatch`` whose body
    fails each record as "Refused" with a cause of ``causeLength`` times ``causeCharacter`` (read from the
    record's body), so that a batch's answer can be long (``max_concurrency`` 10)."""

    def __init__(self, scope: App, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        table = IdempotencyTable(self, "Idempotency", removal_policy=RemovalPolicy.DESTROY)
        counters = side_effects_table(self)
        by_message = IdempotencyKey.from_paths("$[0].messageId")
        workflows = {name: (recipe.key, recipe.payload, recipe.order) for name, recipe in RECIPES.items()}
        # No payload compared: any message under a key gets the first one's result.
        workflows["NoPayload"] = (by_message, IdempotencyPayload.none(), f"{_SQS_BODY}.orderId")
        # The message id as key and the parsed body as payload: only the payload's JSONata may raise.
        workflows["ParsedBody"] = (by_message, IdempotencyPayload.from_jsonata(_SQS_BODY), f"{_SQS_BODY}.orderId")
        for name, (key, payload, order) in workflows.items():
            workflow = IdempotentStateMachine(
                self,
                name,
                table=table,
                definition=charge(self, name, order, counters.table_name),
                key=key,
                payload=payload,
                **FAST,
            )
            counters.grant_write_data(workflow.state_machine)
        # Each record's order is blocked while the counters table holds "Blocked#{orderId}": a failure a
        # redelivery no longer meets once the test removes it.
        record_body = "$parse($states.input.body)"
        blocked = sfn.CustomState(
            self,
            "BatchBlocked",
            state_json={
                "Type": "Task",
                "QueryLanguage": "JSONata",
                "Resource": "arn:aws:states:::dynamodb:getItem",
                "Arguments": {
                    "TableName": counters.table_name,
                    "Key": {"id": {"S": "{% 'Blocked#' & " + record_body + ".orderId %}"}},
                    "ConsistentRead": True,
                },
                "Output": "{% $exists($states.result.Item) ? {'blocked': true} : $states.input %}",
            },
        )
        work = blocked.next(
            sfn.Choice.jsonata(self, "BatchShouldFail")
            .when(sfn.Condition.jsonata("{% $states.input.blocked = true %}"), sfn.Fail(self, "BatchItemFailed", error="Blocked"))
            .otherwise(charge(self, "Batch", f"{record_body}.orderId", counters.table_name))
        )
        each = docs_sample("batch").batch(self, table, work, namespace="Sources/Batch", **FAST)  # the event sources guide's
        batch = sfn.StateMachine(self, "Batch", definition_body=sfn.DefinitionBody.from_chainable(each))
        counters.grant_read_write_data(batch)
        # Each record fails with a cause as long as its body asks: the answer's bound (issue 55).
        asked = "$parse($states.input.body)"
        refused = sfn.Fail.jsonata(
            self,
            "BatchCauseRefused",
            error="Refused",
            cause="{% $pad('', " + asked + ".causeLength, " + asked + ".causeCharacter) %}",
        )
        causes = IdempotentBatch(
            self, "LongCauses", table=table, body=refused, namespace="Sources/BatchCauses", max_concurrency=10, **FAST
        )
        sfn.StateMachine(self, "BatchCauses", definition_body=sfn.DefinitionBody.from_chainable(causes))
