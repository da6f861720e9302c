"""The readable report: the figures of ``results.json`` as aligned tables, each bar next to its figure."""

from __future__ import annotations

from typing import Any

from . import bars as bar_rules
from . import baseline
from .cost import PRICES


def table(headers: list[str], rows: list[list[Any]]) -> str:
    """Columns aligned; numbers right-aligned, text left-aligned."""
    cells = [[_text(value) for value in row] for row in rows]
    widths = [max([len(header)] + [len(row[i]) for row in cells]) for i, header in enumerate(headers)]
    numeric = [all(isinstance(row[i], (int, float)) or row[i] in ("", None) for row in rows) for i in range(len(headers))]

    def line(values: list[str]) -> str:
        return "  ".join(
            (value.rjust(width) if is_number else value.ljust(width))
            for value, width, is_number in zip(values, widths, numeric, strict=False)
        ).rstrip()

    return "\n".join([line(headers), line(["-" * width for width in widths])] + [line(row) for row in cells])


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:,.4f}".rstrip("0").rstrip(".") if value else "0"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def _calls(counts: dict[str, int]) -> str:
    return ", ".join(f"{name} {count}" for name, count in counts.items()) or "-"


def _short(state: str) -> str:
    return state.removeprefix("Idempotency.")


def _bar(met: bool, text: str) -> str:
    return f"{text}: {'met' if met else 'NOT MET'}"


LIMIT_LABELS = {
    "resources_per_stack": "CloudFormation resources per stack",
    "template_bytes_from_s3": "CloudFormation template bytes (1 MB, via S3)",
    "template_bytes_compact": "  the same without indentation",
    "role_inline_policies_chars": "IAM inline policies of one role, chars",
    "event_pattern_chars": "EventBridge event pattern chars (default quota)",
}
PATH_LABELS = {
    "first_run": "first run",
    "replay": "replay",
    "first_run_100k": "first run, 100 KiB",
    "replay_100k": "replay, 100 KiB",
    "takeover": "takeover",
    "takeover_100k": "takeover, 100 KiB",
}


