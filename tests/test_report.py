"""The report: plain lines off a terminal, a live queue table on one, and the summary tables."""

from __future__ import annotations

import io

from rich.console import Console

from minisched import runner
from minisched.report import Report


def console(terminal: bool) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, width=120, force_terminal=terminal, color_system=None), out


def test_plain_lines_for_the_events_of_interest() -> None:
    con, out = console(False)
    report = Report(con, live=False)
    report.record("queue", pod="ns/pod1", queue="activeQ", event="PodAdd")
    report.record("attempt", pod="ns/pod1")
    report.record("filter", pod="ns/pod1", node="node0", plugin="P", reason="no")
    report.record("score", pod="ns/pod1", node="node1", plugin="S", score=100)
    report.record("selected", pod="ns/pod1", node="node1")
    report.record("waiting", pod="ns/pod1", node="node1", plugins=["S"])
    report.record("bound", pod="ns/pod1", node="node1")
    assert out.getvalue().splitlines() == [
        "queue    ns/pod1: -> activeQ (PodAdd)",
        "waiting  ns/pod1: on node1, Permit by S",
        "bound    ns/pod1 -> node1",
    ]
    assert report.why("pod1", "node1") == "score 100 (S 100)"


def test_live_view_shows_each_pod_in_its_queue() -> None:
    con, out = console(True)
    with Report(con, live=True) as report:
        report.record("queue", pod="ns/a", queue="activeQ", event="PodAdd")
        report.record("queue", pod="ns/b", queue="podBackoffQ", event="NodeAdd")
        report.record("queue", pod="ns/c", queue="unschedulableQ", event="ScheduleAttemptFailure")
        report.record("waiting", pod="ns/d", node="n", plugins=["NodeNumber"])
        table = report.queue_table()
    cells = [list(column.cells) for column in table.columns]
    assert cells == [["a"], ["b"], ["c"], ["d"]]
    assert "podBackoffQ" in out.getvalue()


def test_a_step_runs_with_the_live_view() -> None:
    con, out = console(True)
    result = runner.run_step(1, report=Report(con, live=True))
    assert all(result.bindings.values())
    assert "Scheduling queue" in out.getvalue() and "scenario: created pod pod1" in out.getvalue()
