"""Score, NormalizeScore, weights, select_host and the NodeNumber plugin (steps 3+)."""

from __future__ import annotations

import random
from collections import Counter
from types import SimpleNamespace
from typing import Any

import pytest

from tests.conftest import built_steps, step_module
from tests.fakes import (
    ListRecorder,
    add_nodes,
    cycle_args,
    drive,
    framework_of,
    make_node,
    make_pod,
    new_framework,
    offline_scheduler,
    set_framework,
)

STEPS = built_steps(3)
step_param = pytest.mark.parametrize("step", STEPS, ids=lambda n: f"step{n}")


class FakeScore:
    """A Score plugin with fixed raw scores per node, optionally normalizing them."""

    def __init__(self, fw: Any, name: str, scores: dict[str, int], *, normalize: Any = None):
        self.fw = fw
        self._name = name
        self.scores = scores
        self.normalize = normalize  # None, or f(scores) -> Status
        self.fail_on: str | None = None

    def name(self) -> str:
        return self._name

    def score(self, *args: Any) -> tuple[int, Any]:
        pod, node_name = args[-2:]
        if node_name == self.fail_on:
            return 0, self.fw.Status(self.fw.Code.ERROR, ["no score today"])
        return self.scores[node_name], self.fw.Status()

    def score_extensions(self) -> Any:
        return self if self.normalize else None

    def normalize_score(self, *args: Any) -> Any:
        return self.normalize(args[-1])


def _framework(step: int, *plugins: FakeScore, weights: dict[str, int] | None = None) -> Any:
    def factory(plugin: FakeScore) -> Any:
        return lambda args, handle: plugin

    weights = weights or {}
    return new_framework(
        step,
        {p.name(): factory(p) for p in plugins},
        score=[(p.name(), weights.get(p.name(), 0)) for p in plugins],
    )


NODES = [make_node(f"node{i}") for i in range(3)]


def _run_score(step: int, fwk: Any, pod: Any = None) -> tuple[dict[str, list[int]], Any]:
    scores, status = fwk.run_score_plugins(*cycle_args(step), pod or make_pod("pod1"), NODES)
    return {p: [ns.score for ns in lst] for p, lst in scores.items()}, status


@step_param
def test_scores_are_normalized_then_weighted(step: int) -> None:
    fw = step_module(step, "framework")
    helper = step_module(step, "plugins.helper")

    def to_100(scores: list[Any]) -> Any:
        return helper.default_normalize_score(fw.MAX_NODE_SCORE, False, scores)

    a = FakeScore(fw, "A", {"node0": 1, "node1": 2, "node2": 4}, normalize=to_100)
    b = FakeScore(fw, "B", {"node0": 3, "node1": 3, "node2": 3})
    fwk = _framework(step, a, b, weights={"A": 2})
    assert fwk.score_plugin_weight == {"A": 2, "B": 1}  # weight 0 means 1
    scores, status = _run_score(step, fwk)
    assert status.is_success()
    assert scores == {"A": [50, 100, 200], "B": [3, 3, 3]}


@step_param
@pytest.mark.parametrize("bad", [101, -1])
def test_a_score_out_of_range_after_normalizing_is_an_error(step: int, bad: int) -> None:
    fw = step_module(step, "framework")
    fwk = _framework(step, FakeScore(fw, "Big", {"node0": 0, "node1": bad, "node2": 100}))
    scores, status = _run_score(step, fwk)
    assert status.code == fw.Code.ERROR and scores == {}
    assert (
        f'plugin "Big" returns an invalid score {bad}, it should in the range of [0, 100] '
        "after normalizing" in status.message()
    )


@step_param
def test_normalizing_brings_big_raw_scores_into_range(step: int) -> None:
    fw = step_module(step, "framework")
    helper = step_module(step, "plugins.helper")

    def to_100(scores: list[Any]) -> Any:
        return helper.default_normalize_score(fw.MAX_NODE_SCORE, False, scores)

    big = FakeScore(fw, "Big", {"node0": 0, "node1": 500, "node2": 1000}, normalize=to_100)
    scores, status = _run_score(step, _framework(step, big))
    assert status.is_success() and scores == {"Big": [0, 50, 100]}


@step_param
def test_a_failing_score_or_normalize_is_an_error(step: int) -> None:
    fw = step_module(step, "framework")
    failing = FakeScore(fw, "F", {"node0": 1, "node1": 1, "node2": 1})
    failing.fail_on = "node1"
    _, status = _run_score(step, _framework(step, failing))
    assert status.code == fw.Code.ERROR
    assert status.message() == 'running Score plugins: plugin "F" failed with: no score today'

    bad_norm = FakeScore(
        fw,
        "N",
        {"node0": 1, "node1": 1, "node2": 1},
        normalize=lambda s: fw.Status(fw.Code.ERROR, ["nope"]),
    )
    _, status = _run_score(step, _framework(step, bad_norm))
    assert status.message() == 'running Normalize on Score plugins: plugin "N" failed with: nope'


