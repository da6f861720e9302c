"""The generated protocol, one golden file a state, so that a change of the protocol reads as a diff.

tests/golden/<machine>/ holds, for each state machine of ``MACHINES``, one file a state
(``<state name>.jsonata``, a ``/`` of the name written ``%2F``), nested states included, and
``_definition.jsonata`` (the definition's own fields). Each is the state's JSON, indented, with every
JSONata string written as its expression between ``{%`` and ``%}``, formatted by tests/protocol_format.py
(a block one expression a line, wide objects one entry a line, long conditionals one branch a line);
a Parallel's or a Map's states are named there, each in its own file. A reviewer reads a pull request's
changes to these files as the change of the protocol: which states appear or go, and what each
computes. A change of the generated states fails the test below with the diff; when the change is
meant, regenerate the files and commit them with it:

    ./dev test tests/test_protocol.py --snapshot-update

which also deletes the files of states (and machines) no longer generated. The formatting only moves
whitespace between tokens: ``test_formatting_changes_no_jsonata_expression`` parses every expression
of these machines, before and after, with jsonata-python and compares the two parses.
"""

from __future__ import annotations

import difflib
import json
import re
import shutil
from pathlib import Path
from typing import Any

import jsonata
import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_stepfunctions as sfn
from jsonata.parser import Parser

from idempotent_constructs import IdempotencyGuard, IdempotencyKey, IdempotencyTable
from idempotent_constructs.testing import state_machine_definitions
from tests.protocol_format import format_jsonata, jsonata_expressions, protocol_files, tokens
from tests.stacks import everything_on, minimal

GOLDEN = Path(__file__).parent / "golden"
REGENERATE = "./dev test tests/test_protocol.py --snapshot-update"
# Golden folder: the stack and the state machine's logical id less its hash.
MACHINES = {
    "default": ("Minimal", "OrdersStateMachine"),  # an IdempotentStateMachine with every option at its default
    # An IdempotentStateMachine with options (JMESPath key, cached failures, a lease, waiting duplicates)
    # around a Map whose items a guard with options (fail fast, a state name prefix) runs once.
    "options": ("EverythingOn", "OrdersStateMachine"),
    "large_results": ("EverythingOn", "QuotesStateMachine"),  # results in S3 past 16 KiB, Express
    "guard_in_jsonpath": ("Guards", "InJsonPath"),  # an IdempotencyGuard in a JSONPath state machine
    "guard_in_jsonata": ("Guards", "InJsonata"),  # and in a JSONata one
}


def guards(app: App) -> Stack:
    """A guard with its options at their defaults (but its key), in a JSONPath and in a JSONata state machine."""
    stack = Stack(app, "Guards")
    table = IdempotencyTable(stack, "Idempotency")
    key = IdempotencyKey.from_paths("$.id")
    in_jsonpath = IdempotencyGuard(stack, "Once", table=table, key=key, body=sfn.Pass(stack, "Work"))
    sfn.StateMachine(stack, "InJsonPath", definition_body=sfn.DefinitionBody.from_chainable(in_jsonpath))
    in_jsonata = IdempotencyGuard(stack, "JsonataOnce", table=table, key=key, body=sfn.Pass.jsonata(stack, "JsonataWork"))
    sfn.StateMachine(
        stack,
        "InJsonata",
        query_language=sfn.QueryLanguage.JSONATA,
        definition_body=sfn.DefinitionBody.from_chainable(in_jsonata),
    )
    return stack


@pytest.fixture(scope="module")
def definitions(tmp_path_factory: pytest.TempPathFactory, node_bin: Path) -> dict[str, dict[str, Any]]:
    """The definition of each machine of ``MACHINES``, by golden folder."""
    app = App(outdir=str(tmp_path_factory.mktemp("protocol-assembly")))
    for build in (minimal, everything_on, guards):
        build(app)
    assembly = app.synth()
    found = {}
    for folder, (stack, logical_id) in MACHINES.items():
        # A function version's logical id ends in the hash of the function's code, which every edit of
        # lambda_src changes: the protocol is the rest.
        template = json.dumps(assembly.get_stack_by_name(stack).template)
        template = re.sub(r"(CurrentVersion[0-9A-F]{8})[0-9a-f]{32}", r"\1<code-hash>", template)
        by_id = state_machine_definitions(json.loads(template))
        (found[folder],) = [d for lid, d in by_id.items() if re.fullmatch(f"{logical_id}[0-9A-F]{{8}}", lid)]
    return found


