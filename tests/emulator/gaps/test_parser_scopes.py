"""testing.gaps.parser_scopes: each definition parser keeps its own stack of query languages; moto's
parsers share one, so concurrent parses of JSONata and JSONPath states upset each other."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor


def test_executions_that_parse_jsonata_and_jsonpath_states_at_once_all_run(emulator):
    definition = {
        "StartAt": "Native",
        "States": {
            "Native": {"Type": "Pass", "QueryLanguage": "JSONata", "Output": "{% $states.input %}", "Next": "Classic"},
            "Classic": {"Type": "Pass", "Parameters": {"echo.$": "$"}, "End": True},
        },
    }
    with ThreadPoolExecutor(max_workers=8) as pool:
        executions = list(pool.map(lambda n: emulator.run_definition(definition, {"n": n}), range(16)))
    assert [e.output for e in executions] == [{"echo": {"n": n}} for n in range(16)]


def test_each_parser_has_its_own_stack_and_without_the_workaround_all_share_one(emulator):
    # The race itself is timing-dependent (and leaves an execution RUNNING for ever), so the moto side
    # is shown by its cause: one list object behind every parser.
    from moto.stepfunctions.parser.asl.parse.preprocessor import Preprocessor

    def stacks():
        first, second = Preprocessor(), Preprocessor()
        return first._query_language_per_scope, second._query_language_per_scope

    own = stacks()
    with emulator.without_workaround("parser_scopes"):
        shared = stacks()
    assert own[0] is not own[1]
    assert shared[0] is shared[1]