@step_param
@pytest.mark.parametrize(
    ("raw", "reverse", "expected"),
    [
        ([0, 10, 0], False, [0, 100, 0]),
        ([10, 20, 30], False, [33, 66, 100]),  # integer arithmetic, as upstream
        ([10, 20, 30], True, [67, 34, 0]),
        ([0, 0, 0], False, [0, 0, 0]),
        ([0, 0, 0], True, [100, 100, 100]),
        # Upstream's maxCount starts at 0: scores none of which is above 0 stay as they are.
        ([-5, -10], False, [-5, -10]),
        ([-5, -10], True, [100, 100]),
        # Go's integer division truncates toward zero: -300 / 7 is -42, not -43.
        ([-3, 7], False, [-42, 100]),
        ([-3, 7], True, [142, 0]),
    ],
)
def test_default_normalize_score(
    step: int, raw: list[int], reverse: bool, expected: list[int]
) -> None:
    fw = step_module(step, "framework")
    scores = [fw.NodeScore(f"n{i}", s) for i, s in enumerate(raw)]
    status = step_module(step, "plugins.helper").default_normalize_score(100, reverse, scores)
    assert status.is_success() and [s.score for s in scores] == expected


# --- select_host -------------------------------------------------------------------------------


@step_param
def test_select_host_takes_the_highest_score(step: int) -> None:
    fw = step_module(step, "framework")
    select_host = step_module(step, "schedule_one").select_host
    sched = SimpleNamespace(rng=random.Random(1))
    scores = [fw.NodeScore("a", 3), fw.NodeScore("b", 7), fw.NodeScore("c", 5)]
    assert select_host(sched, scores) == "b"
    with pytest.raises(Exception, match="empty priorityList"):
        select_host(sched, [])


def _reservoir(rng: random.Random, names: list[str], scores: list[int]) -> str:
    """The reference: upstream's selectHost, step by step."""
    best, top, count = names[0], scores[0], 1
    for name, score in zip(names[1:], scores[1:], strict=True):
        if score > top:
            best, top, count = name, score, 1
        elif score == top:
            count += 1
            if rng.randrange(count) == 0:
                best = name
    return best


@step_param
def test_select_host_breaks_ties_uniformly_with_the_injected_random_source(step: int) -> None:
    fw = step_module(step, "framework")
    select_host = step_module(step, "schedule_one").select_host
    names = ["low", "t1", "t2", "lower", "t3", "t4"]
    raw = [5, 9, 9, 1, 9, 9]
    sched = SimpleNamespace(rng=random.Random(42))
    reference = random.Random(42)
    picks = Counter()
    for _ in range(4000):
        picked = select_host(sched, [fw.NodeScore(n, s) for n, s in zip(names, raw, strict=True)])
        assert picked == _reservoir(reference, names, raw)  # same source, same choice
        picks[picked] += 1
    assert set(picks) == {"t1", "t2", "t3", "t4"}
    assert all(900 <= c <= 1100 for c in picks.values()), picks


# --- NodeNumber and the scheduling cycle --------------------------------------------------------


def _node_number_scores(step: int, pod_name: str, node_names: list[str]) -> dict[str, int]:
    """NodeNumber's final scores, through the step's own framework and profile."""
    sched = offline_scheduler(step)
    fwk = framework_of(sched)
    args = cycle_args(step)
    pod, nodes = make_pod(pod_name), [make_node(n) for n in node_names]
    if hasattr(sched, "cache"):  # from step 10 a Score plugin reads the nodes from the snapshot
        add_nodes(sched, *nodes)
        sched.cache.update_snapshot(sched.snapshot)
    if hasattr(fwk, "run_pre_score_plugins"):
        assert fwk.run_pre_score_plugins(*args, pod, nodes).is_success()
    scores, status = fwk.run_score_plugins(*args, pod, nodes)
    assert status.is_success(), status
    return {ns.name: ns.score for ns in scores["NodeNumber"]}


@step_param
def test_node_number_scores_the_matching_digit_100_after_normalization(step: int) -> None:
    nodes = ["node5", "node8", "node9"]
    assert _node_number_scores(step, "pod8", nodes) == {"node5": 0, "node8": 100, "node9": 0}
    assert _node_number_scores(step, "pod1", nodes) == {"node5": 0, "node8": 0, "node9": 0}
    assert _node_number_scores(step, "pod-x", nodes) == {"node5": 0, "node8": 0, "node9": 0}
    assert _node_number_scores(step, "pod8", ["node-a", "node8"]) == {"node-a": 0, "node8": 100}


