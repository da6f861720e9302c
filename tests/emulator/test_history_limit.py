"""Emulator: the history events a guarded inline Map writes per item are those synth estimates
(guard/history.py), counted in a real execution's history."""

from __future__ import annotations

import re

from aws_cdk import App, Stack
from aws_cdk import aws_stepfunctions as sfn

from idempotent_constructs.guard import history
from idempotent_constructs.testing import state_machine_definitions
from tests.guard.test_history import guarded_rows


def test_a_guarded_inline_map_writes_the_events_an_item_that_synth_estimates(emulator, unique):
    stack = Stack(App(), "HistoryLimit")
    sfn.StateMachine(stack, "Import", definition_body=sfn.DefinitionBody.from_chainable(guarded_rows(stack)))
    deployment = emulator.deploy_stack(stack)
    (definition,) = state_machine_definitions(deployment.template).values()
    (note,) = history.notes(definition, express=False)
    estimated = int(re.search(r"about (\d+) history events an item", note)[1])
    events = {
        count: len(deployment.run("Import", {"rows": [{"id": f"{unique}-{count}-{n}"} for n in range(count)]}).history)
        for count in (4, 12)
    }
    assert (events[12] - events[4]) / 8 == estimated == 20
