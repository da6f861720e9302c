"""idempotent_constructs/testing/parse_once.py: the emulator parses a definition once and builds each
execution's components afresh from it; a definition that does not parse is refused every time."""

from __future__ import annotations

import json

import pytest

from idempotent_constructs.testing import LocalEmulator

DEFINITION = json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Pass", "End": True}}})


def parse(definition: str):
    from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser

    return AmazonStateLanguageParser.parse(definition)


def test_each_parse_of_one_definition_gets_components_of_its_own_from_the_tree_parsed_once():
    with LocalEmulator():
        first_program, first_tree = parse(DEFINITION)
        second_program, second_tree = parse(DEFINITION)
    assert second_tree is first_tree
    assert second_program is not first_program and type(second_program) is type(first_program)


def test_a_definition_that_does_not_parse_is_refused_every_time():
    from moto.stepfunctions.parser.asl.parse.asl_parser import ASLParserException

    with LocalEmulator():
        for _ in range(2):
            with pytest.raises(ASLParserException):
                parse('{"StartAt": "Done", "States": {"Done": {"Type": "Pass", "End": 1}}}')
