"""testing.events: Step Functions' status-change events reach the rules that match them, for Standard
executions only, as on AWS."""

from __future__ import annotations

import json
import threading

import pytest


def test_express_executions_send_no_status_change_events_as_on_aws(behaviour, emulator, unique):
    """The harness delivered status-change events for every execution; AWS sends none for Express.
    A rule matching every Step Functions event, aimed at the release function (which logs each event
    it handles), hears a Standard execution end and not an Express one that ended before it."""
    import json
    import time

    events = emulator.client("events")
    function = behaviour.physical_id("AWS::Lambda::Function", "IdempotencyReleaseFunction")
    rule = f"every-execution-{unique}"
    events.put_rule(Name=rule, EventPattern=json.dumps({"source": ["aws.states"]}))
    events.put_targets(
        Rule=rule, Targets=[{"Id": "release", "Arn": f"arn:aws:lambda:{emulator.region}:123456789012:function:{function}"}]
    )
    try:
        express = behaviour.run("ExpressShortLease", {"no_id": unique})  # fails at once: KeyMissing
        standard = behaviour.run("Flaky", {"order": {"id": unique}, "fail": True})
        assert (express.status, standard.status) == ("FAILED", "FAILED")

        def logged(arn):
            return any(arn in line for lines in emulator.lambdas.logs.values() for line in lines)

        deadline = time.monotonic() + 20
        while not logged(standard.arn) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert logged(standard.arn) and not logged(express.arn)  # events are delivered in order
    finally:
        events.remove_targets(Rule=rule, Ids=["release"])
        events.delete_rule(Name=rule)


class GatedTarget:
    """A rule that hears only the named executions end, aimed at the Sleepy function, whose
    invocations wait until ``opened`` is set, then note whose event they carry (``delivered``)."""

    def __init__(self, behaviour, emulator, monkeypatch, names):
        self.opened, self.delivered = threading.Event(), []
        self.events, self.rule = emulator.client("events"), f"gated-{names[0]}"
        function = behaviour.physical_id("AWS::Lambda::Function", "Sleepy")
        pattern = {"source": ["aws.states"], "detail": {"name": names}}
        self.events.put_rule(Name=self.rule, EventPattern=json.dumps(pattern))
        arn = f"arn:aws:lambda:{emulator.region}:123456789012:function:{function}"
        self.events.put_targets(Rule=self.rule, Targets=[{"Id": "sleepy", "Arn": arn}])
        invoke = emulator.lambdas.invoke

        def gated(model, event):
            if model.function_name == function:
                self.opened.wait(timeout=60)
                self.delivered.append(event["detail"]["name"])
            return invoke(model, event)

        monkeypatch.setattr(emulator.lambdas, "invoke", gated)

    def remove(self):
        self.opened.set()
        self.events.remove_targets(Rule=self.rule, Ids=["sleepy"])
        self.events.delete_rule(Name=self.rule)


def test_settle_raises_when_an_event_is_still_undelivered_after_its_timeout(behaviour, emulator, monkeypatch, unique):
    target = GatedTarget(behaviour, emulator, monkeypatch, [unique])
    try:
        behaviour.run("Echo", {"id": unique}, name=unique)
        with pytest.raises(TimeoutError, match=r"still undelivered after 0\.5 s"):
            emulator.settle(timeout=0.5)
        target.opened.set()
        emulator.settle()
        assert target.delivered == [unique]
    finally:
        target.remove()


def test_dropped_raises_when_events_are_still_undelivered_after_the_block(behaviour, emulator, monkeypatch, unique):
    target = GatedTarget(behaviour, emulator, monkeypatch, [unique])
    try:
        behaviour.run("Echo", {"id": unique}, name=unique)  # ended before the block: its event is delivered
        with pytest.raises(TimeoutError, match=r"still undelivered after 0\.5 s"):  # noqa: SIM117
            with emulator.status_change_events.dropped(settle_timeout=0.5):
                pass
        target.opened.set()
        emulator.settle()
        assert target.delivered == [unique]
    finally:
        target.remove()


def test_an_event_is_dropped_when_its_execution_ends_inside_dropped_whenever_it_is_delivered(
    behaviour, emulator, monkeypatch, unique
):
    """The delivery thread is held up by one event, so events of executions that ended before the
    block are delivered while it runs, and those of executions that ended inside it afterwards."""
    before, blocking, inside = f"{unique}-before", f"{unique}-blocking", f"{unique}-inside"
    target = GatedTarget(behaviour, emulator, monkeypatch, [blocking, before, inside])
    try:
        behaviour.run("Echo", {"id": blocking}, name=blocking)  # its event holds the delivery thread up
        behaviour.run("Echo", {"id": before}, name=before)
        with emulator.status_change_events.dropped():
            behaviour.run("Echo", {"id": inside}, name=inside)
            threading.Timer(0.5, target.opened.set).start()  # delivering resumes around the block's end
        assert target.delivered == [blocking, before]
    finally:
        target.remove()
