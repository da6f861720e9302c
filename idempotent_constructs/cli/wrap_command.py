"""`wrap`: an Amazon States Language file made idempotent as a CloudFormation or SAM template, for teams
that deploy without the CDK.

The command builds, in an app of its own, what a CDK user would write: an ``IdempotencyTable`` (or the
table it adopts by name) and an ``IdempotentStateMachine`` of the file, each ``${Placeholder}`` of the file
a template parameter (``wrap_app``). It synthesizes it, so it reports the constructs' problems and the
quota checks' as they do, and writes the template with its assets beside it (``_synth.portable``).
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import click

from . import wrap_app
from .group import cli
from .key_command import check_namespace, payload_spec, spec

FORMATS = ("cloudformation", "sam")
_DURATION = re.compile(r"(\d+)([smhd])")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}
_PLACEHOLDER = re.compile(r"\$\{([A-Za-z0-9_.:-]+)\}")


def duration(ctx: click.Context, param: click.Parameter, value: str | None) -> Any:
    """``30s``, ``10m``, ``2h`` or ``7d`` as a CDK ``Duration`` (None when left out)."""
    if value is None:
        return None
    match = _DURATION.fullmatch(value)
    if match is None:
        raise click.BadParameter(f"{value!r} is not a duration: a whole number and s, m, h or d, e.g. 30s, 10m, 7d")
    from aws_cdk import Duration

    return getattr(Duration, _UNITS[match.group(2)])(int(match.group(1)))


def check_role_arn(value: str | None) -> str | None:
    if value is not None and not re.fullmatch(r"arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]+", value):
        raise click.BadParameter(f"{value!r} is not a role's ARN: arn:aws:iam::123456789012:role/NAME")
    return value


def guard_state(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> dict[str, list[str]]:
    """``STATE=JSONPATH`` each, a state's key paths gathered by its name."""
    states: dict[str, list[str]] = {}
    for value in values:
        name, equals, path = value.partition("=")
        if not equals or not name or not path:
            raise click.BadParameter(f"{value!r}: write STATE=JSONPATH, e.g. 'ChargePayment=$.order.id'")
        states.setdefault(name, []).append(path)
    return states


