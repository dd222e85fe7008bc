"""The Filter extension point and NodeUnschedulable (steps 2+)."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes.client import V1Taint, V1Toleration

from tests.conftest import built_steps, step_module
from tests.fakes import (
    add_nodes,
    cycle_args,
    drive,
    make_node,
    make_pod,
    new_framework,
    node_arg,
    offline_scheduler,
    set_framework,
)

STEPS = built_steps(2)
step_param = pytest.mark.parametrize("step", STEPS, ids=lambda n: f"step{n}")


class FakeFilter:
    """A Filter plugin that rejects the listed nodes with their status and logs every call."""

    def __init__(self, name: str, reject: dict[str, Any], calls: list[tuple[str, str]]) -> None:
        self._name = name
        self.reject = reject  # node name -> Status
        self.calls = calls

    def name(self) -> str:
        return self._name

    def filter(self, *args: Any) -> Any:
        pod, node = args[-2:]  # (state,) pod, node: the state arrives with CycleState
        node = node.node() if hasattr(node, "node") else node  # a NodeInfo, with the cache
        self.calls.append((self._name, node.metadata.name))
        status = self.reject.get(node.metadata.name)
        # Any status class will do for Success: build the step's own from a rejection's.
        return status if status is not None else type(next(iter(self.reject.values())))()


def _registry(*plugins: FakeFilter) -> dict[str, Any]:
    def factory(plugin: FakeFilter) -> Any:
        return lambda args, handle: plugin

    return {p.name(): factory(p) for p in plugins}


@step_param
def test_filters_run_in_order_and_stop_at_the_first_rejection_per_node(step: int) -> None:
    fw = step_module(step, "framework")
    calls: list[tuple[str, str]] = []
    a = FakeFilter("A", {"node1": fw.Status(fw.Code.UNSCHEDULABLE, ["a says no"])}, calls)
    b = FakeFilter(
        "B",
        {
            "node1": fw.Status(fw.Code.UNSCHEDULABLE, ["b says no"]),
            "node2": fw.Status(fw.Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ["b says never"]),
        },
        calls,
    )
    fwk = new_framework(step, _registry(a, b), filter=["A", "B"])
    pod = make_pod("pod1")
    results = {
        n: fwk.run_filter_plugins(*cycle_args(step), pod, node_arg(step, make_node(n)))
        for n in ("node0", "node1", "node2")
    }
    assert calls == [
        ("A", "node0"),
        ("B", "node0"),
        ("A", "node1"),  # rejected by A: B is not asked
        ("A", "node2"),
        ("B", "node2"),
    ]
    assert results["node0"].merge().is_success()
    node1 = results["node1"].merge()
    assert (node1.code, node1.reasons, node1.failed_plugin) == (
        fw.Code.UNSCHEDULABLE,
        ["a says no"],
        "A",
    )
    node2 = results["node2"].merge()
    assert (node2.code, node2.failed_plugin) == (fw.Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "B")


@step_param
@pytest.mark.parametrize("code", ["ERROR", "WAIT", "SKIP"])
def test_a_filter_returning_anything_but_success_or_unschedulable_is_an_error(
    step: int, code: str
) -> None:
    fw = step_module(step, "framework")
    calls: list[tuple[str, str]] = []
    bad = FakeFilter("Bad", {"node0": fw.Status(fw.Code[code], ["oops"])}, calls)
    after = FakeFilter("After", {"nodeX": fw.Status(fw.Code.UNSCHEDULABLE)}, calls)
    fwk = new_framework(step, _registry(bad, after), filter=["Bad", "After"])
    node = node_arg(step, make_node("node0"))
    status = fwk.run_filter_plugins(*cycle_args(step), make_pod("pod1"), node).merge()
    assert status.code == fw.Code.ERROR
    assert status.failed_plugin == "Bad"
    assert status.message() == 'running "Bad" filter plugin: oops'
    assert calls == [("Bad", "node0")]


@step_param
def test_a_filter_error_ends_the_cycle_without_binding(step: int) -> None:
    fw = step_module(step, "framework")
    sched = offline_scheduler(step)
    bad = FakeFilter("Bad", {"node1": fw.Status(fw.Code.ERROR, ["disk on fire"])}, [])
    set_framework(sched, new_framework(step, _registry(bad), filter=["Bad"], clock=sched.clock))
    add_nodes(sched, make_node("node0"), make_node("node1"))
    sched.scheduling_queue.add(make_pod("pod1"))
    step_module(step, "schedule_one").schedule_one(sched)
    assert sched.client.bindings == []
    [error] = sched.recorder.of("error")
    assert error["message"] == 'running "Bad" filter plugin: disk on fire'
    assert sched.recorder.of("selected") == []


@step_param
def test_the_framework_rejects_unknown_plugins_and_plugins_of_the_wrong_kind(step: int) -> None:
    with pytest.raises(ValueError, match='"Nope" does not exist'):
        new_framework(step, {}, filter=["Nope"])

    class NotAFilter:
        def name(self) -> str:
            return "NotAFilter"

    # A TypeError until step 14, where every profile the framework refuses is a ValueError.
    wrong_kind = ValueError if step >= 14 else TypeError
    with pytest.raises(wrong_kind, match='plugin "NotAFilter" does not extend FilterPlugin'):
        new_framework(step, {"NotAFilter": lambda a, h: NotAFilter()}, filter=["NotAFilter"])


# --- NodeUnschedulable ------------------------------------------------------------------------

UNSCHEDULABLE_TAINT = V1Taint(key="node.kubernetes.io/unschedulable", effect="NoSchedule")


@step_param
@pytest.mark.parametrize(
    ("toleration", "tolerates"),
    [
        (
            dict(key="node.kubernetes.io/unschedulable", operator="Exists", effect="NoSchedule"),
            True,
        ),
        (dict(key="node.kubernetes.io/unschedulable", operator="Exists"), True),  # any effect
        (dict(key="node.kubernetes.io/unschedulable"), True),  # Equal (default), both values ""
        (dict(key="node.kubernetes.io/unschedulable", operator="Equal", value=""), True),
        (dict(key="node.kubernetes.io/unschedulable", operator="Equal", value="x"), False),
        (dict(operator="Exists"), True),  # empty key with Exists tolerates everything
        (dict(operator="Exists", effect="NoExecute"), False),  # ... of that effect only
        (
            dict(key="node.kubernetes.io/unschedulable", operator="Exists", effect="NoExecute"),
            False,
        ),
        (dict(key="other", operator="Exists", effect="NoSchedule"), False),
        (dict(key="node.kubernetes.io/unschedulable", operator="Bogus"), False),
    ],
)
def test_toleration_matching(step: int, toleration: dict[str, str], tolerates: bool) -> None:
    # NodeUnschedulable's module keeps ToleratesTaint until step 13 moves it to corev1.py, where
    # TaintToleration shares it.
    plugin = step_module(step, "corev1" if step >= 13 else "plugins.nodeunschedulable")
    t = V1Toleration(**toleration)
    assert plugin.tolerates_taint(t, UNSCHEDULABLE_TAINT) is tolerates
    assert plugin.tolerations_tolerate_taint([V1Toleration(key="x"), t], UNSCHEDULABLE_TAINT) is (
        tolerates
    )


@step_param
def test_node_unschedulable_filter(step: int) -> None:
    fw = step_module(step, "framework")
    module = step_module(step, "plugins.nodeunschedulable")
    plugin = module.new(None, None)
    assert plugin.name() == "NodeUnschedulable"
    pod = make_pod("pod1")
    tolerant = make_pod("tolerant", tolerations=[V1Toleration(operator="Exists")])
    args = cycle_args(step)
    cordoned = node_arg(step, make_node("node0", unschedulable=True))
    assert plugin.filter(*args, pod, node_arg(step, make_node("node0"))).is_success()
    rejected = plugin.filter(*args, pod, cordoned)
    assert rejected.code == fw.Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert rejected.reasons == ["node(s) were unschedulable"]
    assert plugin.filter(*args, tolerant, cordoned).is_success()
    unknown = plugin.filter(*args, pod, None)
    assert unknown.code == fw.Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert unknown.reasons == ["node(s) had unknown conditions"]


# --- the scheduling cycle ---------------------------------------------------------------------


def _unschedulable_cluster(sched: Any, cordoned: int, schedulable: int = 0) -> None:
    nodes = [make_node(f"node{i}", unschedulable=True) for i in range(cordoned)]
    nodes += [make_node(f"node{cordoned + i}") for i in range(schedulable)]
    add_nodes(sched, *nodes)


@step_param
def test_the_pod_goes_to_the_only_node_that_passes_and_the_report_says_why(step: int) -> None:
    sched = offline_scheduler(step)
    _unschedulable_cluster(sched, 10, 1)
    sched.scheduling_queue.add(make_pod("pod1"))
    step_module(step, "schedule_one").schedule_one(sched)
    assert drive(sched, 1)
    assert sched.client.bindings == [("default/pod1", "node10")]
    filters = sched.recorder.of("filter")
    assert {f["node"] for f in filters} == {f"node{i}" for i in range(10)}
    assert {(f["pod"], f["plugin"], f["reason"]) for f in filters} == {
        ("default/pod1", "NodeUnschedulable", "node(s) were unschedulable")
    }


@step_param
def test_a_pod_that_tolerates_the_taint_may_go_to_a_cordoned_node(step: int) -> None:
    sched = offline_scheduler(step)
    _unschedulable_cluster(sched, 10, 1)
    tolerations = [V1Toleration(key="node.kubernetes.io/unschedulable", operator="Exists")]
    sched.scheduling_queue.add(make_pod("tolerant-pod", tolerations=tolerations))
    step_module(step, "schedule_one").schedule_one(sched)
    assert drive(sched, 1)
    assert sched.recorder.of("filter") == []


@step_param
def test_no_feasible_node_is_a_fit_error_reported_everywhere(step: int) -> None:
    sched = offline_scheduler(step)
    _unschedulable_cluster(sched, 11)
    sched.scheduling_queue.add(make_pod("pod1"))
    step_module(step, "schedule_one").schedule_one(sched)
    message = "0/11 nodes are available: 11 node(s) were unschedulable."
    assert sched.client.bindings == []
    assert [u["message"] for u in sched.recorder.of("unschedulable")] == [message]
    assert sched.event_recorder.events == [("Warning", "FailedScheduling", message)]
    [(name, args)] = [c for c in sched.client.calls if c[0] == "patch_namespaced_pod_status"]
    assert args[:2] == ("pod1", "default")
    assert args[2] == {
        "status": {
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": message,
                }
            ]
        }
    }


@step_param
def test_a_failed_status_patch_is_logged_not_raised(
    step: int, caplog: pytest.LogCaptureFixture
) -> None:
    sched = offline_scheduler(step)
    _unschedulable_cluster(sched, 2)

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("apiserver said no")

    sched.client.patch_namespaced_pod_status = refuse
    sched.scheduling_queue.add(make_pod("pod1"))
    step_module(step, "schedule_one").schedule_one(sched)  # does not raise
    assert "apiserver said no" in caplog.text
    assert sched.recorder.of("unschedulable")


@step_param
def test_no_nodes_at_all_is_reported_as_unschedulable(step: int) -> None:
    sched = offline_scheduler(step)
    sched.scheduling_queue.add(make_pod("pod1"))
    step_module(step, "schedule_one").schedule_one(sched)
    assert [u["message"] for u in sched.recorder.of("unschedulable")] == [
        "no nodes available to schedule pods"
    ]
