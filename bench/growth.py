"""Sections 3 and 4: how a stack grows with the number of idempotent workflows, and synth time.

Every app gets the repository's ``cdk.json`` context (its recommended feature flags), as ``cdk synth``
would give it. A "bare" workflow is an ``sfn.StateMachine`` with the same definition and defaults.
"""

from __future__ import annotations

import contextlib
import json
import math
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from aws_cdk import Acknowledgment, App, Stack, Validations
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct
from jsii._kernel.providers import process as jsii_process

from idempotent_constructs import DefinitionLocation, IdempotencyKey, IdempotencyTable, IdempotentStateMachine

ROOT = Path(__file__).resolve().parent.parent
STACK = "Growth"
# The findings of a template past CloudFormation's size: the library's synth check's (docs/reference/quotas.md), the CDK's.
TEMPLATE_SIZE = ("idempotent-constructs::template-size", "Annotation::@aws-cdk/core:Stack.templateSize")
ACCOUNT, REGION = "123456789012", "us-east-1"
# What the k-th workflow may add (a quality bar, bench/bars.py): its own state machine, role, policy and log group.
OWN_RESOURCES = ("AWS::StepFunctions::StateMachine", "AWS::IAM::Role", "AWS::IAM::Policy", "AWS::Logs::LogGroup")
# AWS limits that a stack of many workflows can reach.
LIMITS = {
    # https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/cloudformation-limits.html
    "resources_per_stack": 500,
    "template_bytes_from_s3": 1_000_000,  # the CDK warns above 1,000,000 bytes too
    "template_bytes_compact": 1_000_000,  # the same, written without indentation
    # https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_iam-quotas.html (whitespace not counted)
    "role_inline_policies_chars": 10_240,
    # EventBridge event pattern size: 2,048 characters by default, up to 4,096 on request
    # (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-quota.html)
    "event_pattern_chars": 2_048,
}


def app_context() -> dict[str, Any]:
    return json.loads((ROOT / "cdk.json").read_text()).get("context", {})


def chain(scope: Construct) -> sfn.IChainable:
    """The workflow every state machine runs (wrapped or bare)."""
    return sfn.Pass(scope, "Validate", parameters={"order.$": "$.order", "valid": True}).next(
        sfn.Pass(scope, "Ship", parameters={"order.$": "$.order", "status": "shipped"})
    )


# The key strategies, as a workflow of the benchmark's keys its orders (section 3b); the last gives each
# workflow a key path of its own, as workflows of a real stack have.
KEYS = {
    "from_paths": lambda index: IdempotencyKey.from_paths("$.order.id"),
    "whole_input": lambda index: IdempotencyKey.whole_input(),
    "from_jsonata": lambda index: IdempotencyKey.from_jsonata("$states.input.order.id"),
    "from_jmespath": lambda index: IdempotencyKey.from_jmespath("order.id"),
    "from_paths, a path each": lambda index: IdempotencyKey.from_paths(f"$.order.line{index}"),
}


def build(count: int, wrapped: bool, outdir: str, key: str = "from_paths", location: DefinitionLocation | None = None) -> Stack:
    stack = Stack(App(outdir=outdir, context=app_context()), STACK)
    table = IdempotencyTable(stack, "Idempotency") if wrapped else None
    for index in range(count):
        scope = Construct(stack, f"Workflow{index}")
        definition = chain(scope)
        if wrapped:
            IdempotentStateMachine(
                scope, "Orders", table=table, definition=definition, key=KEYS[key](index), definition_location=location
            )
        else:
            sfn.StateMachine(scope, "Orders", definition_body=sfn.DefinitionBody.from_chainable(definition))
    return stack


def synthesize(stack: Stack) -> tuple[dict[str, Any], int]:
    assembly = stack.node.root.synth()
    path = Path(assembly.get_stack_artifact(stack.artifact_id).template_full_path)
    return json.loads(path.read_text()), path.stat().st_size