def differences(folder: Path, generated: dict[str, str]) -> list[str]:
    """A unified diff for each file that differs from its golden one, is new, or is no longer generated."""
    golden = {path.name: path.read_text(encoding="utf-8") for path in folder.glob("*")} if folder.is_dir() else {}
    found: list[str] = []
    for name in sorted(golden.keys() | generated.keys()):
        if golden.get(name) != generated.get(name):
            before, after = golden.get(name, ""), generated.get(name, "")
            found += difflib.unified_diff(
                before.splitlines(keepends=True),
                after.splitlines(keepends=True),
                fromfile=f"golden {folder.name}/{name}" if name in golden else "/dev/null (a new state)",
                tofile=f"generated {folder.name}/{name}" if name in generated else "/dev/null (no longer generated)",
            )
    return found


@pytest.mark.parametrize("folder", MACHINES)
def test_the_generated_states_match_their_golden_files(definitions, folder, request):
    generated = protocol_files(definitions[folder])
    if request.config.getoption("--snapshot-update"):
        shutil.rmtree(GOLDEN / folder, ignore_errors=True)
        (GOLDEN / folder).mkdir(parents=True)
        for name, text in generated.items():
            (GOLDEN / folder / name).write_text(text, encoding="utf-8")
    diff = differences(GOLDEN / folder, generated)
    if diff:
        pytest.fail(f"the protocol of {folder!r} changed (if meant: {REGENERATE}):\n" + "".join(diff), pytrace=False)


def test_every_golden_folder_is_a_machine_of_the_test(request):
    if request.config.getoption("--snapshot-update"):
        for folder in GOLDEN.glob("*"):
            if folder.name not in MACHINES:
                shutil.rmtree(folder)
    stale = sorted(path.name for path in GOLDEN.glob("*") if path.name not in MACHINES)
    assert not stale, f"golden folders of no machine of MACHINES: {stale} ({REGENERATE} removes them)"


def parsed(expression: str) -> Any:
    """jsonata-python's parse of ``expression``, as plain values: positions left out."""

    def shape(node: Any, within: tuple[int, ...]) -> Any:
        if isinstance(node, Parser.Symbol):
            if id(node) in within:
                return "<cycle>"
            skipped = ("_outer_instance", "position")
            return {name: shape(value, (*within, id(node))) for name, value in vars(node).items() if name not in skipped}
        if isinstance(node, (list, tuple)):
            return [shape(item, within) for item in node]
        if isinstance(node, dict):
            return {name: shape(value, within) for name, value in node.items()}
        return node

    return shape(jsonata.Jsonata(expression).ast, ())


def test_formatting_changes_no_jsonata_expression(definitions):
    expressions = {expression for definition in definitions.values() for expression in jsonata_expressions(definition)}
    assert len(expressions) > 50
    for expression in expressions:
        formatted = format_jsonata(expression)
        assert parsed(formatted) == parsed(expression), formatted
        # Whitespace outside the tokens removed, the same text: the tokens are the source's, byte for byte.
        assert "".join(t.text for t in tokens(formatted)) == "".join(t.text for t in tokens(expression))


TRICKY = [
    # A division, then a regex holding "/" in a class and an escaped "/", flags: told apart as the parser does.
    r"$a / 2 & $replace($s, /a\/b[/]+/im, '/') & $x[0] / $y",
    # Strings with escapes and the other quote, a backquoted name, a comment.
    r"""{"a\"b\u00e9\\": 'it"s', `odd name`: /* kept */ -1, 'r': [1..3], 'e': $x ?: $y ?? $z}""",
    # A function, a block, a conditional chain, a path with a predicate, a wildcard and descendants.
    "($f := function($v) { $v.*.x[$ > 1] ? 'many' : $v.**.y ? 'deep' : 'none' }; $f($$); $f(-$n))",
]


@pytest.mark.parametrize("expression", TRICKY)
def test_formatting_keeps_the_tokens_of_tricky_expressions(expression):
    for width in (100, 20):
        formatted = format_jsonata(expression, width)
        assert parsed(formatted) == parsed(expression), formatted
        assert [t.text for t in tokens(formatted)] == [t.text for t in tokens(expression)]


def test_formatting_breaks_blocks_and_what_does_not_fit():
    assert format_jsonata("($a := 1;$b := [1,2]; $a+$b[0])") == "(\n  $a := 1;\n  $b := [1, 2];\n  $a + $b[0]\n)"
    assert format_jsonata("{'k': $long_condition ? 'yes' : 'no'}", width=30) == (
        "{\n  'k': $long_condition\n    ? 'yes'\n    : 'no'\n}"
    )
