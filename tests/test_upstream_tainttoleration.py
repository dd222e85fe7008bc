"""kube-scheduler v1.23's own TaintToleration test tables, ported case by case.

Ported from kubernetes pkg/scheduler/framework/plugins/tainttoleration/taint_toleration_test.go
(TestTaintTolerationScore, TestTaintTolerationFilter), read at
QuarfotPrice/sched.dev@bd78f932b5685f63c0bbe4aeffd822663695557b, a copy of the scheduler tree
taken from kubernetes master in February 2022. Its taint_toleration.go was checked against
v1.23.10's (vendored by kubernetes-sigs/scheduler-plugins v0.23.10): they are the same but for
EventsToRegister (``Add | UpdateNodeTaint`` there, ``Add | Update`` in v1.23.10), which no
upstream test reads; and the tests call only what v1.23.10 has (New(nil, handle), PreScore,
Score, ScoreExtensions().NormalizeScore, Filter with a nil CycleState).

Each case runs against every built step from 13, which brings TaintToleration. The ids are
``<upstream test>/<the case's name>``. The plugin is built as upstream's tests build it: a handle
whose snapshot holds the table's nodes, a fresh CycleState per case.

Upstream tests of this file not ported: none left out (the file has only these two).
The last tests below are not upstream's: they check v1.23.10 code paths its tables do not
reach (the registered events, Filter without a Node, Score without PreScore, PreScore with no
nodes).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from kubernetes import client

from tests.conftest import built_steps, step_module

STEPS = built_steps(13)
step_param = pytest.mark.parametrize("step", STEPS, ids=lambda n: f"step{n}")

MAX_NODE_SCORE = 100


# --- upstream's helpers: nodeWithTaints, podWithTolerations, cache.NewSnapshot -----------------


def taint(key: str, value: str | None, effect: str) -> client.V1Taint:
    return client.V1Taint(key=key, value=value, effect=effect)


def toleration(
    key: str, value: str | None = None, effect: str | None = None, operator: str | None = None
) -> client.V1Toleration:
    return client.V1Toleration(key=key, operator=operator, value=value, effect=effect)


def node_with_taints(name: str, taints: list[client.V1Taint]) -> client.V1Node:
    """Upstream: nodeWithTaints."""
    return client.V1Node(
        metadata=client.V1ObjectMeta(name=name), spec=client.V1NodeSpec(taints=taints)
    )


def pod_with_tolerations(name: str, tolerations: list[client.V1Toleration]) -> client.V1Pod:
    """Upstream: podWithTolerations (a pod without containers)."""
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name, uid=f"uid-{name}"),
        spec=client.V1PodSpec(containers=[], tolerations=tolerations),
    )


def new_snapshot(step: int, nodes: list[client.V1Node]) -> Any:
    """Upstream: cache.NewSnapshot(nil, nodes)."""
    snapshot = step_module(step, "snapshot").Snapshot()
    for node in nodes:
        info = step_module(step, "framework").NodeInfo()
        info.set_node(node)
        snapshot.node_info_map[node.metadata.name] = info
        snapshot.node_info_list.append(info)
    return snapshot


def new_plugin(step: int, nodes: list[client.V1Node]) -> Any:
    """Upstream: New(nil, fh), fh a framework with the snapshot as its shared lister."""
    snapshot = new_snapshot(step, nodes)
    handle = SimpleNamespace(snapshot_shared_lister=lambda: snapshot)
    return step_module(step, "plugins.tainttoleration").new(None, handle)


def status_of(status: Any) -> tuple[str, list[str]]:
    return status.code.name, list(status.reasons)


SUCCESS: tuple[str, list[str]] = ("SUCCESS", [])


def unresolvable(*reasons: str) -> tuple[str, list[str]]:
    """Upstream: framework.NewStatus(framework.UnschedulableAndUnresolvable, reasons...)."""
    return "UNSCHEDULABLE_AND_UNRESOLVABLE", list(reasons)


# --- TestTaintTolerationScore ------------------------------------------------------------------

PREFER = "PreferNoSchedule"
NO_SCHEDULE = "NoSchedule"

TAINT_TOLERATION_SCORE = [
    # basic test case
    pytest.param(
        pod_with_tolerations("pod1", [toleration("foo", "bar", PREFER, "Equal")]),
        [
            node_with_taints("nodeA", [taint("foo", "bar", PREFER)]),
            node_with_taints("nodeB", [taint("foo", "blah", PREFER)]),
        ],
        [("nodeA", MAX_NODE_SCORE), ("nodeB", 0)],
        id="TestTaintTolerationScore/node with taints tolerated by the pod, gets a higher score "
        "than those node with intolerable taints",
    ),
    # the count of taints that are tolerated by pod, does not matter.
    pytest.param(
        pod_with_tolerations(
            "pod1",
            [
                toleration("cpu-type", "arm64", PREFER, "Equal"),
                toleration("disk-type", "ssd", PREFER, "Equal"),
            ],
        ),
        [
            node_with_taints("nodeA", []),
            node_with_taints("nodeB", [taint("cpu-type", "arm64", PREFER)]),
            node_with_taints(
                "nodeC", [taint("cpu-type", "arm64", PREFER), taint("disk-type", "ssd", PREFER)]
            ),
        ],
        [("nodeA", MAX_NODE_SCORE), ("nodeB", MAX_NODE_SCORE), ("nodeC", MAX_NODE_SCORE)],
        id="TestTaintTolerationScore/the nodes that all of their taints are tolerated by the "
        "pod, get the same score, no matter how many tolerable taints a node has",
    ),
    # the count of taints on a node that are not tolerated by pod, matters.
    pytest.param(
        pod_with_tolerations("pod1", [toleration("foo", "bar", PREFER, "Equal")]),
        [
            node_with_taints("nodeA", []),
            node_with_taints("nodeB", [taint("cpu-type", "arm64", PREFER)]),
            node_with_taints(
                "nodeC", [taint("cpu-type", "arm64", PREFER), taint("disk-type", "ssd", PREFER)]
            ),
        ],
        [("nodeA", MAX_NODE_SCORE), ("nodeB", 50), ("nodeC", 0)],
        id="TestTaintTolerationScore/the more intolerable taints a node has, the lower score "
        "it gets.",
    ),
    # taints-tolerations priority only takes care about the taints and tolerations that have
    # effect PreferNoSchedule
    pytest.param(
        pod_with_tolerations(
            "pod1",
            [
                toleration("cpu-type", "arm64", NO_SCHEDULE, "Equal"),
                toleration("disk-type", "ssd", NO_SCHEDULE, "Equal"),
            ],
        ),
        [
            node_with_taints("nodeA", []),
            node_with_taints("nodeB", [taint("cpu-type", "arm64", NO_SCHEDULE)]),
            node_with_taints(
                "nodeC", [taint("cpu-type", "arm64", PREFER), taint("disk-type", "ssd", PREFER)]
            ),
        ],
        [("nodeA", MAX_NODE_SCORE), ("nodeB", MAX_NODE_SCORE), ("nodeC", 0)],
        id="TestTaintTolerationScore/only taints and tolerations that have effect "
        "PreferNoSchedule are checked by taints-tolerations priority function",
    ),
    pytest.param(
        pod_with_tolerations("pod1", []),
        [
            node_with_taints("nodeA", []),
            node_with_taints("nodeB", [taint("cpu-type", "arm64", PREFER)]),
        ],
        [("nodeA", MAX_NODE_SCORE), ("nodeB", 0)],
        id="TestTaintTolerationScore/Default behaviour No taints and tolerations, lands on node "
        "with no taints",
    ),
]


@step_param
@pytest.mark.parametrize(("pod", "nodes", "expected"), TAINT_TOLERATION_SCORE)
def test_taint_toleration_score(
    step: int,
    pod: client.V1Pod,
    nodes: list[client.V1Node],
    expected: list[tuple[str, int]],
) -> None:
    fw = step_module(step, "framework")
    plugin = new_plugin(step, nodes)
    state = step_module(step, "cycle_state").CycleState()
    assert plugin.pre_score(state, pod, nodes).is_success()
    got = []
    for node in nodes:
        score, status = plugin.score(state, pod, node.metadata.name)
        assert status.is_success(), status
        got.append(fw.NodeScore(node.metadata.name, score))
    assert plugin.score_extensions().normalize_score(state, pod, got).is_success()
    assert [(s.name, s.score) for s in got] == expected


# --- TestTaintTolerationFilter -----------------------------------------------------------------

TAINT_TOLERATION_FILTER = [
    pytest.param(
        pod_with_tolerations("pod1", []),
        node_with_taints("nodeA", [taint("dedicated", "user1", "NoSchedule")]),
        unresolvable("node(s) had taint {dedicated: user1}, that the pod didn't tolerate"),
        id="TestTaintTolerationFilter/A pod having no tolerations can't be scheduled onto a "
        "node with nonempty taints",
    ),
    pytest.param(
        pod_with_tolerations("pod1", [toleration("dedicated", "user1", "NoSchedule")]),
        node_with_taints("nodeA", [taint("dedicated", "user1", "NoSchedule")]),
        SUCCESS,
        id="TestTaintTolerationFilter/A pod which can be scheduled on a dedicated node assigned "
        "to user1 with effect NoSchedule",
    ),
    pytest.param(
        pod_with_tolerations("pod1", [toleration("dedicated", "user2", "NoSchedule", "Equal")]),
        node_with_taints("nodeA", [taint("dedicated", "user1", "NoSchedule")]),
        unresolvable("node(s) had taint {dedicated: user1}, that the pod didn't tolerate"),
        id="TestTaintTolerationFilter/A pod which can't be scheduled on a dedicated node "
        "assigned to user2 with effect NoSchedule",
    ),
    pytest.param(
        pod_with_tolerations("pod1", [toleration("foo", None, "NoSchedule", "Exists")]),
        node_with_taints("nodeA", [taint("foo", "bar", "NoSchedule")]),
        SUCCESS,
        id="TestTaintTolerationFilter/A pod can be scheduled onto the node, with a toleration "
        "uses operator Exists that tolerates the taints on the node",
    ),
    pytest.param(
        pod_with_tolerations(
            "pod1",
            [
                toleration("dedicated", "user2", "NoSchedule", "Equal"),
                toleration("foo", None, "NoSchedule", "Exists"),
            ],
        ),
        node_with_taints(
            "nodeA",
            [taint("dedicated", "user2", "NoSchedule"), taint("foo", "bar", "NoSchedule")],
        ),
        SUCCESS,
        id="TestTaintTolerationFilter/A pod has multiple tolerations, node has multiple taints, "
        "all the taints are tolerated, pod can be scheduled onto the node",
    ),
    pytest.param(
        pod_with_tolerations("pod1", [toleration("foo", "bar", "PreferNoSchedule", "Equal")]),
        node_with_taints("nodeA", [taint("foo", "bar", "NoSchedule")]),
        unresolvable("node(s) had taint {foo: bar}, that the pod didn't tolerate"),
        id="TestTaintTolerationFilter/A pod has a toleration that keys and values match the "
        "taint on the node, but (non-empty) effect doesn't match, can't be scheduled onto the "
        "node",
    ),
    pytest.param(
        pod_with_tolerations("pod1", [toleration("foo", "bar", None, "Equal")]),
        node_with_taints("nodeA", [taint("foo", "bar", "NoSchedule")]),
        SUCCESS,
        id="TestTaintTolerationFilter/The pod has a toleration that keys and values match the "
        "taint on the node, the effect of toleration is empty, and the effect of taint is "
        "NoSchedule. Pod can be scheduled onto the node",
    ),
    pytest.param(
        pod_with_tolerations("pod1", [toleration("dedicated", "user2", "NoSchedule", "Equal")]),
        node_with_taints("nodeA", [taint("dedicated", "user1", "PreferNoSchedule")]),
        SUCCESS,
        id="TestTaintTolerationFilter/The pod has a toleration that key and value don't match "
        "the taint on the node, but the effect of taint on node is PreferNoSchedule. Pod can be "
        "scheduled onto the node",
    ),
    pytest.param(
        pod_with_tolerations("pod1", []),
        node_with_taints("nodeA", [taint("dedicated", "user1", "PreferNoSchedule")]),
        SUCCESS,
        id="TestTaintTolerationFilter/The pod has no toleration, but the effect of taint on "
        "node is PreferNoSchedule. Pod can be scheduled onto the node",
    ),
]


@step_param
@pytest.mark.parametrize(("pod", "node", "want_status"), TAINT_TOLERATION_FILTER)
def test_taint_toleration_filter(
    step: int, pod: client.V1Pod, node: client.V1Node, want_status: tuple[str, list[str]]
) -> None:
    info = step_module(step, "framework").NodeInfo()
    info.set_node(node)
    # Upstream: New(nil, nil), and Filter with a nil CycleState.
    plugin = step_module(step, "plugins.tainttoleration").new(None, None)
    assert status_of(plugin.filter(None, pod, info)) == want_status


# --- not upstream's: v1.23.10 paths the tables above do not reach ------------------------------


@step_param
def test_events_to_register(step: int) -> None:
    """v1.23.10 registers Node Add | Update (every kind of node update)."""
    fw = step_module(step, "framework")
    plugin = step_module(step, "plugins.tainttoleration").new(None, None)
    assert plugin.events_to_register() == [
        fw.ClusterEvent(fw.GVK.NODE, fw.ActionType.ADD | fw.ActionType.UPDATE)
    ]


@step_param
def test_filter_without_node_is_an_error(step: int) -> None:
    """Upstream: Filter's ``AsStatus(fmt.Errorf("invalid nodeInfo"))``."""
    plugin = step_module(step, "plugins.tainttoleration").new(None, None)
    info = step_module(step, "framework").NodeInfo()
    assert status_of(plugin.filter(None, pod_with_tolerations("p", []), info)) == (
        "ERROR",
        ["invalid nodeInfo"],
    )


