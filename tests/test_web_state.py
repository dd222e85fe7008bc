"""The web page's state and server without a browser: what it keeps, what it streams, where it
listens (the browser tests are in test_web_browser.py)."""

from __future__ import annotations

import fnmatch
import io
import json
import socket
import sys
import threading
import urllib.request
from importlib import resources
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from kubernetes.client import (
    V1Node,
    V1NodeSpec,
    V1ObjectMeta,
    V1Pod,
    V1PodSpec,
    V1PodStatus,
    V1Taint,
)
from rich.console import Console

from minisched import runner, steps
from minisched.clock import FakeClock
from minisched.report import Report
from minisched.web import WebError, WebPage, state
from minisched.web.state import ClusterView, Features

ROOT = Path(__file__).resolve().parent.parent


class StubInformer:
    def __init__(self) -> None:
        self.handlers: list[Any] = []

    def add_event_handler(self, handler: Any) -> None:
        self.handlers.append(handler)


def stub_scheduler(clock: FakeClock) -> SimpleNamespace:
    return SimpleNamespace(
        clock=clock,
        node_informer=StubInformer(),
        pod_informer=StubInformer(),
        responsible_for_pod=lambda p: p.spec.scheduler_name == "minisched",
    )


def quiet_report() -> Report:
    return Report(Console(file=io.StringIO(), width=200), live=False)


def node(name: str, *, unschedulable: bool = False, taints: list[V1Taint] | None = None) -> V1Node:
    return V1Node(
        metadata=V1ObjectMeta(name=name),
        spec=V1NodeSpec(unschedulable=unschedulable or None, taints=taints),
    )


def pod(name: str, node_name: str | None, scheduler: str = "minisched") -> V1Pod:
    return V1Pod(
        metadata=V1ObjectMeta(name=name, namespace="ns"),
        spec=V1PodSpec(containers=[], node_name=node_name, scheduler_name=scheduler),
    )


def read_message(stream: Any) -> dict[str, Any]:
    """The next ``data:`` message of a server-sent event stream."""
    data = []
    while True:
        line = stream.readline().decode()
        assert line, "the stream ended"
        if line.startswith("data: "):
            data.append(line[len("data: ") :].rstrip("\n"))
        elif line == "\n" and data:
            return json.loads("".join(data))


# --- the view -------------------------------------------------------------------------------------


def test_the_view_keeps_queues_rejectors_and_deadlines_as_recorded() -> None:
    clock = FakeClock()
    view = ClusterView(Features.for_step(8), now=clock.now)
    report = quiet_report()
    report.subscribe(view.on_record)
    report.record("queue", pod="ns/a", queue="activeQ", event="PodAdd")
    report.record("attempt", pod="ns/a")
    report.record("filter", pod="ns/a", node="n1", plugin="NodeUnschedulable", reason="r")
    report.record("unschedulable", pod="ns/a", message="0/1 nodes are available: r.")
    report.record(
        "queue",
        pod="ns/a",
        queue="unschedulableQ",
        event="ScheduleAttemptFailure",
        plugins=["NodeUnschedulable"],
    )
    report.record(
        "queue", pod="ns/b", queue="podBackoffQ", event="NodeAdd", deadline=clock.now() + 4
    )
    clock.advance(1.5)
    pods = {p["key"]: p for p in view.snapshot()["pods"]}
    assert pods["ns/a"]["where"] == "unschedulableQ"
    assert pods["ns/a"]["rejectors"] == ["NodeUnschedulable"]
    assert pods["ns/b"]["where"] == "podBackoffQ"
    assert pods["ns/b"]["remaining"] == 2.5  # seconds left on the scheduler's clock
    # The timeline is exactly what the terminal printed, in order.
    printed = report.console.file.getvalue().splitlines()
    assert [line["text"] for line in view.snapshot()["lines"]] == printed
    detail = view.pod_detail("a")
    assert detail is not None
    assert detail["table"] == [{"node": "n1", "filter": "NodeUnschedulable: r", "scores": []}]
    assert [a["result"] for a in detail["attempts"]] == ["0/1 nodes are available: r."]


