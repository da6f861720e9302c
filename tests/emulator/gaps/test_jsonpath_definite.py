"""testing.gaps.jsonpath_definite: a JSONPath read takes its shape from the path, as on AWS (Jayway
JsonPath): a definite path (single names and single indexes) yields the value, any other path the
list of its matches, empty when none. moto alone lists a value read through an array index
(``$[0].messageId`` gives ``["m1"]``) and unwraps an indefinite path that matches once."""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Any

import pytest

MESSAGES = [{"messageId": "m1"}, {"messageId": "m2"}]
QUERY_RESULT = {"Count": 1, "Items": [{"id": {"S": "a"}, "n": {"N": "1"}}]}


def picked(emulator: Any, path: str, payload: Any) -> Any:
    """What a JSONPath Pass state's ``"picked.$": path`` reads from ``payload``."""
    definition = {"StartAt": "Pick", "States": {"Pick": {"Type": "Pass", "Parameters": {"picked.$": path}, "End": True}}}
    execution = emulator.run_definition(definition, payload)
    assert execution.status == "SUCCEEDED", (execution.error, execution.cause)
    return execution.output["picked"]


def first_message_branch(emulator: Any) -> Any:
    """The execution of a Pass that reads the first message's id and a Choice on that id."""
    definition = {
        "StartAt": "Read",
        "States": {
            "Read": {"Type": "Pass", "Parameters": {"id.$": "$[0].messageId"}, "Next": "Route"},
            "Route": {
                "Type": "Choice",
                "Choices": [{"Variable": "$.id", "StringEquals": "m1", "Next": "First"}],
                "Default": "Other",
            },
            "First": {"Type": "Pass", "End": True},
            "Other": {"Type": "Pass", "End": True},
        },
    }
    return emulator.run_definition(definition, MESSAGES)


def test_a_value_read_through_an_array_index_is_the_value_so_a_choice_on_it_takes_the_right_branch(emulator):
    execution = first_message_branch(emulator)
    assert execution.entered_states() == ["Read", "Route", "First"]
    assert execution.output == {"id": "m1"}


def test_without_the_workaround_moto_reads_a_one_item_list_and_the_choice_takes_the_default(emulator):
    with emulator.without_workaround("jsonpath_definite"):
        execution = first_message_branch(emulator)
    assert execution.entered_states() == ["Read", "Route", "Other"]
    assert execution.output == {"id": ["m1"]}


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("$.Items[0].id.S", "a"),
        ("$.Items[0].id", {"S": "a"}),
        ("$.Items[-1].n.N", "1"),
        ("$['Items'][0]['id']", {"S": "a"}),
        ("$.Count", 1),
    ],
)
def test_a_definite_path_into_a_query_result_yields_the_value(emulator, path, value):
    assert picked(emulator, path, QUERY_RESULT) == value


def test_without_the_workaround_moto_lists_a_value_whose_parent_step_is_an_index(emulator):
    # moto lists a match when the step just above it is an array index: one level deeper it guesses right.
    with emulator.without_workaround("jsonpath_definite"):
        assert picked(emulator, "$.Items[0].id", QUERY_RESULT) == [{"S": "a"}]
        assert picked(emulator, "$.Items[0].id.S", QUERY_RESULT) == "a"


@pytest.mark.parametrize(
    ("path", "payload", "matches"),
    [
        ("$[*].messageId", MESSAGES[:1], ["m1"]),
        ("$..id", {"a": {"id": 1}}, [1]),
        ("$.d..a", {"d": {"x": {"a": [1, 2]}}}, [[1, 2]]),
        ("$.list[?(@.keep)]", {"list": [{"keep": True}, {"keep": False}, {"other": 1}]}, [{"keep": True}, {"keep": False}]),
        ("$.list[?(@.n == 2)].name", {"list": [{"n": 1, "name": "x"}, {"n": 2, "name": "y"}]}, ["y"]),
        ("$.a[0:2]", {"a": [1, 2, 3, 4]}, [1, 2]),
        ("$.a[0,2]", {"a": [1, 2, 3, 4]}, [1, 3]),
    ],
)
def test_an_indefinite_path_yields_the_list_of_its_matches_even_of_one(emulator, path, payload, matches):
    assert picked(emulator, path, payload) == matches


def test_without_the_workaround_moto_unwraps_a_deep_scan_that_matches_once(emulator):
    with emulator.without_workaround("jsonpath_definite"):
        assert picked(emulator, "$..id", {"a": {"id": 1}}) == 1


