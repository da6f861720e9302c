"""_jsonata/java_regex.py: every regular expression the library generates keeps the rule java.util.regex
needs (AWS's JSONata runs on the JVM), and matches in Java what it matches in JavaScript (jsonata-js) and
in the emulator's Python, also on inputs long enough to overflow a JVM stack with the patterns it replaced.

Java's side is our own small program (tests/_jsonata/java/RegexMatches.java), compiled here with javac and
run on a 512 KB thread stack, half the JVM's default."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from idempotent_constructs._jsonata import java_regex, sizes
from idempotent_constructs._jsonata import key_expressions as jsonata_key
from tests import every_definition
from tests.conftest import ROOT

GOLDEN = ROOT / "tests" / "golden"
STACK = 512 * 1024
# The patterns the library used before, each of which overflowed a 1 MB JVM stack (issue 40).
REPLACED = [
    r"(?:[\ud800-\udbff][\udc00-\udfff]|[\s\S]){1,2500}",
    r"\[(\"(?:[^\"\x5c]|\x5c.)*\")\]:",
    r"\"[^\"\x5c]*(?:\x5c.[^\"\x5c]*)*\"",
]


def generated_patterns() -> list[str]:
    """Every regular expression literal of the generated protocol (its golden files) and of the key and
    payload expressions (the states' texts are shared, whatever the key)."""
    expressions = [
        jsonata_key.record_id_and_validation("ns", "paths", ["$.id"], "$states.input", "jsonata", "$states.input.body"),
        jsonata_key.text_digest("$t"),
        sizes.payload_bytes("$states.input"),
    ]
    for path in sorted(GOLDEN.rglob("*.jsonata")):
        expressions += re.findall(r"\{%(.*?)%\}", path.read_text(), flags=re.DOTALL)
    return list(dict.fromkeys(pattern for text in expressions for pattern in java_regex.expression_patterns(text)))


def subjects() -> list[str]:
    """Short texts of every kind the patterns meet, and long ones: a 300,000-character JSON text of
    strings full of escapes, emoji and quotes, and runs of escapes and of pairs."""
    short = [
        "",
        "plain",
        'a "quoted" \\ text',
        '{"a":[1,{"b":"x\\"y"}],"c":"\\\\"}',
        "\b\f\n\r\t\u0001\u001f\u007f\u2028\u2029",
        "😀x😀",
        "\ud800",
        "a\udc00b",
        "\ud83d\ude00\ud83d",
        "States.QueryEvaluationError threw an error during evaluation: Stack overflow",
        "1.5e-7,2,-3,[1e+21]",
    ]
    record = json.dumps({"text": 'é"\\😀' * 40, "n": [1.25, -7, 3e-9], "name": "x" * 500}, ensure_ascii=False)
    long = "[" + ",".join([record] * 120) + "]"
    return [*short, long, '\\"' * 50_000, "😀" * 60_000, "x" * 300_000]


@pytest.fixture(scope="module")
def java(tmp_path_factory: pytest.TempPathFactory) -> Path:
    javac = shutil.which("javac")
    assert javac, "javac (a JDK) is needed: the rule is checked against java.util.regex itself"
    classes = tmp_path_factory.mktemp("java")
    subprocess.run([javac, "-d", str(classes), str(Path(__file__).parent / "java" / "RegexMatches.java")], check=True)
    return classes


def _hex(text: str) -> str:
    return text.encode("utf-16-be", "surrogatepass").hex()


def in_java(classes: Path, patterns: list[str], texts: list[str]) -> list[list[str]]:
    lines = [f"P {_hex(pattern)}" for pattern in patterns] + [f"S {_hex(text)}" for text in texts]
    done = subprocess.run(
        ["java", "-cp", str(classes), "RegexMatches", str(STACK)],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    results = done.stdout.split("\n")[:-1]
    return [results[index : index + len(texts)] for index in range(0, len(results), len(texts))]


_NODE = """
const {patterns, texts} = JSON.parse(require('fs').readFileSync(0, 'utf8'));
const hex = s => Array.from({length: s.length}, (_, i) => s.charCodeAt(i).toString(16).padStart(4, '0')).join('');
const unhex = h => { let s = ''; for (let i = 0; i < h.length; i += 4) s += String.fromCharCode(parseInt(h.slice(i, i + 4), 16)); return s; };
const out = patterns.map(p => texts.map(t => {
  const text = unhex(t);
  return Array.from(text.matchAll(new RegExp(unhex(p), 'g')), m => `${m.index}:${hex(m[0])}`).join(' ');
}));
process.stdout.write(JSON.stringify(out));
"""


def in_javascript(patterns: list[str], texts: list[str]) -> list[list[str]]:
    payload = json.dumps({"patterns": [_hex(p) for p in patterns], "texts": [_hex(t) for t in texts]})
    done = subprocess.run(["node", "-e", _NODE], input=payload, capture_output=True, text=True, check=True, timeout=600)
    return json.loads(done.stdout)


def in_python(patterns: list[str], texts: list[str]) -> list[list[str]]:
    """As the emulator's engine (jsonata-python, Python's re) matches; offsets counted in UTF-16 units."""

    def units(text: str) -> int:
        return len(text.encode("utf-16-le", "surrogatepass")) // 2

    def decoded(text: str) -> str:  # Python holds a pair as one code point, as a JSON reader gives it
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "surrogatepass")

    return [
        [" ".join(f"{units(decoded(t)[: m.start()])}:{_hex(m.group())}" for m in re.finditer(pattern, decoded(t))) for t in texts]
        for pattern in patterns
    ]


def test_every_generated_regular_expression_keeps_the_rule():
    patterns = generated_patterns()
    assert len(patterns) >= 6  # the digest's runs, the quote's, the native bounds', payload_bytes', the cause's
    assert {pattern: java_regex.nested_problems(pattern) for pattern in patterns} == {pattern: [] for pattern in patterns}


@pytest.mark.parametrize("pattern", REPLACED)
def test_each_replaced_pattern_breaks_the_rule(pattern):
    assert java_regex.nested_problems(pattern)


@pytest.mark.parametrize(
    ("pattern", "broken"),
    [
        ('[^"]*', False),  # a run of one class: a loop
        ("[\\s\\S]{1,2500}", False),
        ("(?:ab){1,64}", False),  # a group repeated a small constant number of times
        ("(?:ab){1,65}", True),
        ("(?:ab)*", True),  # a body of more than one character
        ("(?:a|b)+", True),  # an alternation
        ("x(?:y(?:a|b)*)", True),  # found in a group
        ("([ab])*", True),  # any group: its iterations may differ in width (a pair is two units)
    ],
)
def test_the_rule_allows_runs_of_one_class_and_small_repetitions_of_groups(pattern, broken):
    assert bool(java_regex.nested_problems(pattern)) == broken


def test_java_javascript_and_python_match_alike_and_java_never_overflows(java, node_bin):
    patterns, texts = generated_patterns(), subjects()
    found = in_java(java, patterns, texts)
    assert not [pattern for pattern, results in zip(patterns, found, strict=True) if "OVERFLOW" in results]
    assert found == in_javascript(patterns, texts) == in_python(patterns, texts)


def test_the_replaced_patterns_overflow_the_same_stack(java):
    # What the test above would have caught: each pattern the library used before overflows on these inputs.
    found = in_java(java, REPLACED, ['["' + "x" * 3000 + '"]:', "😀" * 3000, '"' + '\\"' * 3000 + '"'])
    assert all("OVERFLOW" in results for results in found)


def test_a_definition_whose_regular_expression_breaks_the_rule_fails_the_test_that_synthesized_it(monkeypatch):
    definition = {
        "QueryLanguage": "JSONata",
        "StartAt": "Clean",
        "States": {"Clean": {"Type": "Pass", "Output": "{% $replace($states.input.s, /(?:a|b)*/, '') %}", "End": True}},
    }
    monkeypatch.setattr(every_definition, "_SEEN", set())
    template = {
        "Resources": {
            "Cleaner": {"Type": "AWS::StepFunctions::StateMachine", "Properties": {"DefinitionString": json.dumps(definition)}}
        }
    }
    from idempotent_constructs._readers import assembly

    with pytest.raises(AssertionError, match=r"Cleaner.*\(\?:a\|b\)"):
        assembly.state_machine_definitions(template)
