"""Section 7: duplicates as AWS's event sources deliver them (B20): cost follows what is hashed.

Three events of realistic size, built from AWS's documented samples (``idempotent_constructs.testing.sources``):
an SQS message of 64 KiB through a pipe, a DynamoDB stream record of 40 KB through a pipe, and a 20 KB
HTTP API request through a starter function. Each goes to two workflows: one with its recipe's key and
payload (docs/guides/event-sources.md), and one with the defaults (the whole input as key and payload). Each
runs the first delivery and then a redelivery as AWS makes it: the wrapper's states and Lambda calls,
and whether the redelivery replayed (the body did not run again). The recipe's ``Acquire`` is also
evaluated in jsonata-js 2.0.6 (peak depth, best time), as section 6 does.
"""

from __future__ import annotations

import json
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aws_cdk import App, Stack
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from idempotent_constructs import IdempotencyKey, IdempotencyPayload, IdempotencyTable, IdempotentStateMachine
from idempotent_constructs.testing import LocalEmulator, sources, state_machine_definitions

from . import bounds

BODY_STATE = "Work"


def _sqs(order: str, smoke: bool) -> sources.Delivery:
    return sources.sqs_via_pipe(json.dumps({"orderId": order, "note": "x" * ((8 if smoke else 64) * 1024 - 64)}))


def _stream(order: str, smoke: bool) -> sources.Delivery:
    image = {"pk": order, "sk": "ORDER", **{f"line{n}": {"sku": f"sku-{n}", "quantity": n, "note": "y" * 60} for n in range(290)}}
    if smoke:
        image = {key: value for key, value in list(image.items())[:40]}
    return sources.dynamodb_stream_via_pipe(image, keys={"pk": order, "sk": "ORDER"})


def _api(order: str, smoke: bool) -> sources.Delivery:
    body = json.dumps({"orderId": order, "items": [{"sku": f"sku-{n}", "note": "z" * 40} for n in range(40 if smoke else 280)]})
    return sources.api_gateway_http(body, {"Idempotency-Key": f"k-{order}", "Content-Type": "application/json"})


# name: (what it is, its recipe's key and payload, its first delivery)
SHAPES: dict[str, tuple[str, IdempotencyKey, IdempotencyPayload, Callable[[str, bool], sources.Delivery]]] = {
    "SqsPipe": (
        "SQS through a pipe, a 64 KiB body, keyed by messageId",
        IdempotencyKey.from_paths("$[0].messageId"),
        IdempotencyPayload.from_paths("$[0].body"),
        _sqs,
    ),
    "DynamoDbStream": (
        "DynamoDB stream through a pipe, a 40 KB record, keyed by its keys",
        IdempotencyKey.from_paths("$[0].dynamodb.Keys.pk.S", "$[0].dynamodb.Keys.sk.S"),
        IdempotencyPayload.from_paths("$[0].dynamodb.NewImage"),
        _stream,
    ),
    "ApiHttp": (
        "HTTP API through a starter, a 20 KB event, keyed by its Idempotency-Key header",
        IdempotencyKey.from_paths("$.headers['idempotency-key']"),
        IdempotencyPayload.from_paths("$.body"),
        _api,
    ),
}
VARIANTS = ("recipe", "defaults")


class SourcesStack(Stack):
    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        table = IdempotencyTable(self, "Table")
        for name, (_, key, payload, _) in SHAPES.items():
            for variant in VARIANTS:
                options = {"key": key, "payload": payload} if variant == "recipe" else {}
                machine = f"{name}{variant.title()}"
                body = sfn.Pass(self, f"{machine}Work", state_name=BODY_STATE, result=sfn.Result.from_object(bounds.DONE))
                IdempotentStateMachine(self, machine, table=table, definition=body, **options)


def _run(execution: Any) -> dict[str, Any]:
    entered = execution.entered_states()
    return {
        "status": execution.status,
        "error": execution.error,
        "states_entered": len([state for state in entered if state != BODY_STATE]),
        "lambda_invocations": execution.lambda_invocations(),
        "body_ran": BODY_STATE in entered,
    }


def run(smoke: bool, log=print) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-sources-") as outdir:
        app = App(outdir=outdir)
        SourcesStack(app, "Sources")
        assembly = Path(app.synth().directory)
        definitions = state_machine_definitions(json.loads((assembly / "Sources.template.json").read_text()))
        deliveries = {name: shape(f"o-{uuid.uuid4().hex[:12]}", smoke) for name, (_, _, _, shape) in SHAPES.items()}
        log(f"  jsonata-js: {len(SHAPES)} recipes' Acquire ...")
        jobs = []
        for name, delivery in deliveries.items():
            definition = next(d for logical, d in definitions.items() if logical.startswith(f"{name}Recipe"))
            requests, variable = bounds._states(definition)
            states = {"input": delivery.event, "context": {"Execution": {"Id": "arn:aws:states:::execution:m:e"}}}
            jobs.append({"expression": requests["acquire"], "bindings": {"states": states, variable: {}}})
        measured = dict(zip(deliveries, bounds.in_jsonata_js(jobs, repeat=1 if smoke else 3), strict=True))
        log("  emulator: a first delivery and a redelivery of each, recipe and defaults ...")
        rows = []
        with LocalEmulator() as emulator:
            deployment = emulator.deploy(assembly, "Sources")
            for name, (what, _, _, shape) in SHAPES.items():
                row: dict[str, Any] = {"source": name, "what": what, "acquire": measured[name]}
                for variant in VARIANTS:
                    delivery = shape(f"o-{uuid.uuid4().hex[:12]}", smoke)
                    row["bytes"] = len(json.dumps(delivery.event, separators=(",", ":")).encode())
                    machine = f"{name}{variant.title()}"
                    first = deployment.run(machine, delivery.event, name=f"first-{uuid.uuid4().hex[:12]}")
                    again = deployment.run(machine, delivery.redelivered().event, name=f"again-{uuid.uuid4().hex[:12]}")
                    row[variant] = {"first_run": _run(first), "redelivery": _run(again)}
                rows.append(row)
    return {"rows": rows}