def test_the_view_shows_nodes_cordoned_tainted_and_the_pods_bound_to_them() -> None:
    view = ClusterView(Features.for_step(8))
    nodes, pods = view.node_handler(), view.pod_handler()
    nodes.add(node("n1", unschedulable=True))
    nodes.add(node("n2", taints=[V1Taint(key="gpu", value="yes", effect="NoSchedule")]))
    pods.add(pod("mine", "n2"))
    pods.add(pod("theirs", "n2", scheduler="default-scheduler"))
    pods.add(pod("pending", None))
    got = {n["name"]: n for n in view.snapshot()["nodes"]}
    assert got["n1"]["unschedulable"] and got["n1"]["taints"] == []
    assert got["n2"]["taints"] == ["gpu=yes:NoSchedule"]
    assert got["n2"]["pods"] == [
        {"key": "ns/mine", "name": "mine", "ours": True},
        {"key": "ns/theirs", "name": "theirs", "ours": False},
    ]
    view.changes()
    pods.delete(pod("mine", "n2"))
    nodes.delete(node("n1"))
    changes = view.changes()
    assert changes is not None
    changed = {n["name"]: n for n in changes["nodes"]}
    assert changed["n1"] == {"name": "n1", "removed": True}
    assert [p["name"] for p in changed["n2"]["pods"]] == ["theirs"]
    assert view.changes() is None  # nothing since


def test_from_step_10_nodes_show_requested_and_allocatable() -> None:
    from kubernetes.client import V1Container, V1NodeStatus, V1ResourceRequirements

    view = ClusterView(Features.for_step(10))
    big = node("n1")
    big.status = V1NodeStatus(allocatable={"cpu": "4", "memory": "8Gi", "pods": "110"})
    view.node_handler().add(big)
    heavy = pod("heavy", "n1")
    heavy.spec.containers = [
        V1Container(name="c", resources=V1ResourceRequirements(requests={"cpu": "1500m"})),
        V1Container(name="d", resources=V1ResourceRequirements(requests={"memory": "1Gi"})),
    ]
    view.pod_handler().add(heavy)
    (n1,) = view.snapshot()["nodes"]
    assert n1["allocatable"] == {"cpu": 4.0, "memory": 8 * 2**30, "pods": 110.0}
    assert n1["requested"] == {"cpu": 1.5, "memory": 2**30, "pods": 1.0}
    # Before step 10 there are no requests to speak of: the page leaves them out.
    view8 = ClusterView(Features.for_step(8))
    view8.node_handler().add(big)
    assert "allocatable" not in view8.snapshot()["nodes"][0]


def test_from_step_9_assumed_pods_are_shown_until_bound_or_forgotten() -> None:
    view = ClusterView(Features.for_step(9))
    view.on_record("assumed", {"pod": "ns/a", "node": "n1"}, "")
    view.on_record("assumed", {"pod": "ns/b", "node": "n2"}, "")
    assert {p["key"]: p["assumed"] for p in view.snapshot()["pods"]} == {"ns/a": "n1", "ns/b": "n2"}
    view.on_record("bound", {"pod": "ns/a", "node": "n1"}, "bound    ns/a -> n1")
    view.on_record("forgotten", {"pod": "ns/b"}, "")
    assert {p["key"]: p["assumed"] for p in view.snapshot()["pods"]} == {"ns/a": "", "ns/b": ""}


def record_step11_preemption(report: Report) -> None:
    """Step 11's story as its scheduler records it: payments fits nowhere, preemption evicts
    batch-c on north and nominates north for payments, which waits in podBackoffQ."""
    report.record("queue", pod="ns/payments", queue="activeQ", event="PodAdd")
    report.record("attempt", pod="ns/payments")
    report.record("filter", pod="ns/payments", node="north", plugin="NodeResourcesFit", reason="r")
    report.record("preempted", pod="ns/batch-c", by="ns/payments", node="north")
    report.record("unschedulable", pod="ns/payments", message="0/1 nodes are available: r.")
    report.record("queue", pod="ns/payments", queue="podBackoffQ", event="ScheduleAttemptFailure")
    report.record("nominated", pod="ns/payments", node="north")


def nominated_pod(name: str, nominated: str | None) -> V1Pod:
    unbound = pod(name, None)
    unbound.status = V1PodStatus(nominated_node_name=nominated)
    return unbound