# --- resolving a template's references to realistic values, to size what AWS limits ----------------
def _name(template: dict[str, Any], logical_id: str) -> str:
    properties = template["Resources"][logical_id].get("Properties", {})
    for key in ("StateMachineName", "FunctionName", "RoleName", "TableName", "LogGroupName", "BucketName", "Name"):
        if isinstance(properties.get(key), str):
            return properties[key]
    # CloudFormation's generated names: stack, logical id (shortened), 12 random characters.
    return f"{STACK}-{logical_id[:40]}-ABCDEFGHIJKL"


def _arn(template: dict[str, Any], logical_id: str) -> str:
    kind = template["Resources"][logical_id]["Type"]
    name = _name(template, logical_id)
    shapes = {
        "AWS::StepFunctions::StateMachine": f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:{name}",
        "AWS::Lambda::Function": f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{name}",
        "AWS::IAM::Role": f"arn:aws:iam::{ACCOUNT}:role/{name}",
        "AWS::DynamoDB::Table": f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{name}",
        "AWS::Logs::LogGroup": f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:{name}:*",
        "AWS::S3::Bucket": f"arn:aws:s3:::{name.lower()}",
        "AWS::KMS::Key": f"arn:aws:kms:{REGION}:{ACCOUNT}:key/12345678-1234-1234-1234-123456789012",
    }
    return shapes.get(kind, f"arn:aws:{kind.split('::')[1].lower()}:{REGION}:{ACCOUNT}:{name}")