def overhead_section(results: dict[str, Any]) -> list[str]:
    overhead = results["overhead"]
    out = [
        "1. Per-execution overhead: the wrapper's states only (the user's chain excluded), counted from",
        "   execution histories in the emulator. Transitions = states entered + retries (as billed).",
        "   'In Lambda': calls made inside a Lambda function, which a history cannot show (probe).",
        "",
    ]
    rows = []
    for variant, entry in overhead["variants"].items():
        first = True
        for path, label in PATH_LABELS.items():
            measured = entry.get(path)
            if measured is None:
                continue
            allowed = bar_rules.overhead_bar(variant, path) if not path.startswith("takeover") else None
            bar = ""
            if allowed:
                met = measured["states_entered"] <= allowed[0] and measured["lambda_invocations"] <= allowed[1]
                bar = _bar(met, f"<= {allowed[0]} states, <= {allowed[1]} Lambda")
            other = _calls(measured["other_calls"]) if measured["other_calls"] else ""
            inside = {**measured["dynamodb_calls_in_lambda"], **measured["s3_calls_in_lambda"]}
            rows.append(
                [
                    variant if first else "",
                    label,
                    measured["states_entered"],
                    measured["transitions"],
                    measured["lambda_invocations"],
                    _calls(measured["dynamodb_calls"]) + (f"; {other}" if other else ""),
                    _calls(inside),
                    measured["read_units"],
                    measured["write_units"],
                    bar,
                ]
            )
            first = False
        if "blocked" in entry:
            blocked = entry["blocked"]
            rows.append(
                [
                    "",
                    "takeover",
                    None,
                    None,
                    None,
                    "n/a: no lease, never taken over",
                    "",
                    None,
                    None,
                    f"a duplicate of a crashed holder still waited after {blocked['watched_seconds']} s "
                    f"({blocked['polls']} poll{'' if blocked['polls'] == 1 else 's'}, chain not run)"
                    if blocked["still_waiting"]
                    else "DID NOT WAIT",
                ]
            )
    out.append(
        table(
            [
                "variant",
                "path",
                "states",
                "transitions",
                "Lambda",
                "DynamoDB calls (history)",
                "in Lambda",
                "RRU",
                "WRU",
                "bar",
            ],
            rows,
        )
    )
    out += ["", "   States entered (small result):"]
    for variant, entry in overhead["variants"].items():
        for path in ("first_run", "replay", "takeover"):
            if entry.get(path):
                out.append(f"   {variant:<24} {PATH_LABELS[path]:<10} {' > '.join(map(_short, entry[path]['states']))}")
        if entry.get("waiting") and entry["waiting"]["cycle"]:
            out.append(
                f"   {variant:<24} {'poll cycle':<10} {' > '.join(map(_short, entry['waiting']['cycle']['states']))}"
                f" (+{entry['waiting']['cycle']['retries']} retry)"
            )
    out += [
        "",
        f"   Waiting duplicate: the holder is held in its chain (within its lease) until the duplicate has polled "
        f"{overhead.get('waiting_polls', 2)} times; ours polls "
        f"after 1 s, doubling; the baseline every {overhead['baseline_poll_seconds']} s.",
    ]
    rows = []
    for variant, entry in overhead["variants"].items():
        waiting = entry.get("waiting")
        if not waiting:
            continue
        cycle = waiting["cycle"] or {"states_entered": "", "transitions": "", "dynamodb_calls": {}, "read_units": ""}
        allowed = bar_rules.POLL_CYCLE_STATES
        bar = ""
        if variant.startswith("ours"):
            measured = waiting["cycle"] is not None
            bar = _bar(measured and cycle["states_entered"] <= allowed, f"<= {allowed} states per cycle")
        rows.append(
            [
                variant,
                waiting["polls"],
                waiting["extra_states_over_replay"],
                waiting["states_per_poll"],
                waiting["transitions_per_poll"],
                cycle["states_entered"],
                cycle["transitions"],
                _calls(cycle["dynamodb_calls"]),
                cycle["read_units"],
                bar,
            ]
        )
    out.append(
        table(
            [
                "variant",
                "polls",
                "states over a replay",
                "states/poll",
                "transitions/poll",
                "cycle: states",
                "transitions",
                "DynamoDB",
                "RRU",
                "bar",
            ],
            rows,
        )
    )
    out.append(f"   Baseline (bench/baseline.py): {baseline.NOTES}")
    return out