@cli.command(short_help="Make an ASL file idempotent as a CloudFormation or SAM template of its own.")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path), help="The folder to write into.")
@click.option(
    "--key",
    "--path",
    "paths",
    multiple=True,
    metavar="JSONPATH",
    help="The key is these scalar fields of the input, e.g. --key '$.trip_id' (repeatable; default: the whole input).",
)
@click.option("--key-jsonata", "--jsonata", "jsonata", metavar="EXPR", help="The key is what a JSONata expression selects.")
@click.option("--key-jmespath", "--jmespath", "jmespath", metavar="EXPR", help="The key is what a JMESPath expression selects.")
@click.option("--payload-path", "payload_paths", multiple=True, metavar="JSONPATH", help="The payload a duplicate must repeat.")
@click.option("--payload-jsonata", metavar="EXPR", help="The payload is what a JSONata expression selects.")
@click.option("--payload-jmespath", metavar="EXPR", help="The payload is what a JMESPath expression selects.")
@click.option("--no-payload", is_flag=True, help="No payload is compared.")
@click.option(
    "--namespace", metavar="NS", callback=check_namespace, help="The records' namespace (default: STACK-NAME/Workflow)."
)
@click.option(
    "--guard-state",
    "guard_states",
    multiple=True,
    callback=guard_state,
    metavar="STATE=JSONPATH",
    help="Guard this state of the file alone, keyed by JSONPATH (repeatable; a state's paths add up).",
)
@click.option(
    "--type",
    "machine_type",
    type=click.Choice(["standard", "express"]),
    default="standard",
    show_default=True,
    help="The state machine's type.",
)
@click.option("--name", "machine_name", metavar="NAME", help="The state machine's name (default: generated).")
@click.option(
    "--expires-after", callback=duration, metavar="DURATION", help="How long a record is kept (default: the constructs')."
)
@click.option(
    "--lease", callback=duration, metavar="DURATION", help="How long a holder holds a key (default: the constructs', by type)."
)
@click.option("--poll-interval", callback=duration, metavar="DURATION", help="A waiting duplicate's first poll.")
@click.option("--max-wait", callback=duration, metavar="DURATION", help="How long a duplicate waits for a holder.")
@click.option("--timeout", callback=duration, metavar="DURATION", help="The execution's timeout.")
@click.option("--on-in-flight", type=click.Choice(["wait", "fail"]), help="What a duplicate does while the key is held.")
@click.option("--on-failure", type=click.Choice(["release", "cache"]), help="What a failure does to the key.")
@click.option("--on-completed", type=click.Choice(["replay", "reject"]), help="What a duplicate gets once done.")
@click.option("--cache-error", "cache_errors", multiple=True, metavar="ERROR", help="An error kept and replayed (repeatable).")
@click.option("--large-results", is_flag=True, help="Keep results of any size (an S3 bucket for the large ones).")
@click.option("--table-name", metavar="NAME", help="Adopt this idempotency table instead of creating one.")
@click.option(
    "--role-arn",
    metavar="ARN",
    callback=lambda ctx, param, value: check_role_arn(value),
    help="The state machine's role, yours (default: one it creates).",
)
@click.option(
    "--managed-policy-arn",
    "managed_policies",
    multiple=True,
    metavar="ARN",
    help="A managed policy for the role it creates: what the file's own states need (repeatable).",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(FORMATS),
    default="cloudformation",
    show_default=True,
    help="The template's form: CloudFormation, or SAM (AWS::Serverless::Function, AWS::Serverless::StateMachine).",
)
@click.option(
    "--stack-name",
    metavar="NAME",
    help="The stack's name: the state machine's and its log group's names and the records' namespace start with "
    "it; deploy the template under it (default: from FILE).",
)
def wrap(file: Path, out: Path, paths: tuple[str, ...], jsonata: str | None, jmespath: str | None,
         payload_paths: tuple[str, ...], payload_jsonata: str | None, payload_jmespath: str | None, no_payload: bool,
         namespace: str | None, guard_states: dict[str, list[str]], machine_type: str, machine_name: str | None,
         expires_after: Any, lease: Any, poll_interval: Any, max_wait: Any, timeout: Any, on_in_flight: str | None,
         on_failure: str | None, on_completed: str | None, cache_errors: tuple[str, ...], large_results: bool,
         table_name: str | None, role_arn: str | None, managed_policies: tuple[str, ...], output_format: str,
         stack_name: str | None) -> None:  # fmt: skip
    """Write FILE (an Amazon States Language file, as Workflow Studio or SAM keeps it) made idempotent:
    a template for a stack of its own (OUT/template.json) with the idempotency table, the functions and
    the wrapped state machine, one template parameter per ${Placeholder} of FILE, and the functions'
    code and the definition beside it as local paths that `aws cloudformation package` and `sam package`
    upload. Prints the command that deploys it."""
    if sum((bool(paths), jsonata is not None, jmespath is not None)) > 1:
        raise click.UsageError("choose one key spec: --key JSONPATH (repeatable), --key-jsonata EXPR or --key-jmespath EXPR")
    try:
        key = spec(jmespath, paths, jsonata, "--")
    except click.BadParameter as error:  # named by the option the user most likely typed
        error.param_hint = {"--path": "--key", "--jsonata": "--key-jsonata", "--jmespath": "--key-jmespath"}.get(
            str(error.param_hint), error.param_hint
        )
        raise
    payload = payload_spec(payload_paths, payload_jsonata, payload_jmespath, no_payload)
    if managed_policies and role_arn:
        raise click.UsageError("--managed-policy-arn is for the role it creates; with --role-arn, attach it to yours")
    text = file.read_text(encoding="utf-8")
    placeholders = parameter_names(sorted(set(_PLACEHOLDER.findall(text))))
    name = stack_name or _stack_name(file)
    _check_out(out)
    options = {
        "namespace": namespace,
        "expires_after": expires_after,
        "lease": lease,
        "poll_interval": poll_interval,
        "max_wait": max_wait,
        "timeout": timeout,
        "cache_errors": list(cache_errors) or None,
    }
    with tempfile.TemporaryDirectory(prefix="idempotent-constructs-wrap-") as assembly_dir:
        wrap_app.synth(
            Path(assembly_dir),
            name,
            file,
            placeholders,
            key=key,
            payload=payload,
            guard_states=guard_states,
            machine_type=machine_type,
            machine_name=machine_name,
            policies=(on_in_flight, on_failure, on_completed),
            large_results=large_results,
            table_name=table_name,
            role_arn=role_arn,
            managed_policies=managed_policies,
            options={option: value for option, value in options.items() if value is not None},
        )
        from .._synth import portable, quota_checks, quotas

        cloudformation = portable.portable(Path(assembly_dir), name, out)
    template = portable.as_sam(cloudformation) if output_format == "sam" else cloudformation
    text = json.dumps(template, indent=2) + "\n"
    (out / "template.json").write_text(text)
    # Checked as the CloudFormation it is (SAM's transform writes the same resources), at its size as written.
    findings = quota_checks.check_template(cloudformation, len(text.encode()), out, name)
    for finding in findings:
        click.echo(f"{quotas.severity(finding)}: {finding.logical_id or name}: {finding.description} ({finding.fix})", err=True)
    if any(quotas.severity(finding) == "error" for finding in findings):
        raise click.ClickException(f"{out / 'template.json'} breaks the quotas above: CloudFormation would refuse it")
    click.echo(f"wrote {out / 'template.json'} ({output_format}) with its functions and definition beside it")
    click.echo(_deploy_command(out, name, placeholders, output_format, template))