@step_param
def test_filter_names_the_first_untolerated_taint_without_value(step: int) -> None:
    """The reason prints key and value only: a NoExecute taint without value reads "{key: }"."""
    plugin = step_module(step, "plugins.tainttoleration").new(None, None)
    info = step_module(step, "framework").NodeInfo()
    info.set_node(
        node_with_taints(
            "n",
            [
                taint("soft", None, PREFER),
                taint("gone", None, "NoExecute"),
                taint("x", "y", NO_SCHEDULE),
            ],
        )
    )
    assert status_of(plugin.filter(None, pod_with_tolerations("p", []), info)) == unresolvable(
        "node(s) had taint {gone: }, that the pod didn't tolerate"
    )


@step_param
def test_score_without_pre_score_is_an_error(step: int) -> None:
    nodes = [node_with_taints("nodeA", [])]
    plugin = new_plugin(step, nodes)
    state = step_module(step, "cycle_state").CycleState()
    score, status = plugin.score(state, pod_with_tolerations("p", []), "nodeA")
    assert (score, status_of(status)) == (
        0,
        ("ERROR", ['failed to read "PreScoreTaintToleration" from cycleState: not found']),
    )


@step_param
def test_pre_score_with_no_nodes_writes_nothing(step: int) -> None:
    plugin = new_plugin(step, [])
    cs = step_module(step, "cycle_state")
    state = cs.CycleState()
    assert plugin.pre_score(state, pod_with_tolerations("p", []), []).is_success()
    with pytest.raises(cs.NotFoundError):
        state.read("PreScoreTaintToleration")