@pytest.mark.parametrize(
    ("path", "payload"),
    [
        ("$.list[?(@.n == 3)]", {"list": [{"n": 1}]}),
        ("$..missing", {"a": {"id": 1}}),
        ("$.items[*].id", {}),
        ("$.items[1:]", {}),
    ],
)
def test_an_indefinite_path_that_matches_nothing_yields_an_empty_list(emulator, path, payload):
    assert picked(emulator, path, payload) == []


def test_without_the_workaround_moto_fails_a_filter_that_matches_nothing(emulator):
    definition = {
        "StartAt": "Pick",
        "States": {"Pick": {"Type": "Pass", "Parameters": {"picked.$": "$.list[?(@.n == 3)]"}, "End": True}},
    }
    with emulator.without_workaround("jsonpath_definite"):
        execution = emulator.run_definition(definition, {"list": [{"n": 1}]})
    assert (execution.status, execution.error) == ("FAILED", "States.Runtime")


@pytest.mark.parametrize(
    ("path", "payload"),
    [
        ("$.a[5]", {"a": [1, 2]}),
        ("$[0].messageId", {"messageId": "m1"}),
        ("$[1:5]", {}),  # a slice of what is there and is no array, as moto kept from LocalStack's AWS-validated test
    ],
)
def test_a_path_that_reaches_nothing_it_can_read_fails_the_state_with_states_runtime(emulator, path, payload):
    definition = {"StartAt": "Pick", "States": {"Pick": {"Type": "Pass", "Parameters": {"picked.$": path}, "End": True}}}
    execution = emulator.run_definition(definition, payload)
    assert (execution.status, execution.error) == ("FAILED", "States.Runtime")
    assert f"The JSONPath '{path}' specified for the field 'picked.$' could not be found" in execution.cause


def test_a_map_iterates_the_items_its_items_path_reads_through_an_index(emulator):
    definition = {
        "StartAt": "Each",
        "States": {
            "Each": {
                "Type": "Map",
                "ItemsPath": "$.batches[0].items",
                "Iterator": {"StartAt": "Keep", "States": {"Keep": {"Type": "Pass", "End": True}}},
                "End": True,
            }
        },
    }
    payload = {"batches": [{"items": ["x", "y", "z"]}]}
    assert emulator.run_definition(definition, payload).output == ["x", "y", "z"]
    with emulator.without_workaround("jsonpath_definite"):
        # moto's ItemsPath gives a list of the one list: one iteration, over all three items.
        assert emulator.run_definition(definition, payload).output == [["x", "y", "z"]]


def test_input_path_and_output_path_read_through_an_index(emulator):
    definition = {
        "StartAt": "Narrow",
        "States": {"Narrow": {"Type": "Pass", "InputPath": "$.batches[0].job", "OutputPath": "$.parts[1].name", "End": True}},
    }
    payload = {"batches": [{"job": {"parts": [{"name": "x"}, {"name": "y"}]}}]}
    assert emulator.run_definition(definition, payload).output == "y"
    with emulator.without_workaround("jsonpath_definite"):
        # moto's InputPath gives a list of the one job, in which the OutputPath finds no parts.
        execution = emulator.run_definition(definition, payload)
    assert (execution.status, execution.error) == ("FAILED", "States.Runtime")


def test_intrinsic_function_arguments_read_paths_the_same_way(emulator):
    payload = [{"id": "x", "tags": ["a", "b"]}]
    assert picked(emulator, "States.Format('{}', $[0].id)", payload) == "x"
    assert picked(emulator, "States.ArrayLength($[0].tags)", payload) == 2
    assert picked(emulator, "States.ArrayContains($..id, 'x')", payload) is True
    with emulator.without_workaround("jsonpath_definite"):
        assert picked(emulator, "States.Format('{}', $[0].id)", payload) == "[x]"


def moto_readers() -> dict[str, Any]:
    """Every module of moto's Step Functions interpreter whose source names ``extract_json``, and the
    ``extract_json`` it holds. (Not every module of the package imports: some are dead code.)"""
    package = importlib.import_module("moto.stepfunctions.parser")
    root = Path(package.__file__).parent
    readers = {}
    for source in sorted(root.rglob("*.py")):
        if re.search(r"\bextract_json\b", source.read_text(encoding="utf-8")):
            name = ".".join((package.__name__, *source.relative_to(root).with_suffix("").parts))
            readers[name] = importlib.import_module(name).extract_json
    return readers


def test_every_module_of_moto_that_reads_jsonpath_reads_through_the_workaround(emulator):
    from moto.stepfunctions.parser.asl.utils import json_path

    readers = moto_readers()
    with emulator.without_workaround("jsonpath_definite"):
        original = json_path.extract_json
    assert len(readers) == 8
    assert [name for name, reader in readers.items() if reader is original] == []
