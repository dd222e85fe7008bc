"""The report: plain lines off a terminal, a live queue table on one, and the summary tables.

Also what it prints in order (a scenario's action before what it caused; nothing after the
story's end), how wide it prints off a terminal, and that what it holds stays bounded however
many pods go through it.
"""

from __future__ import annotations

import io
import threading
from typing import Any

import pytest
from kubernetes import client, config
from rich.console import Console

from minisched import runner
from minisched.cluster import EmbeddedServer
from minisched.report import PIPE_WIDTH, NodeResources, Report, new_console
from tests.fakes import scheduler_alone_args


def console(terminal: bool) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, width=120, force_terminal=terminal, color_system=None), out


def test_plain_lines_for_the_events_of_interest() -> None:
    con, out = console(False)
    report = Report(con, live=False)
    report.follow("ns/pod1")
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


def test_the_profile_and_the_extenders_cost_are_said_from_step_14_and_15() -> None:
    con, out = console(False)
    report = Report(con, live=False)
    report.follow("ns/pod1")
    report.record("attempt", pod="ns/pod1", profile="pack")
    report.record("extender", pod="ns/pod1", extender="http://x", verb="filter", seconds=0.0042)
    report.record("selected", pod="ns/pod1", node="node1", seconds=0.0123)
    report.record("assumed", pod="ns/pod1", node="node1")
    report.record(
        "extender", pod="ns/pod1", extender="http://x", verb="bind", seconds=0.5, error="boom"
    )
    report.record("bound", pod="ns/pod1", node="node1")
    assert out.getvalue().splitlines() == [
        "extender ns/pod1: filter took 4.2 ms (http://x)",
        "assumed  ns/pod1 -> node1 (chosen in 12.3 ms)",
        "extender ns/pod1: bind took 500.0 ms (http://x), failed: boom",
        "bound    ns/pod1 -> node1 (profile pack)",
    ]


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


# --- what each step's lines say ----------------------------------------------------------------


def _bound(report: Report, pod: str, node: str, *events: tuple[str, dict[str, object]]) -> str:
    report.follow(f"ns/{pod}")
    report.record("attempt", pod=f"ns/{pod}")
    for event, fields in events:
        report.record(event, pod=f"ns/{pod}", **fields)
    report.record("selected", pod=f"ns/{pod}", node=node)
    report.record("bound", pod=f"ns/{pod}", node=node)
    return report.why(pod, node)


def test_why_says_how_the_node_was_chosen() -> None:
    report = Report(console(False)[0], live=False)
    # Step 1: no Filter, no Score.
    report.follow("ns/a")
    report.record("attempt", pod="ns/a")
    report.record("selected", pod="ns/a", node="node3", among=10)
    assert report.why("a", "node3") == "random pick among 10 nodes"
    # Step 2: Filter, then the only node left, or a random one of those left.
    only = ("feasible", {"passed": 1, "nodes": 11})
    assert _bound(report, "b", "node10", only) == "1 of 11 nodes passed Filter"
    many = ("feasible", {"passed": 11, "nodes": 11})
    assert _bound(report, "c", "node2", many) == (
        "random among the 11 of 11 nodes that passed Filter"
    )
    # Steps 3+: the scores, and a tie broken at random.
    scores = [("score", {"node": f"node{i}", "plugin": "NodeNumber", "score": 0}) for i in (5, 6)]
    assert _bound(report, "d", "node6", many, *scores) == (
        "score 0 (NodeNumber 0); 2 nodes tied, picked at random"
    )


def test_prescore_and_permit_say_what_the_plugin_did() -> None:
    con, out = console(False)
    report = Report(con, live=False)
    report.record("prescore", pod="ns/pod8", plugin="NodeNumber", key="PreScoreNodeNumber", data=8)
    report.record("permit", pod="ns/pod8", plugin="NodeNumber", wait=8, timeout=10.0)
    report.record("waiting", pod="ns/pod8", node="node8", plugins=["NodeNumber"])
    assert out.getvalue().splitlines() == [
        "prescore ns/pod8: NodeNumber wrote PreScoreNodeNumber = 8 to CycleState",
        "waiting  ns/pod8: on node8, Permit by NodeNumber (wait 8s, timeout 10s)",
    ]


def test_an_action_is_said_before_what_it_caused() -> None:
    con, out = console(False)
    report = Report(con, live=False)
    with report.announce("scenario: created node node5"):
        # The informer's thread sees the node before the create call returns.
        informer = threading.Thread(
            target=report.record,
            args=("queue",),
            kwargs={"pod": "ns/pod1", "queue": "podBackoffQ", "event": "NodeAdd"},
        )
        informer.start()
        informer.join()
    report.say("scenario: done")
    assert out.getvalue().splitlines() == [
        "scenario: created node node5",
        "queue    ns/pod1: -> podBackoffQ (NodeAdd)",
        "scenario: done",
    ]