def resolve(value: Any, template: dict[str, Any]) -> Any:
    """``value`` with CloudFormation's intrinsic functions replaced by the values they would have."""
    pseudo = {
        "AWS::Partition": "aws",
        "AWS::Region": REGION,
        "AWS::AccountId": ACCOUNT,
        "AWS::URLSuffix": "amazonaws.com",
        "AWS::StackName": STACK,
        "AWS::StackId": f"arn:aws:cloudformation:{REGION}:{ACCOUNT}:stack/{STACK}/12345678-1234-1234-1234-123456789012",
    }
    if isinstance(value, list):
        return [resolve(item, template) for item in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        ((function, argument),) = value.items()
        if function == "Ref":
            if argument in pseudo:
                return pseudo[argument]
            kind = template["Resources"].get(argument, {}).get("Type", "")
            if kind == "AWS::StepFunctions::StateMachine":
                return _arn(template, argument)
            if kind == "AWS::Lambda::Version":
                function_id = template["Resources"][argument]["Properties"]["FunctionName"].get("Ref", "")
                return f"{_arn(template, function_id)}:1" if function_id else "version"
            return _name(template, argument) if argument in template["Resources"] else f"parameter-{argument}"
        if function == "Fn::GetAtt":
            logical_id, attribute = argument if isinstance(argument, list) else argument.split(".", 1)
            return _arn(template, logical_id) if attribute == "Arn" else _name(template, logical_id)
        if function == "Fn::Join":
            separator, parts = argument
            return separator.join(str(resolve(part, template)) for part in parts)
        if function == "Fn::Select":
            index, items = argument
            return resolve(items, template)[int(index)]
        if function == "Fn::Split":
            separator, text = argument
            return str(resolve(text, template)).split(separator)
    return {key: resolve(item, template) for key, item in value.items()}


def _compact(value: Any) -> int:
    """Characters of a JSON document without whitespace, as IAM and EventBridge count them."""
    return len(json.dumps(value, separators=(",", ":")))


def limited_sizes(template: dict[str, Any], size: int) -> dict[str, dict[str, int]]:
    """The sizes in the template that an AWS limit caps (resolved), by what they belong to."""
    resources = template["Resources"]
    per_role: Counter = Counter()
    for resource in resources.values():
        if resource["Type"] == "AWS::IAM::Policy":
            document = _compact(resolve(resource["Properties"]["PolicyDocument"], template))
            for role in resource["Properties"].get("Roles", []):
                per_role[role.get("Ref", json.dumps(role)) if isinstance(role, dict) else role] += document
    return {
        "resources_per_stack": {"stack": len(resources)},
        "template_bytes_from_s3": {"template": size},
        # What @aws-cdk/core:suppressTemplateIndentation would write.
        "template_bytes_compact": {"template": len(json.dumps(template, separators=(",", ":")))},
        "role_inline_policies_chars": dict(per_role),
        "event_pattern_chars": {
            logical_id: _compact(resolve(resource["Properties"]["EventPattern"], template))
            for logical_id, resource in resources.items()
            if resource["Type"] == "AWS::Events::Rule" and "EventPattern" in resource["Properties"]
        },
    }


def _shared_growth(small: dict[str, Any], large: dict[str, Any], workflows: int) -> list[dict[str, Any]]:
    """Resources present in both templates (the shared ones) whose resolved size grows with the
    number of workflows, in bytes per workflow."""
    grown = []
    for logical_id, resource in small["Resources"].items():
        if logical_id not in large["Resources"]:
            continue
        before = _compact(resolve(resource, small))
        after = _compact(resolve(large["Resources"][logical_id], large))
        if after > before:
            grown.append(
                {
                    "logical_id": logical_id,
                    "type": resource["Type"],
                    "bytes_at_first": before,
                    "bytes_per_workflow": round((after - before) / workflows, 1),
                }
            )
    return sorted(grown, key=lambda entry: -entry["bytes_per_workflow"])


def stack_growth(counts: tuple[int, ...], log=print) -> dict[str, Any]:
    measured: dict[str, dict[int, dict[str, Any]]] = {"wrapped": {}, "bare": {}}
    templates: dict[int, dict[str, Any]] = {}
    for count in counts:
        for kind in ("wrapped", "bare"):
            with tempfile.TemporaryDirectory(prefix="bench-growth-") as outdir:
                started = time.perf_counter()
                template, size = synthesize(build(count, kind == "wrapped", outdir))
            types = Counter(resource["Type"] for resource in template["Resources"].values())
            type_bytes: Counter = Counter()
            for resource in template["Resources"].values():
                type_bytes[resource["Type"]] += len(json.dumps(resource, indent=1))
            measured[kind][count] = {
                "resources": sum(types.values()),
                "by_type": dict(sorted(types.items())),
                "bytes_by_type": dict(sorted(type_bytes.items())),
                "template_bytes": size,
                "limited": limited_sizes(template, size),
            }
            if kind == "wrapped":
                templates[count] = template
            log(
                f"  {count:>3} {kind:<7} workflows: {sum(types.values()):>4} resources, {size:>9,} bytes "
                f"({time.perf_counter() - started:.1f} s)"
            )
    first, last = counts[0], counts[-1]
    per_workflow: dict[str, dict[str, float]] = {}
    for kind, sizes in measured.items():
        types = set(sizes[first]["by_type"]) | set(sizes[last]["by_type"])
        per_workflow[kind] = {
            "resources": round((sizes[last]["resources"] - sizes[first]["resources"]) / (last - first), 2),
            "template_bytes": round((sizes[last]["template_bytes"] - sizes[first]["template_bytes"]) / (last - first)),
            "by_type": {
                kind_name: round(
                    (sizes[last]["by_type"].get(kind_name, 0) - sizes[first]["by_type"].get(kind_name, 0)) / (last - first), 2
                )
                for kind_name in sorted(types)
                if sizes[last]["by_type"].get(kind_name, 0) != sizes[first]["by_type"].get(kind_name, 0)
            },
            # Template bytes (as the CDK writes them, indented) added per workflow, by resource type.
            "bytes_by_type": {
                kind_name: round(
                    (sizes[last]["bytes_by_type"].get(kind_name, 0) - sizes[first]["bytes_by_type"].get(kind_name, 0))
                    / (last - first)
                )
                for kind_name in sorted(types)
                if sizes[last]["bytes_by_type"].get(kind_name, 0) != sizes[first]["bytes_by_type"].get(kind_name, 0)
            },
        }
    wrapped = per_workflow["wrapped"]["by_type"]
    others = {kind: step for kind, step in wrapped.items() if kind not in OWN_RESOURCES or step > 1}
    # Where the limits stop a stack: for each thing a limit caps (a role's policies, a rule's pattern),
    # its size with ``first`` workflows plus its growth per workflow; the first one to reach it counts.
    limits = {}
    for name, limit in LIMITS.items():
        candidates = []
        for owner, at_last in measured["wrapped"][last]["limited"][name].items():
            at_first = measured["wrapped"][first]["limited"][name].get(owner)
            step = (at_last - at_first) / (last - first) if at_first is not None else 0.0
            reach = (first + math.floor((limit - at_first) / step)) if step > 0 else None
            candidates.append(
                {"limit": limit, "owner": owner, f"at_{last}": at_last, "per_workflow": round(step, 1), "max_workflows": reach}
            )
        candidates.sort(key=lambda entry: (entry["max_workflows"] is None, entry["max_workflows"] or 0, -entry[f"at_{last}"]))
        limits[name] = (
            candidates[0]
            if candidates
            else {"limit": limit, "owner": None, f"at_{last}": 0, "per_workflow": 0.0, "max_workflows": None}
        )
    return {
        "counts": list(counts),
        "measured": {kind: {str(count): value for count, value in sizes.items()} for kind, sizes in measured.items()},
        "per_workflow": per_workflow,
        "other_growing_types": others,
        "only_own_resources": not others,
        "shared_resources_growing": _shared_growth(templates[first], templates[last], last - first),
        "limits": limits,
    }


def synth_time(count: int, repetitions: int, log=print) -> dict[str, Any]:
    """Construct and synthesize ``count`` and ``count // 2`` wrapped and bare workflows, alternately,
    in-process: what matters is that each further workflow costs what the earlier ones did (an app's synth
    grows linearly), and the ratio to bare ones says what the wrapper costs. One unmeasured round first:
    jsii starts its Node.js process and loads the libraries on first use."""
    half = count // 2
    kinds = [f"{kind}/{size}" for size in (half, count) for kind in ("wrapped", "bare")]
    times: dict[str, list[float]] = {kind: [] for kind in kinds}

    def once(kind: str) -> float:
        wrapped, size = kind.split("/")
        with tempfile.TemporaryDirectory(prefix="bench-synth-") as outdir:
            started = time.perf_counter()
            synthesize(build(int(size), wrapped == "wrapped", outdir))
            return time.perf_counter() - started

    once(f"wrapped/{count}"), once(f"bare/{count}")
    calls = {}
    for kind in (f"wrapped/{count}", f"bare/{count}"):
        with jsii_calls() as counted:
            once(kind)
        calls[kind.split("/")[0]] = round(counted[0] / count, 1) if counted else None
    for repetition in range(repetitions):
        for kind in kinds if repetition % 2 == 0 else reversed(kinds):
            times[kind].append(once(kind))
    medians = {kind: statistics.median(values) for kind, values in times.items()}
    log(
        f"  synth of {count} wrapped: {medians[f'wrapped/{count}']:.2f} s ({half}: {medians[f'wrapped/{half}']:.2f} s), "
        f"{count} bare: {medians[f'bare/{count}']:.2f} s (median of {repetitions})"
    )
    return {
        "workflows": count,
        "half": half,
        "repetitions": repetitions,
        "seconds": {kind: [round(value, 3) for value in values] for kind, values in times.items()},
        "median_seconds": {kind: round(value, 3) for kind, value in medians.items()},
        "ratio": round(medians[f"wrapped/{count}"] / medians[f"bare/{count}"], 2),
        # Each further wrapped workflow against the first half's: 1.0 is linear growth.
        "growth": round((medians[f"wrapped/{count}"] - medians[f"wrapped/{half}"]) / medians[f"wrapped/{half}"], 2),
        "seconds_per_workflow": round(medians[f"wrapped/{count}"] / count, 3),
        # Calls into the CDK's Node.js process (jsii) a workflow makes, built and synthesized: most of synth's time.
        "jsii_calls_per_workflow": calls,
    }


@contextlib.contextmanager
def jsii_calls() -> Iterator[list[int]]:
    """Counts the messages this process sends jsii's Node.js process meanwhile (``[count]``; empty where this
    version of jsii sends them otherwise)."""
    counted: list[int] = []
    node = getattr(jsii_process, "_NodeProcess", None)
    send = getattr(node, "send", None)
    if send is None:
        yield counted
        return
    counted.append(0)

    def counting(self: Any, *args: Any, **kwargs: Any) -> Any:
        counted[0] += 1
        return send(self, *args, **kwargs)

    node.send = counting
    try:
        yield counted
    finally:
        node.send = send


# Where a workflow's definition goes: what Step Functions gets (its definition limit is 1 MB), and the
# texts the template shares between workflows alike (in its Mappings, once a stack).
def _definition_texts(template: dict[str, Any]) -> dict[str, int]:
    from idempotent_constructs._readers.assembly import state_machine_definitions

    return {
        "definition Step Functions gets": sum(
            len(json.dumps(definition, separators=(",", ":"))) for definition in state_machine_definitions(template).values()
        ),
        "shared texts (Mappings)": len(json.dumps(template.get("Mappings", {}), separators=(",", ":"))),
    }


def per_strategy(counts: tuple[int, int], log=print) -> dict[str, Any]:
    """Template bytes each further workflow adds, for each key strategy (definitions in the template, as
    by default) and for ``from_paths`` with its definitions whole (``INLINE``) and as S3 assets, between
    ``counts`` workflows in one stack; and how many workflows fit a 1 MB template at that rate."""
    first, last = counts
    variants = [(key, None) for key in KEYS] + [
        ("from_paths", DefinitionLocation.INLINE),
        ("from_paths", DefinitionLocation.ASSET),
    ]
    rows: dict[str, Any] = {}
    for key, location in variants:
        sizes, texts, seconds = {}, {}, {}
        for count in counts:
            with tempfile.TemporaryDirectory(prefix="bench-scale-") as outdir:
                started = time.perf_counter()
                stack = build(count, True, outdir, key, location)
                # Measured past CloudFormation's 1 MB, which the library's synth check refuses (inline definitions).
                Validations.of(stack).acknowledge(
                    *(
                        Acknowledgment(id=rule, reason="the benchmark measures how a template grows, not a deployable one")
                        for rule in TEMPLATE_SIZE
                    )
                )
                template, sizes[count] = synthesize(stack)
                seconds[count] = round(time.perf_counter() - started, 2)
            if location is not DefinitionLocation.ASSET:
                texts[count] = _definition_texts(template)
        per_workflow = (sizes[last] - sizes[first]) / (last - first)
        name = (
            key
            + {
                None: "",
                DefinitionLocation.INLINE: " (definition inline)",
                DefinitionLocation.ASSET: " (definition as an S3 asset)",
            }[location]
        )
        rows[name] = {
            "key": key,
            "location": (location or DefinitionLocation.TEMPLATE).value,
            "template_bytes": {str(count): size for count, size in sizes.items()},
            "synth_seconds": {str(count): value for count, value in seconds.items()},
            "bytes_per_workflow": round(per_workflow),
            "workflows_per_template": first + math.floor((LIMITS["template_bytes_from_s3"] - sizes[first]) / per_workflow),
            "definition_bytes_per_workflow": {
                what: round((texts[last][what] - texts[first].get(what, 0)) / (last - first)) for what in texts[last]
            }
            if texts
            else {},
        }
        log(
            f"  {name:<40} +{per_workflow:>8,.0f} bytes a workflow, {rows[name]['workflows_per_template']:>4} "
            f"in a 1 MB template ({seconds[last]:.1f} s for {last})"
        )
    return {"counts": list(counts), "variants": rows}