def parameter_names(placeholders: list[str]) -> dict[str, str]:
    """The template parameter of each placeholder: its name with what CloudFormation refuses in a
    parameter's name (all but letters and digits) left out. Two that would share one are refused."""
    names = {placeholder: re.sub(r"[^A-Za-z0-9]", "", placeholder) for placeholder in placeholders}
    for placeholder, name in names.items():
        sharing = sorted(other for other, other_name in names.items() if other_name == name)
        if not name or len(sharing) > 1:
            raise click.UsageError(
                f"the placeholder ${{{placeholder}}} has no template parameter of its own ({' and '.join(sharing)} "
                f"would be named {name!r}; a parameter's name takes letters and digits): rename it in the file"
            )
    return names


MARKER = ".idempotent-constructs-wrap"  # marks a folder as wrap's own, which it may write again


def _check_out(out: Path) -> None:
    """``out`` is new, empty, or written by wrap before (its folders are then written afresh): never a
    folder of yours, whose ``functions/`` wrap would otherwise replace."""
    if out.exists() and any(out.iterdir()) and not (out / MARKER).exists():
        raise click.UsageError(f"--out {out} holds files that wrap did not write: give a new or empty folder")
    out.mkdir(parents=True, exist_ok=True)
    for written in [*out.glob("functions*"), out / "statemachine"]:
        if written.is_dir():
            shutil.rmtree(written)
    (out / MARKER).write_text("written by idempotent-constructs wrap, which replaces what this folder holds\n")


def _stack_name(file: Path) -> str:
    stem = re.sub(r"[^A-Za-z0-9-]+", "-", file.name.removesuffix(".json").removesuffix(".asl")).strip("-")
    return f"{stem[:1].upper()}{stem[1:]}-idempotent" if stem and stem[0].isalpha() else f"Workflow-{stem}-idempotent"


def _deploy_command(
    out: Path, stack_name: str, placeholders: dict[str, str], output_format: str, template: dict[str, Any]
) -> str:
    overrides = " ".join(f"{name}=..." for name in placeholders.values())
    capabilities = "CAPABILITY_NAMED_IAM" if '"RoleName"' in json.dumps(template) else "CAPABILITY_IAM"
    parameters = f" \\\n    --parameter-overrides {overrides}" if placeholders else ""
    if output_format == "sam":
        return (
            "deploy it with:\n"
            f"  sam deploy --template-file {out / 'template.json'} --stack-name {stack_name} --resolve-s3 \\\n"
            f"    --capabilities {capabilities} CAPABILITY_AUTO_EXPAND{parameters}"
        )
    return (
        "deploy it with:\n"
        f"  aws cloudformation package --template-file {out / 'template.json'} --s3-bucket YOUR_BUCKET \\\n"
        f"    --output-template-file {out / 'packaged.json'}\n"
        f"  aws cloudformation deploy --template-file {out / 'packaged.json'} --stack-name {stack_name} \\\n"
        f"    --s3-bucket YOUR_BUCKET --capabilities {capabilities}{parameters}"
    )
