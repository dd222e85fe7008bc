"""One interpreter, two views: the terminal report and the web page read a recorded run's events
through minisched/podstate.py, so at every event they agree on where each pod is, and at the end
on where it went and why."""

from __future__ import annotations

import io
from typing import Any

import pytest
from rich.console import Console

from minisched import runner
from minisched.podstate import FIFO, QUEUES, WAITING, PodState
from minisched.report import Report
from minisched.web.state import ClusterView, Features
from tests.conftest import built_steps

Event = tuple[str, dict[str, Any]]

# A FIFO (step 1), the three queues (step 6), preemption's nominations and victims (step 11).
STEPS = [s for s in built_steps(1) if s in (1, 6, 11)]


def quiet_report() -> Report:
    return Report(Console(file=io.StringIO(), width=200), live=False)


def recorded_run(step: int) -> list[Event]:
    """Every event step ``step``'s scenario records, as the report's listeners get them."""
    report = quiet_report()
    events: list[Event] = []
    report.subscribe(lambda event, fields, line: events.append((event, dict(fields))))
    runner.run_step(step, embedded=True, report=report)
    return events


def terminal_columns(report: Report) -> dict[str, list[str]]:
    """The live queue table, column by column (the Permit column named as the page names it)."""
    columns = report.queue_table().columns
    named = {"waiting on Permit": WAITING}
    cells = {named.get(str(c.header), str(c.header)): [str(x) for x in c.cells] for c in columns}
    return {name: [pod for pod in pods if pod] for name, pods in cells.items() if any(pods)}


def page_columns(view: ClusterView) -> dict[str, list[str]]:
    """The page's queue panel: the step's queues and the pods waiting on Permit."""
    snapshot = view.snapshot()
    features = snapshot["features"]
    names = [*features["queues"], *([WAITING] if features["permit"] else [])]
    columns = {n: sorted(p["name"] for p in snapshot["pods"] if p["where"] == n) for n in names}
    return {n: pods for n, pods in columns.items() if pods}


def replay(step: int, events: list[Event]) -> tuple[Report, ClusterView]:
    """Feed the events to a report and a page, checking after each that they show the same
    queues."""
    report, view = quiet_report(), ClusterView(Features.for_step(step))
    report.subscribe(view.on_record)
    for n, (event, fields) in enumerate(events):
        pod = str(fields.get("pod", ""))
        if pod:
            report.follow(pod)  # keep every pod's view, as the report keeps a scenario's pods
        report.record(event, **fields)
        assert terminal_columns(report) == page_columns(view), (n, event, fields)
    return report, view


@pytest.mark.parametrize("step", STEPS, ids=[f"step{n}" for n in STEPS])
def test_the_report_and_the_page_agree_on_a_recorded_run(step: int) -> None:
    events = recorded_run(step)
    assert any(e == "queue" for e, _ in events)
    report, view = replay(step, events)
    pods = {p["key"]: p for p in view.snapshot()["pods"]}
    for key, state in report.pods.items():
        page = pods[key]
        assert (page["where"], page["node"], page["message"]) == (
            state.where,
            state.node,
            state.message,
        ), key
        assert page["node"] == report.bound_node(key)
        detail = view.pod_detail(key)
        assert detail is not None
        # The page's Filter/Score rows are the terminal's "why this node" table's.
        rows = [[str(c) for c in col.cells] for col in report.why_this_node(key).columns]
        assert [r["node"] for r in detail["table"]] == rows[0], key
        assert [r["filter"] for r in detail["table"]] == rows[1], key


def test_a_pod_is_where_its_last_event_put_it() -> None:
    pod = PodState()
    pod.apply("queue", {"queue": FIFO, "event": "PodAdd"})
    assert pod.where == FIFO and pod.queued
    pod.apply("attempt", {})
    assert pod.where == "scheduling" and not pod.queued and pod.attempts == 1
    pod.apply("filter", {"node": "n1", "plugin": "P", "reason": "r"})
    pod.apply("unschedulable", {"message": "0/1 nodes are available"})
    assert pod.where == "pending" and pod.rejectors == ["P"]
    pod.apply("queue", {"queue": QUEUES[2], "event": "ScheduleAttemptFailure", "plugins": ["P"]})
    assert pod.where == "unschedulableQ"
    pod.apply("attempt", {})
    assert not pod.filters and not pod.rejectors and pod.message == ""
    pod.apply("selected", {"node": "n2"})
    pod.apply("waiting", {"node": "n2", "plugins": ["Q"], "deadline": 5.0})
    assert pod.where == WAITING and pod.queued and pod.deadline == 5.0
    pod.apply("bound", {"node": "n2"})
    assert (pod.where, pod.node, pod.deadline, pod.permit_plugins) == ("bound", "n2", None, [])
