"""testing.events: Step Functions' status-change events reach the rules that match them, for Standard
executions only, as on AWS."""

from __future__ import annotations


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