def test_step11_nomination_and_victim_are_on_the_pods_until_bound_and_gone() -> None:
    view = ClusterView(Features.for_step(11))
    report = quiet_report()
    report.subscribe(view.on_record)
    view.node_handler().add(node("north"))
    view.pod_handler().add(pod("batch-c", "north"))
    report.record("bound", pod="ns/batch-c", node="north")
    # An update written before the nomination reaches the informer after the event: it does
    # not clear what the event set.
    view.pod_handler().add(nominated_pod("payments", None))
    record_step11_preemption(report)
    view.pod_handler().update(None, nominated_pod("payments", None))
    pods = {p["key"]: p for p in view.snapshot()["pods"]}
    assert pods["ns/payments"]["nominated"] == "north"
    assert pods["ns/batch-c"]["preempted_by"] == "ns/payments"
    (north,) = view.snapshot()["nodes"]
    assert [p["name"] for p in north["pods"]] == ["batch-c"]  # terminating, still there
    # The victim goes; payments is bound to its nominated node, no longer only nominated.
    view.pod_handler().delete(pod("batch-c", "north"))
    view.pod_handler().update(None, nominated_pod("payments", "north"))
    report.record("bound", pod="ns/payments", node="north")
    view.pod_handler().update(None, pod("payments", "north"))
    pods = {p["key"]: p for p in view.snapshot()["pods"]}
    assert pods["ns/payments"]["nominated"] == ""
    (north,) = view.snapshot()["nodes"]
    assert [p["name"] for p in north["pods"]] == ["payments"]


def test_a_nomination_the_api_server_clears_leaves_the_card() -> None:
    # A later cycle's PostFilter found no room, or a preemptor of higher priority took the
    # node: the scheduler records no event, the pod's status loses nominatedNodeName.
    view = ClusterView(Features.for_step(11))
    report = quiet_report()
    report.subscribe(view.on_record)
    record_step11_preemption(report)

    def nominated() -> str:
        return next(p["nominated"] for p in view.snapshot()["pods"] if p["name"] == "payments")

    view.pod_handler().update(None, nominated_pod("payments", "north"))
    assert nominated() == "north"
    view.pod_handler().update(None, nominated_pod("payments", None))
    assert nominated() == ""


def test_the_latest_decision_is_the_pod_whose_cycle_ended_last() -> None:
    view = ClusterView(Features.for_step(8))
    report = quiet_report()
    report.subscribe(view.on_record)
    assert view.snapshot()["latest"] == ""  # no cycle has ended: the page says so
    report.record("queue", pod="ns/a", queue="activeQ", event="PodAdd")
    report.record("queue", pod="ns/b", queue="activeQ", event="PodAdd")
    report.record("attempt", pod="ns/a")
    assert view.snapshot()["latest"] == ""  # a cycle under way is no decision yet
    report.record("selected", pod="ns/a", node="n1")
    assert view.snapshot()["latest"] == "ns/a"
    report.record("attempt", pod="ns/b")
    report.record("unschedulable", pod="ns/b", message="0/1 nodes are available: r.")
    report.record("bound", pod="ns/a", node="n1")  # a's binding ends after b's cycle
    changes = view.changes()
    assert changes is not None and changes["latest"] == "ns/b"


def test_memory_stays_bounded_on_a_long_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(state, "MAX_PODS", 50)
    monkeypatch.setattr(state, "MAX_TABLES", 10)
    monkeypatch.setattr(state, "MAX_LINES", 100)
    view = ClusterView(Features.for_step(8))
    report = quiet_report()
    report.subscribe(view.on_record)
    report.record("queue", pod="ns/parked", queue="unschedulableQ", event="X", plugins=["P"])
    for i in range(200):
        key = f"ns/pod{i}"
        report.record("queue", pod=key, queue="activeQ", event="PodAdd")
        for _attempt in range(15):
            report.record("attempt", pod=key)
            for n in range(20):
                report.record("score", pod=key, node=f"node{n}", plugin="P", score=n)
        report.record("bound", pod=key, node="node1")
    assert len(view._pods) <= 50
    assert len(view._tables) <= 10
    assert len(view._lines) <= 100
    assert all(len(p.history) <= state.MAX_ATTEMPTS for p in view._pods.values())
    # A pod whose table is forgotten holds no per-node results either.
    assert all(not (p.filters or p.scores) for k, p in view._pods.items() if k not in view._tables)
    # Settled (bound) pods are forgotten first: the pod still parked in a queue stays.
    assert view._pods["ns/parked"].where == "unschedulableQ"


def test_steps_1_to_5_show_their_fifo_and_step_10_resources() -> None:
    # The page's one column is where the steps' FIFO puts its pods: "FIFO", as they record it.
    assert Features.for_step(1).queues == ("FIFO",)
    assert not Features.for_step(4).permit and Features.for_step(5).permit
    assert Features.for_step(6).queues == ("activeQ", "podBackoffQ", "unschedulableQ")
    assert not Features.for_step(9).resources and Features.for_step(10).resources