def test_a_failed_action_is_not_said_and_holds_nothing_back() -> None:
    con, out = console(False)
    report = Report(con, live=False)
    with pytest.raises(RuntimeError), report.announce("scenario: created node node5"):
        report.record("queue", pod="ns/pod1", queue="activeQ", event="PodAdd")
        raise RuntimeError("409 AlreadyExists")
    assert out.getvalue().splitlines() == ["queue    ns/pod1: -> activeQ (PodAdd)"]


def test_after_mute_no_line_prints_but_the_state_follows() -> None:
    con, out = console(False)
    report = Report(con, live=False)
    seen: list[str] = []
    report.subscribe(lambda event, fields, line: seen.append(event))
    report.follow("ns/pod1")
    report.record("queue", pod="ns/pod1", queue="unschedulableQ", event="ScheduleAttemptFailure")
    report.say("scenario: the end")
    report.mute()
    report.record("queue", pod="ns/pod1", queue="none", event="PodDelete")
    assert out.getvalue().splitlines()[-1] == "scenario: the end"
    assert [list(c.cells) for c in report.queue_table().columns] == [[], [], [], []]
    assert seen == ["queue", "say", "queue"]


# --- off a terminal ----------------------------------------------------------------------------


def test_off_a_terminal_the_console_is_wide_or_as_wide_as_columns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # pytest captures stdout: it is not a terminal here.
    monkeypatch.delenv("COLUMNS", raising=False)
    assert not new_console().is_terminal
    assert new_console().width == PIPE_WIDTH
    monkeypatch.setenv("COLUMNS", "132")
    assert new_console().width == 132


# --- bounded memory ----------------------------------------------------------------------------