def cost_section(results: dict[str, Any]) -> list[str]:
    cost = results["cost"]["per_million"]
    big = f"{results['overhead']['big_result_kib']}_kib"
    out = [
        f"2. Cost per million executions (per million poll cycles), US$, {PRICES['region']}, prices of "
        f"{PRICES['taken_on']} (bench/cost.py):",
        f"   ${PRICES['state_transition'] * 1000:g} per 1,000 transitions; Lambda ${PRICES['lambda_request'] * 1e6:g} per 1M requests "
        f"+ ${PRICES['lambda_gb_second']['arm64']} (arm64) / ${PRICES['lambda_gb_second']['x86_64']} (x86) per GB-s;",
        f"   DynamoDB on-demand ${PRICES['dynamodb_write_request_unit'] * 1e6:g} per 1M WRU, ${PRICES['dynamodb_read_request_unit'] * 1e6:g} per 1M RRU;"
        f" S3 ${PRICES['s3_put_request'] * 1000:g} per 1,000 PUT, ${PRICES['s3_get_request'] * 1000:g} per 1,000 GET.",
        "",
    ]
    rows = []
    baseline = cost.get("baseline", {})
    for variant, paths in cost.items():
        first = True
        for path, sizes in paths.items():
            small, large = sizes["small"], sizes[big]
            reference = baseline.get(path)
            ratio_small = round(small["total"] / reference["small"]["total"], 2) if reference and variant != "baseline" else None
            ratio_big = round(large["total"] / reference[big]["total"], 2) if reference and variant != "baseline" else None
            rows.append(
                [
                    variant if first else "",
                    path.replace("_", " "),
                    round(small["total"], 2),
                    round(small["transitions"], 2),
                    round(small["lambda_requests"] + small["lambda_duration"], 2),
                    round(small["dynamodb_writes"] + small["dynamodb_reads"], 2),
                    round(small["s3_requests"], 2),
                    ratio_small,
                    round(large["total"], 2),
                    round(large["dynamodb_writes"] + large["dynamodb_reads"], 2),
                    round(large["s3_requests"], 2),
                    ratio_big,
                ]
            )
            first = False
    out.append(
        table(
            [
                "variant",
                "path",
                "small: total",
                "transitions",
                "Lambda",
                "DynamoDB",
                "S3",
                "x baseline",
                f"{big.replace('_kib', ' KiB')}: total",
                "DynamoDB",
                "S3",
                "x baseline",
            ],
            rows,
        )
    )
    out.append(
        "   A poll cycle is priced per cycle; how many cycles a wait takes differs: ours backs off from 1 s "
        "(doubling, at most 30 s), the baseline polls every 10 s. The baseline has no takeover."
    )
    out += ["", "   Lambda duration billed: each function's median warm run in the emulator, rounded up to 1 ms:"]
    rows = [
        [
            function["construct"],
            function["memory_mb"],
            function["architecture"],
            function["median_ms"],
            -(-function["median_ms"] // 1),
        ]
        for function in results["overhead"]["lambda_functions"].values()
    ]
    out.append(table(["function", "MB", "architecture", "median ms", "billed ms"], rows))
    return out


def _synth_seconds(synth: dict[str, Any], kind: str, count: int | None = None) -> float:
    """The median synth time of ``count`` (all of them, by default) ``kind`` workflows."""
    return float(synth["median_seconds"][f"{kind}/{count or synth['workflows']}"])


def growth_section(results: dict[str, Any]) -> list[str]:
    growth, synth = results["growth"], results["synth_time"]
    out = [
        "3. Stack growth: N IdempotentStateMachines (one table) against N bare sfn.StateMachines, same definition,",
        "   in one stack with the repository's cdk.json feature flags.",
        "",
    ]
    rows = []
    for count in growth["counts"]:
        wrapped, bare = growth["measured"]["wrapped"][str(count)], growth["measured"]["bare"][str(count)]
        rows.append([count, wrapped["resources"], wrapped["template_bytes"], bare["resources"], bare["template_bytes"]])
    out.append(table(["workflows", "wrapped: resources", "template bytes", "bare: resources", "template bytes"], rows))
    first, last = growth["counts"][0], growth["counts"][-1]
    for kind in ("wrapped", "bare"):
        step = growth["per_workflow"][kind]
        types = ", ".join(f"{name.split('::')[-1]} +{value:g}" for name, value in step["by_type"].items())
        out.append(
            f"   each further {kind} workflow ({first} -> {last}): +{step['resources']:g} resources ({types}), "
            f"+{step['template_bytes']:,} template bytes"
        )
        out.append(
            "      of which "
            + ", ".join(
                f"{name.split('::')[-1]} {value:,}"
                for name, value in sorted(step["bytes_by_type"].items(), key=lambda item: -item[1])
            )
        )
    others = growth["other_growing_types"]
    out.append(
        "   bar, the k-th workflow adds only its own state machine, role, policy and log group: "
        + ("met" if growth["only_own_resources"] else f"NOT MET (also {', '.join(others)})")
    )
    if growth["shared_resources_growing"]:
        out.append(
            "   shared resources that still grow with each workflow (resolved JSON): "
            + "; ".join(
                f"{entry['type']} {entry['logical_id']} +{entry['bytes_per_workflow']:g} B"
                for entry in growth["shared_resources_growing"]
            )
        )
    out += ["", "   AWS limits a stack of wrapped workflows runs into (sizes resolved with realistic ARNs; bench/growth.py):"]
    rows = [
        [
            LIMIT_LABELS.get(name, name),
            limit["limit"],
            limit["owner"] or "",
            limit[f"at_{last}"],
            limit["per_workflow"],
            limit["max_workflows"] if limit["max_workflows"] is not None else "not reached (no growth)",
        ]
        for name, limit in growth["limits"].items()
    ]
    out.append(
        table(["limit", "value", "first to reach it", f"at {last} workflows", "per workflow", "workflows before the limit"], rows)
    )
    out += [
        "",
        f"4. Synth time: {synth['workflows']} wrapped against {synth['workflows']} bare state machines, App().synth() "
        f"in-process, {synth['repetitions']} interleaved repetitions after one warm-up round (jsii start-up):",
        f"   median {_synth_seconds(synth, 'wrapped'):.2f} s wrapped "
        f"({_synth_seconds(synth, 'wrapped', synth['half']):.2f} s for {synth['half']}), "
        f"{_synth_seconds(synth, 'bare'):.2f} s bare: ratio {synth['ratio']:g}x; the second half "
        f"cost {synth['growth']:g}x the first (bar: at most {bar_rules.SYNTH_GROWTH:g}x, linear growth); "
        f"calls into jsii a workflow: {(synth.get('jsii_calls_per_workflow') or {}).get('wrapped')} wrapped, "
        f"{(synth.get('jsii_calls_per_workflow') or {}).get('bare')} bare (bar on the ratio: at most {bar_rules.SYNTH_RATIO:g}x)",
    ]
    return out


def hashing_section(results: dict[str, Any]) -> list[str]:
    hashing = results["hashing"]
    out = [
        "5. Key hashing, median per call (us), interleaved: ours = canonical.idempotency_id of a whole-input key",
        "   (+ the payload's validation hash: canonical.key_and_validation, as the key function computes both); Powertools 3.37.0 =",
        "   BasePersistenceLayer._get_hashed_idempotency_key (+ _get_hashed_payload with payload validation).",
        "",
    ]
    rows = []
    for name, entry in hashing["key_hashing"].items():
        median = entry["median_us"]
        bar = ""
        if name == bar_rules.HASHING_PLAIN_SIZE:
            bar = _bar(entry["ratio_key"] <= bar_rules.HASHING_RATIO, f"<= {bar_rules.HASHING_RATIO:g}x")
        elif name == bar_rules.HASHING_SIZE:
            plain = hashing["key_hashing"][bar_rules.HASHING_PLAIN_SIZE]["median_us"]["ours_key"]
            rewrite = median["ours_key"] / plain
            bar = _bar(
                rewrite <= bar_rules.HASHING_FRACTIONS_RATIO,
                f"{rewrite:.2f}x without fractions, <= {bar_rules.HASHING_FRACTIONS_RATIO:g}x",
            )
        rows.append(
            [
                f"{entry['kib']} KiB",
                entry["payload"],
                median["ours_key"],
                median["powertools_key"],
                entry["ratio_key"],
                median["ours_key_and_validation"],
                median["powertools_key_and_validation"],
                entry["ratio_key_and_validation"],
                bar,
            ]
        )
    out.append(
        table(
            ["payload", "kind", "ours", "Powertools", "ratio", "ours + payload hash", "Powertools + validation", "ratio", "bar"],
            rows,
        )
    )
    imports = hashing["imports"]
    out += [
        "",
        f"   Import time of each Lambda handler module, top level from lambda_src, fresh interpreter "
        f"(Python {imports['python']}, median of {next(iter(imports['modules'].values()))['repetitions']}):",
    ]
    rows = [
        [module, entry["median_ms"], ", ".join(entry["third_party_imports"]) or "-"]
        for module, entry in imports["modules"].items()
    ]
    out.append(table(["module", "ms", "third-party packages imported"], rows))
    return out


def bounds_section(results: dict[str, Any]) -> list[str]:
    bounds = results["bounds"]
    out = [
        "6. The native key within AWS's JSONata bounds (B18): the generated Acquire (key), ComputeKey (what it sends)",
        "   and Complete (the result, here as large as the input)",
        "   evaluated in jsonata-js 2.0.6 with jsonata's Timebox hooks (peak depth as the Timebox counts / as plain",
        "   nesting; AWS fails past 100), best time on this machine (AWS fails past 1,000 ms); then a first run and",
        "   a replay on the emulator (AWS's bounds enforced), wrapper states and Lambda calls.",
        "",
    ]
    rows = []
    for row in bounds["rows"]:
        first, replay = row["first_run"], row["replay"]

        def outcome(run: dict[str, Any]) -> str:
            if run["status"] != "SUCCEEDED":
                return f"{run['status']} {run['error']}"
            return f"{run['states_entered']} / {run['lambda_invocations']}"

        acquire, compute, complete = row["acquire"], row["compute_key"], row["complete"]
        rows.append(
            [
                row["key"],
                row["shape"],
                row["bytes"],
                "native" if row["native"] else "key function",
                f"{acquire['peak']}/{acquire['strict']}" if row["native"] else "-",
                acquire["milliseconds"] if row["native"] else None,
                f"{compute['peak']}/{compute['strict']}",
                compute["milliseconds"],
                f"{complete['peak']}/{complete['strict']}",
                complete["milliseconds"],
                outcome(first),
                outcome(replay),
                "; ".join(_bar(met, what) for what, met in bar_rules.bounds_bars(row)),
            ]
        )
    out.append(
        table(
            [
                "key",
                "payload",
                "bytes",
                "key computed by",
                "Acquire depth",
                "ms",
                "ComputeKey depth",
                "ms",
                "Complete depth",
                "ms",
                "first run states / Lambda",
                "replay",
                "bars",
            ],
            rows,
        )
    )
    return out


def sources_section(results: dict[str, Any]) -> list[str]:
    out = [
        "7. Duplicates as AWS's event sources deliver them (B20): a first delivery and a redelivery as AWS makes it,",
        "   with the source's recipe (docs/guides/event-sources.md) and with the defaults (the whole input as key and",
        "   payload); wrapper states / Lambda calls, whether the redelivery replayed or ran the body again, and the",
        "   recipe's Acquire in jsonata-js (peak depth as the Timebox counts / as plain nesting, best ms).",
        "",
    ]
    rows = []
    for row in results["sources"]["rows"]:

        def outcome(variant: str, path: str, row: dict[str, Any] = row) -> str:
            run = row[variant][path]
            if run["status"] != "SUCCEEDED":
                return f"{run['status']} {run['error']}"
            ran = " (ran again)" if path == "redelivery" and run["body_ran"] else ""
            return f"{run['states_entered']} / {run['lambda_invocations']}{ran}"

        acquire = row["acquire"]
        rows.append(
            [
                row["what"],
                row["bytes"],
                f"{acquire['peak']}/{acquire['strict']}, {acquire['milliseconds']} ms",
                outcome("recipe", "first_run"),
                outcome("recipe", "redelivery"),
                outcome("defaults", "first_run"),
                outcome("defaults", "redelivery"),
                "; ".join(_bar(met, what) for what, met in bar_rules.sources_bars(row)),
            ]
        )
    out.append(
        table(
            ["event", "bytes", "Acquire", "recipe: first", "redelivery", "defaults: first", "redelivery", "bars"],
            rows,
        )
    )
    return out


def scale_section(results: dict[str, Any]) -> list[str]:
    scale = results["scale"]
    first, last = scale["counts"]
    out = [
        f"3b. Template bytes each further IdempotentStateMachine adds ({first} against {last} in one stack), by key",
        "    strategy, and the workflows a 1 MB template (CloudFormation's limit through S3) holds at that rate:",
        "",
    ]
    rows = [
        [
            name,
            f"{row['bytes_per_workflow']:,}",
            row["workflows_per_template"],
            ", ".join(f"{what} {value:,}" for what, value in row["definition_bytes_per_workflow"].items()) or "-",
        ]
        for name, row in scale["variants"].items()
    ]
    out.append(
        table(
            ["key (definition location)", "bytes a workflow", "workflows in 1 MB", "of which, in definitions and shared texts"],
            rows,
        )
    )
    return out


def shapes_section(results: dict[str, Any]) -> list[str]:
    out = [
        "8. The wrapper's states by shape (issue 43), side by side in one run: states entered by the wrapper on a first",
        "   run and a replay, and dollars per million of each (Standard: transitions, DynamoDB, Lambda; Express: DynamoDB",
        "   and Lambda, no transitions billed). (*) the shape the library made before issue 43, still made where it says.",
        "",
    ]
    rows = []
    for name, kinds in results["shapes"]["shapes"].items():
        for kind, row in kinds.items():
            first, replay = row["first_run"], row["replay"]
            rows.append(
                [
                    name + (" (*)" if row["before_issue_43"] else ""),
                    kind,
                    first["states_entered"],
                    f"{first['dollars_per_million']:.2f}",
                    replay["states_entered"],
                    f"{replay['dollars_per_million']:.2f}",
                ]
            )
    out.append(table(["shape", "kind", "first run: states", "$ per million", "replay: states", "$ per million"], rows))
    return out


def render(results: dict[str, Any]) -> str:
    meta = results["meta"]
    out = [
        f"idempotent_constructs benchmark, {meta['mode']} run, {meta['started']} ({meta['seconds']:.0f} s)",
        f"git {meta['git']}, Python {meta['python']}, aws-cdk-lib {meta['aws_cdk_lib']}, moto {meta['moto']}, "
        f"{meta['cpus']} CPUs",
        "",
    ]
    out += [*overhead_section(results), "", *cost_section(results), "", *growth_section(results), "", *scale_section(results), ""]
    out += [*hashing_section(results), "", *bounds_section(results), "", *sources_section(results), ""]
    out += [*shapes_section(results), ""]
    missed = [bar for bar in results["bars"] if not bar["met"]]
    out.append(f"Bars (docs/project/benchmarks.md): {len(results['bars']) - len(missed)} of {len(results['bars'])} met.")
    for bar in missed:
        out.append(f"  NOT MET  {bar['what']}: {bar['figure']} (bar {bar['bar']})")
    if failed := [*results["overhead"]["checks"], *results["shapes"]["checks"]]:
        out.append("Scenario checks FAILED (the figures above are not trustworthy):")
        out += [f"  {problem}" for problem in failed]
    return "\n".join(out)


def markdown(results: dict[str, Any]) -> str:
    """The key figures as a Markdown table for docs/project/benchmarks.md."""
    variants, cost = results["overhead"]["variants"], results["cost"]["per_million"]
    big = f"{results['overhead']['big_result_kib']}_kib"
    columns = [
        ("ours/from_paths", "ours, `from_paths` key"),
        ("ours/whole_input", "ours, whole-input key"),
        ("ours/whole_input+large", "ours, whole input, `ResultStorage.large()`"),
        ("baseline", "aws-samples-style baseline"),
    ]

    def counts(variant: str, path: str) -> str:
        measured = variants[variant].get(path)
        if path == "takeover" and "blocked" in variants[variant]:
            return "never (no lease)"
        if measured is None:
            return "-"
        inside = sum(measured["dynamodb_calls_in_lambda"].values())
        other = sum(measured["other_calls"].values())
        return (
            f"{measured['states_entered']} / {measured['lambda_invocations']} / {measured['dynamodb_calls_total']}"
            + (f" (+{inside} in Lambda)" if inside else "")
            + (f" (+{other} DescribeExecution)" if other else "")
        )

    def cycle(variant: str) -> str:
        waiting = variants[variant].get("waiting")
        if not waiting or not waiting["cycle"]:
            return "-"
        measured = waiting["cycle"]
        return f"{measured['states_entered']} (+{measured['retries']} retry) / 0 / {measured['dynamodb_calls_total']}"

    def dollars(variant: str, path: str) -> str:
        row = cost[variant].get(path)
        if row is None:
            return "n/a" if path == "takeover" and variant == "baseline" else "-"
        small, large = row["small"]["total"], row[big]["total"]
        return f"{small:.2f}" if path == "poll_cycle" else f"{small:.2f} / {large:.2f}"

    lines = [
        "| per execution (wrapper only) | " + " | ".join(label for _, label in columns) + " |",
        "|---|" + "---|" * len(columns),
    ]
    for label, path in (
        ("first run: states / Lambda / DynamoDB calls", "first_run"),
        ("replay", "replay"),
        ("takeover after a lapsed lease", "takeover"),
    ):
        lines.append(f"| {label} | " + " | ".join(counts(variant, path) for variant, _ in columns) + " |")
    lines.append("| one poll cycle, holder within its lease | " + " | ".join(cycle(variant) for variant, _ in columns) + " |")
    kib = results["overhead"]["big_result_kib"]
    for label, path in (
        (f"$ per 1M first runs (small / {kib} KiB result)", "first_run"),
        (f"$ per 1M replays (small / {kib} KiB)", "replay"),
        ("$ per 1M poll cycles", "poll_cycle"),
        (f"$ per 1M takeovers (small / {kib} KiB)", "takeover"),
    ):
        lines.append(f"| {label} | " + " | ".join(dollars(variant, path) for variant, _ in columns) + " |")
    growth, synth, hashing = results["growth"], results["synth_time"], results["hashing"]
    last = growth["counts"][-1]
    wrapped, bare = growth["per_workflow"]["wrapped"], growth["per_workflow"]["bare"]
    reached = {
        what: growth["limits"][limit]["max_workflows"]
        for what, limit in (
            ("500 resources", "resources_per_stack"),
            ("1 MB template", "template_bytes_from_s3"),
            ("EventBridge pattern", "event_pattern_chars"),
        )
        if growth["limits"][limit]["max_workflows"]
    }
    key = hashing["key_hashing"][bar_rules.HASHING_SIZE]
    imports = hashing["imports"]["modules"]
    lines += [
        "",
        "| scale | ours | bare `sfn.StateMachine` |",
        "|---|---|---|",
        f"| each further workflow in a stack (1 to {last}) | +{wrapped['resources']:g} resources, +{wrapped['template_bytes'] / 1000:.1f} kB "
        f"of template | +{bare['resources']:g} resources, +{bare['template_bytes'] / 1000:.1f} kB |",
        f"| workflows per stack before a limit | {min(reached.values())} ("
        + ", ".join(f"{what} at {at}" for what, at in sorted(reached.items(), key=lambda item: item[1]))
        + ") | |",
        *(
            f"| template bytes a further workflow adds ({results['scale']['counts'][0]} against "
            f"{results['scale']['counts'][1]}), {name} | +{row['bytes_per_workflow'] / 1000:.1f} kB: "
            f"{row['workflows_per_template']} in a 1 MB template | |"
            for name, row in results["scale"]["variants"].items()
        ),
        f"| synth of {synth['workflows']} workflows, in-process | {_synth_seconds(synth, 'wrapped'):.2f} s "
        f"({synth['ratio']:g}x; the second half {synth['growth']:g}x the first) | "
        f"{_synth_seconds(synth, 'bare'):.2f} s |",
        f"| hashing a 200 KiB whole-input key (ours / Powertools) | {key['median_us']['ours_key'] / 1000:.1f} ms "
        f"/ {key['median_us']['powertools_key'] / 1000:.1f} ms ({key['ratio_key']:g}x); with the payload's validation hash "
        f"{key['median_us']['ours_key_and_validation'] / 1000:.1f} ms / {key['median_us']['powertools_key_and_validation'] / 1000:.1f} ms | |",
        "| handler import, fresh interpreter | "
        + ", ".join(f"`{name}` {entry['median_ms']:g} ms" for name, entry in imports.items())
        + " | |",
        "",
        *shapes_markdown(results),
    ]
    return "\n".join(lines)


def shapes_markdown(results: dict[str, Any]) -> list[str]:
    """Section 8's table: each shape's wrapper states and dollars per million, Standard and Express."""

    def cell(kinds: dict[str, Any], path: str) -> str:
        return "; ".join(
            f"{kind}: {row[path]['states_entered']} states, ${row[path]['dollars_per_million']:.2f}"
            for kind, row in kinds.items()
        )

    rows = [
        f"| {name}{' (before issue 43)' if next(iter(kinds.values()))['before_issue_43'] else ''} | "
        f"{cell(kinds, 'first_run')} | {cell(kinds, 'replay')} |"
        for name, kinds in results["shapes"]["shapes"].items()
    ]
    return ["| shape: wrapper states, $ per 1M runs | first run | replay |", "|---|---|---|", *rows]