@step_param
def test_node_number_raw_score_is_10(step: int) -> None:
    fwk = framework_of(offline_scheduler(step))
    [plugin] = [p for p in fwk.score_plugins if p.name() == "NodeNumber"]
    args = cycle_args(step)
    pod = make_pod("pod8")
    if hasattr(plugin, "pre_score"):
        plugin.pre_score(*args, pod, [make_node("node8")])
    assert plugin.score(*args, pod, "node8")[0] == 10
    assert plugin.score(*args, pod, "node7")[0] == 0
    weights = {"NodeNumber": 1}
    if step >= 10:
        weights["NodeResourcesFit"] = 1
    if step >= 13:  # v1.23's default weights
        weights |= {
            "TaintToleration": 3,
            "NodeAffinity": 2,
            "NodeResourcesBalancedAllocation": 1,
        }
    assert fwk.score_plugin_weight == weights


def _cluster(sched: Any) -> None:
    add_nodes(sched, *(make_node(f"node{i}", unschedulable=i < 5) for i in range(10)))


@step_param
def test_pod8_goes_to_node8_and_the_report_has_every_score(step: int) -> None:
    sched = offline_scheduler(step)
    _cluster(sched)
    sched.scheduling_queue.add(make_pod("pod8"))
    step_module(step, "schedule_one").schedule_one(sched)
    assert drive(sched, 1)
    assert sched.client.bindings == [("default/pod8", "node8")]
    scores = {(s["node"], s["plugin"]): s["score"] for s in sched.recorder.of("score")}
    expected = {(f"node{i}", "NodeNumber"): 100 if i == 8 else 0 for i in range(5, 10)}
    if step >= 10:  # five empty nodes: the same LeastAllocated score, (97 + 99) // 2
        expected |= {(f"node{i}", "NodeResourcesFit"): 98 for i in range(5, 10)}
    if step >= 13:  # no taints, no affinity, no requests: the same everywhere, weighted
        for i in range(5, 10):
            expected[(f"node{i}", "TaintToleration")] = 300
            expected[(f"node{i}", "NodeAffinity")] = 0
            expected[(f"node{i}", "NodeResourcesBalancedAllocation")] = 100
    assert scores == expected
    assert sched.recorder.of("selected") == [{"pod": "default/pod8", "node": "node8"}]


class NoDetailRecorder(ListRecorder):
    """The scheduler alone: it keeps no pod's per-node results."""

    def wants_detail(self, pod: str) -> bool:
        return False


@step_param
def test_no_score_is_recorded_per_node_when_the_recorder_keeps_none(step: int) -> None:
    sched = offline_scheduler(step)
    sched.recorder = framework_of(sched).recorder = NoDetailRecorder()
    _cluster(sched)
    sched.scheduling_queue.add(make_pod("pod8"))
    step_module(step, "schedule_one").schedule_one(sched)
    assert drive(sched, 1)
    # The scores still decide: pod8 goes to node8.
    assert sched.client.bindings == [("default/pod8", "node8")]
    assert sched.recorder.of("score") == []
    assert sched.recorder.of("selected") == [{"pod": "default/pod8", "node": "node8"}]


@step_param
def test_a_tie_is_broken_by_the_seeded_random_source(step: int) -> None:
    picked = []
    for seed in range(30):
        sched = offline_scheduler(step, seed=seed)
        _cluster(sched)
        sched.scheduling_queue.add(make_pod("pod1"))
        step_module(step, "schedule_one").schedule_one(sched)
        assert drive(sched, 1)
        [(_, node)] = sched.client.bindings
        expected = _reservoir(random.Random(seed), [f"node{i}" for i in range(5, 10)], [0] * 5)
        assert node == expected
        picked.append(node)
    assert len(set(picked)) >= 4  # the seed matters


@step_param
def test_a_single_feasible_node_is_not_scored(step: int) -> None:
    sched = offline_scheduler(step)
    add_nodes(sched, make_node("node0", unschedulable=True), make_node("node1"))
    sched.scheduling_queue.add(make_pod("pod1"))
    step_module(step, "schedule_one").schedule_one(sched)
    assert drive(sched, 1)
    assert sched.recorder.of("score") == []


@step_param
def test_without_score_plugins_every_node_scores_1(step: int) -> None:
    sched = offline_scheduler(step)
    set_framework(sched, new_framework(step, {}, clock=sched.clock))
    nodes = [make_node("a"), make_node("b")]
    prioritize = step_module(step, "schedule_one").prioritize_nodes
    result = prioritize(sched, framework_of(sched), *cycle_args(step), make_pod("p"), nodes)
    assert [(ns.name, ns.score) for ns in result] == [("a", 1), ("b", 1)]