def _schedule(report: Report, pod: str, nodes: int) -> None:
    """One pod's life as step 8 records it: queued, filtered, scored, waiting, bound."""
    report.record("queue", pod=pod, queue="activeQ", event="PodAdd")
    report.record("attempt", pod=pod)
    for i in range(nodes // 2):
        report.record("filter", pod=pod, node=f"n{i}", plugin="F", reason="no")
    report.record("feasible", pod=pod, passed=nodes - nodes // 2, nodes=nodes)
    for i in range(nodes // 2, nodes):
        report.record("score", pod=pod, node=f"n{i}", plugin="S", score=i)
    report.record("selected", pod=pod, node=f"n{nodes - 1}")
    report.record("permit", pod=pod, plugin="S", wait=1, timeout=10)
    report.record("waiting", pod=pod, node=f"n{nodes - 1}", plugins=["S"])
    report.record("bound", pod=pod, node=f"n{nodes - 1}")


def _node_results(report: Report) -> int:
    return sum(len(v.filters) + len(v.scores) for v in report.pods.values())


def test_a_long_run_holds_nothing_for_the_pods_it_bound() -> None:
    """The scheduler alone: 2000 pods on 100 nodes, then 10 that stay pending."""
    report = Report(Console(file=io.StringIO(), width=120), live=False)
    for i in range(2000):
        _schedule(report, f"ns/pod{i}", 100)
    assert len(report.pods) == 0 and _node_results(report) == 0
    for i in range(10):
        pod = f"ns/pending{i}"
        report.record("attempt", pod=pod)
        report.record("unschedulable", pod=pod, message="0/100 nodes are available")
        report.record("queue", pod=pod, queue="unschedulableQ", event="ScheduleAttemptFailure")
    # A pending pod is kept for the queue table, without its per-node results.
    assert len(report.pods) == 10 and _node_results(report) == 0
    assert len(list(report.queue_table().columns[2].cells)) == 10
    for i in range(10):
        report.record("queue", pod=f"ns/pending{i}", queue="none", event="PodDelete")
    assert report.held() == {"pods": 0, "node_results": 0, "window": 0}


def test_the_window_and_the_followed_pods_keep_their_detail_and_no_more() -> None:
    report = Report(Console(file=io.StringIO(), width=120), live=False, window=16)
    report.follow("ns/story")
    _schedule(report, "ns/story", 100)
    for i in range(2000):
        _schedule(report, f"ns/pod{i}", 100)
    # The followed pod and the 16 pods attempted last, each with its 100 nodes' results.
    assert set(report.pods) == {"ns/story", *(f"ns/pod{i}" for i in range(1984, 2000))}
    assert _node_results(report) == 17 * 100
    assert report.has_decision("story") and report.has_decision("pod1999")
    assert report.why("pod1999", "n99") == "score 99 (S 99)"


def test_only_a_followed_or_recent_pod_or_a_listener_wants_per_node_detail() -> None:
    report = Report(Console(file=io.StringIO(), width=120), live=False, window=1)
    report.follow("ns/story")
    assert report.wants_detail("ns/story") and not report.wants_detail("ns/other")
    report.record("attempt", pod="ns/recent")
    assert report.wants_detail("ns/recent")
    report.record("attempt", pod="ns/next")  # the window holds one pod: the last attempted
    assert not report.wants_detail("ns/recent")
    report.subscribe(lambda event, fields, line: None)
    assert report.wants_detail("ns/other")  # a listener (the web page) sees every event


def test_the_scheduler_alone_holds_nothing_for_hundreds_of_bound_pods(
    fresh_apiserver: EmbeddedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``python -m steps.step8`` (runner._run_scheduler_alone) binding 300 pods on 20 nodes.

    Names end in no digit, so NodeNumber lets every pod through Permit at once.
    """
    pods = 300
    report = Report(Console(file=io.StringIO(), width=120), live=False)
    bound = threading.Semaphore(0)
    report.subscribe(lambda event, fields, line: event == "bound" and bound.release())
    monkeypatch.setattr(runner, "Report", lambda *args, **kwargs: report)
    args = scheduler_alone_args(fresh_apiserver.kubeconfig)
    stop = threading.Event()
    scheduler = threading.Thread(target=runner._run_scheduler_alone, args=(8, args, stop))
    scheduler.start()
    api = config.new_client_from_config(config_file=fresh_apiserver.kubeconfig)
    try:
        core = client.CoreV1Api(api)
        for i in range(20):
            core.create_node(client.V1Node(metadata=client.V1ObjectMeta(name=f"node-{i}x")))
        for i in range(pods):
            pod = client.V1Pod(
                metadata=client.V1ObjectMeta(name=f"pod-{i}x"),
                spec=client.V1PodSpec(
                    scheduler_name="minisched",
                    containers=[client.V1Container(name="pause", image="pause")],
                ),
            )
            core.create_namespaced_pod("default", pod)
        for _ in range(pods):
            assert bound.acquire(timeout=60), "the scheduler did not bind every pod"
        assert report.held() == {"pods": 0, "node_results": 0, "window": 0}
    finally:
        stop.set()
        scheduler.join(15)
        api.close()


def test_the_sampled_filter_says_which_nodes_it_checked() -> None:
    con, out = console(False)
    report = Report(con, live=False)
    # Steps before 12 record no start index: no line.
    report.record("feasible", pod="ns/a", passed=3, nodes=3)
    report.record("feasible", pod="ns/b", passed=100, nodes=200, checked=120, start=80, to_find=100)
    assert out.getvalue().splitlines() == [
        "filter   ns/b: checked 120 of 200 nodes from index 80, found 100 feasible "
        "(numFeasibleNodesToFind 100)",
    ]


def _rows(table: Any) -> list[list[str]]:
    columns = [list(c.cells) for c in table.columns]
    return [list(row) for row in zip(*columns, strict=True)]


def test_a_table_of_many_nodes_folds_its_rows() -> None:
    report = Report(console(False)[0], live=False)
    report.follow("ns/p")
    report.record("attempt", pod="ns/p")
    for i in range(3):
        report.record("filter", pod="ns/p", node=f"c{i}", plugin="NodeUnschedulable", reason="u")
    report.record("filter", pod="ns/p", node="full", plugin="NodeResourcesFit", reason="cpu")
    for i in range(20):
        report.record("score", pod="ns/p", node=f"n{i}", plugin="Fit", score=50 + i % 7)
    report.record("selected", pod="ns/p", node="n3")
    report.record("bound", pod="ns/p", node="n3")
    # The selected node and the best-scored ones (56: n6 and n13; 55: n5 and n12), the other
    # 15 in a row, and the rejected nodes counted per reason, most first.
    assert _rows(report.why_this_node("p")) == [
        ["n3", "passed", "Fit 53 <- selected"],
        ["n5", "passed", "Fit 55"],
        ["n6", "passed", "Fit 56"],
        ["n12", "passed", "Fit 55"],
        ["n13", "passed", "Fit 56"],
        ["15 more nodes", "passed", "total 50..55"],
        ["3 nodes", "NodeUnschedulable: u", ""],
        ["full", "NodeResourcesFit: cpu", ""],
    ]
    nodes = [NodeResources(f"n{i}", int(i == 4), 0, 0, 110, 4000, 2**30) for i in range(13)]
    assert [r[0] for r in _rows(report.nodes_table(nodes))] == ["n4", "12 more nodes"]
    assert len(_rows(report.nodes_table(nodes[:12]))) == 12  # 12 rows or fewer: as they are