# --- the server -----------------------------------------------------------------------------------


@pytest.fixture
def page() -> Any:
    clock = FakeClock()
    report = quiet_report()
    page = WebPage()
    page.attach(report, stub_scheduler(clock), 8)
    page.start()
    yield page, report
    page.close()


def test_the_page_listens_on_loopback_only_and_serves_its_files(page: Any) -> None:
    web_page, _ = page
    assert web_page.url.startswith("http://127.0.0.1:")
    with urllib.request.urlopen(web_page.url, timeout=5) as resp:
        html = resp.read().decode()
    assert '<script src="/app.js">' in html
    for name in ("app.js", "style.css"):
        with urllib.request.urlopen(web_page.url + name, timeout=5) as resp:
            assert resp.status == 200 and resp.read()


def test_a_stream_starts_with_the_current_state_then_the_changes(page: Any) -> None:
    web_page, report = page
    report.record("queue", pod="ns/early", queue="activeQ", event="PodAdd")
    with urllib.request.urlopen(web_page.url + "events", timeout=10) as stream:
        snapshot = read_message(stream)
        assert snapshot["type"] == "snapshot"
        assert [p["key"] for p in snapshot["pods"]] == ["ns/early"]
        report.record("bound", pod="ns/early", node="n1")
        changes = read_message(stream)
        while not any(line["text"].startswith("bound") for line in changes["lines"]):
            changes = read_message(stream)  # the snapshot's change may come first, once more
    assert changes["type"] == "changes"
    assert changes["lines"][-1]["text"] == "bound    ns/early -> n1"
    assert [p["where"] for p in changes["pods"]] == ["bound"]


def test_a_port_in_use_is_one_clear_error(page: Any) -> None:
    web_page, _ = page
    other = WebPage(port=web_page.port)
    other.attach(quiet_report(), stub_scheduler(FakeClock()), 8)
    with pytest.raises(WebError, match=f"cannot serve the page on 127.0.0.1:{web_page.port}"):
        other.start()


def test_a_bad_web_port_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        runner.main(["8", "--web-port", "http"])
    assert exit_info.value.code == 2
    assert "not a port number: 'http'" in capsys.readouterr().err


def test_no_file_of_the_page_fetches_anything_from_the_internet() -> None:
    static = resources.files("minisched.web").joinpath("static")
    for name in ("index.html", "app.js", "style.css"):
        text = static.joinpath(name).read_text()
        assert "http://" not in text and "https://" not in text, name
        assert "//cdn" not in text and "@import" not in text, name


def test_the_package_ships_the_page() -> None:
    """pyproject.toml's package data covers every file of minisched/web/static."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        tomllib = pytest.importorskip("tomli")
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["minisched.web"]
    files = sorted(p.name for p in (ROOT / "minisched" / "web" / "static").iterdir())
    assert files == ["app.js", "index.html", "style.css"]
    for name in files:
        assert any(fnmatch.fnmatch(f"static/{name}", pattern) for pattern in patterns), name


def test_hold_ends_on_a_ctrl_c_that_an_earlier_call_lost() -> None:
    # The runner's SIGINT handler sets the event; a KeyboardInterrupt that turned into a C
    # extension's error on its way was handled, so only the event tells of it. hold() must
    # not wait for a second Ctrl-C (the run hung at "the live page stays" in a full suite).
    web_page = WebPage()
    interrupted = threading.Event()
    interrupted.set()
    with pytest.raises(KeyboardInterrupt):
        web_page.hold(interrupted)
    web_page.release()
    web_page.hold(threading.Event())  # released: returns at once


def test_the_port_is_free_again_after_close() -> None:
    web_page = WebPage()
    web_page.attach(quiet_report(), stub_scheduler(FakeClock()), 8)
    web_page.start()
    port = web_page.port
    web_page.close()
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))


@pytest.mark.parametrize("step", [s.number for s in steps.built()])
def test_every_built_step_has_a_screenshot_at_the_end_of_its_chapter(step: int) -> None:
    """``hack/screenshots.py N`` makes docs/img/stepN-web.png; the chapter links it."""
    path = ROOT / "docs" / "img" / f"step{step}-web.png"
    assert path.is_file(), (
        f"no {path.name}: run .nox/minisched/bin/python hack/screenshots.py {step}"
    )
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"(img/{path.name})" in steps.get(step).chapter.read_text()
