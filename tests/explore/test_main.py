"""``./dev explore`` (explore/__main__.py): exit status 0 where every promise holds, 1 with the trace where a
planted mistake breaks one."""

from __future__ import annotations

from explore.__main__ import main


def test_the_explore_command_exits_0_on_the_generated_definitions(capsys):
    assert main(["--configuration", "guard-bare", "--suite", "clock", "--ci", "--jobs", "1"]) == 0
    assert "every promise holds" in capsys.readouterr().out


def test_the_explore_command_exits_1_with_the_trace_when_a_fence_is_removed(capsys):
    assert main(["--mutation", "takeover-without-lease", "--jobs", "1"]) == 1
    out = capsys.readouterr().out
    assert "promise broken: e2 took the key over from e1, which still runs" in out
    assert "e1 Once.Extend: updateItem took effect" in out and "trace:" in out
