"""percentageOfNodesToScore (steps 12+): how many feasible nodes a cycle looks for, the start
index that moves on from one cycle to the next, and, at 100 %, the same decisions as step 11,
the last step that filters every node."""

from __future__ import annotations

import argparse
import random
from typing import Any

import pytest
from kubernetes import client

from minisched import cli, runner, steps
from tests.conftest import built_steps, step_module
from tests.fakes import add_nodes, add_pods, framework_of, offline_scheduler
from tests.test_noderesources import container, node_of, pod_asking

STEPS = built_steps(12)
step_param = pytest.mark.parametrize("step", STEPS, ids=lambda n: f"step{n}")


# --- num_feasible_nodes_to_find --------------------------------------------------------------

# (percentageOfNodesToScore, nodes in the cluster) -> feasible nodes to find: v1.23's rule.
FORMULA = {
    # Below 100 nodes: every node, whatever the percentage.
    (0, 0): 0,
    (0, 1): 1,
    (0, 99): 99,
    (10, 99): 99,
    # The adaptive default (0): 50 % - nodes/125, never below 5 %; never fewer than 100 nodes.
    (0, 100): 100,
    (0, 200): 100,  # 49 %: 98, raised to 100
    (0, 250): 120,  # 48 %
    (0, 500): 230,  # 46 %
    (0, 5000): 500,  # 10 %
    (0, 5624): 337,  # 50 - 44 = 6 %
    (0, 5625): 281,  # 50 - 45 = 5 %
    (0, 6250): 312,  # 0 %, raised to 5 %
    (0, 50000): 2500,  # 5 %
    # A percentage given: used as is, and still never fewer than 100 nodes.
    (1, 5000): 100,
    (10, 5000): 500,
    (50, 100): 100,
    (50, 1000): 500,
    (99, 1000): 990,
    # 100 %: every node.
    (100, 100): 100,
    (100, 5000): 5000,
}


@step_param
@pytest.mark.parametrize(("percentage", "nodes"), sorted(FORMULA), ids=lambda v: str(v))
def test_num_feasible_nodes_to_find(step: int, percentage: int, nodes: int) -> None:
    schedule_one = step_module(step, "schedule_one")
    found = schedule_one.num_feasible_nodes_to_find(percentage, nodes)
    assert found == FORMULA[(percentage, nodes)]
    assert schedule_one.MIN_FEASIBLE_NODES_TO_FIND == 100
    assert schedule_one.MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND == 5


@step_param
@pytest.mark.parametrize("bad", [-1, 101])
def test_a_percentage_outside_0_to_100_is_refused_as_upstream_validates_it(
    step: int, bad: int
) -> None:
    with pytest.raises(ValueError, match=rf"^percentageOfNodesToScore: Invalid value: {bad}: not"):
        offline_scheduler(step, percentage_of_nodes_to_score=bad)


# --- the start index ---------------------------------------------------------------------------


def cluster(step: int, count: int, **options: Any) -> Any:
    """An offline scheduler with ``count`` nodes ``n-000x``.. (no digit at the end: no Permit
    wait), 4 CPU each; ``cordoned`` indexes are unschedulable, ``big`` ones have 16 CPU."""
    cordoned = options.pop("cordoned", ())
    big = options.pop("big", ())
    sched = offline_scheduler(step, **options)
    nodes = []
    for i in range(count):
        node = node_of(f"n-{i:03d}x", cpu="16" if i in big else "4", memory="32Gi")
        node.spec.unschedulable = i in cordoned or None
        nodes.append(node)
    add_nodes(sched, *nodes)
    return sched


def schedule(step: int, sched: Any, name: str, cpu: str = "1") -> dict[str, Any]:
    """One cycle for a new pod; what it recorded as "feasible"."""
    pod = pod_asking(name, container("c", cpu=cpu, memory="1Gi"))
    add_pods(sched, pod)
    sched.scheduling_queue.add(pod)
    step_module(step, "schedule_one").schedule_one(sched)
    return sched.recorder.of("feasible")[-1]


def sampled(feasible: dict[str, Any]) -> tuple[int, int, int]:
    return feasible["start"], feasible["checked"], feasible["passed"]


def scored(sched: Any, pod: str) -> set[str]:
    return {s["node"] for s in sched.recorder.of("score") if s["pod"] == f"default/{pod}"}


@step_param
def test_each_cycle_starts_where_the_last_stopped_and_every_node_gets_its_turn(step: int) -> None:
    sched = cluster(step, 200)
    # 200 nodes: 100 to find, and every node fits: each cycle checks 100 nodes.
    assert sampled(schedule(step, sched, "first")) == (0, 100, 100)
    assert sched.next_start_node_index == 100
    assert sampled(schedule(step, sched, "second")) == (100, 100, 100)
    assert sched.next_start_node_index == 0
    # Only the nodes found are scored: the first half, then the second.
    assert scored(sched, "first") == {f"n-{i:03d}x" for i in range(100)}
    assert scored(sched, "second") == {f"n-{i:03d}x" for i in range(100, 200)}


@step_param
def test_the_index_moves_on_by_the_nodes_checked_failed_ones_included(step: int) -> None:
    sched = cluster(step, 200, cordoned=range(190, 200), big={5})
    assert sampled(schedule(step, sched, "first")) == (0, 100, 100)
    # n-100x .. n-189x fit (90), n-190x .. n-199x are cordoned, n-000x .. n-009x make 100.
    assert sampled(schedule(step, sched, "second")) == (100, 110, 100)
    assert sched.next_start_node_index == 10
    filtered = {f["node"] for f in sched.recorder.of("filter") if f["pod"] == "default/second"}
    assert filtered == {f"n-{i:03d}x" for i in range(190, 200)}


@step_param
def test_a_pod_that_fits_one_node_checks_them_all_and_finds_it(step: int) -> None:
    sched = cluster(step, 200, cordoned=range(190, 200), big={5})
    schedule(step, sched, "first")
    schedule(step, sched, "second")
    # 12 CPU: only n-005x (16 CPU) has room. No cycle stops early for it: every node is
    # checked, wrapping around from 10, and the index comes back to 10.
    assert sampled(schedule(step, sched, "large", cpu="12")) == (10, 200, 1)
    assert sched.next_start_node_index == 10
    assert sched.recorder.of("selected")[-1] == {"pod": "default/large", "node": "n-005x"}
    assert sampled(schedule(step, sched, "after")) == (10, 100, 100)


@step_param
def test_a_filter_error_still_moves_the_index_by_the_nodes_checked_before_it(step: int) -> None:
    # v1.23's findNodesThatPassFilters moves nextStartNodeIndex, then returns the error.
    sched = cluster(step, 200)
    fw = step_module(step, "framework")
    real = framework_of(sched).run_filter_plugins_with_nominated_pods

    def failing_at_n050(state: Any, pod: Any, node_info: Any) -> Any:
        if node_info.node().metadata.name == "n-050x":
            return fw.Status(fw.Code.ERROR, ["the plugin broke"])
        return real(state, pod, node_info)

    framework_of(sched).run_filter_plugins_with_nominated_pods = failing_at_n050
    batch = getattr(framework_of(sched), "run_filter_plugins_batch", None)
    if batch is not None:
        # Step 18 filters every node at once, then runs the Filter plugins again only on the
        # nodes that failed: make n-050x one of them, so its own run errors there.
        def batch_failing_n050(state: Any, pod: Any, nodes: Any, rows: Any) -> Any:
            passed = batch(state, pod, nodes, rows)
            passed[rows == nodes.index["n-050x"]] = False
            return passed

        framework_of(sched).run_filter_plugins_batch = batch_failing_n050
    pod = pod_asking("broken", container("c", cpu="1", memory="1Gi"))
    add_pods(sched, pod)
    sched.scheduling_queue.add(pod)
    step_module(step, "schedule_one").schedule_one(sched)
    assert [e["pod"] for e in sched.recorder.of("error")] == ["default/broken"]
    # n-000x .. n-049x were checked; the node that failed with the error is not counted.
    assert sched.next_start_node_index == 50


@step_param
def test_a_configured_percentage_is_used(step: int) -> None:
    sched = cluster(step, 400, percentage_of_nodes_to_score=30)
    # 30 % of 400: 120 (the adaptive default would be 47 %, 188).
    assert sampled(schedule(step, sched, "first")) == (0, 120, 120)
    assert sched.recorder.of("feasible")[-1]["to_find"] == 120


@step_param
def test_a_smaller_cluster_wraps_an_index_left_by_a_larger_one(step: int) -> None:
    sched = cluster(step, 200)
    schedule(step, sched, "first")
    sched.next_start_node_index = 350  # left by a cycle that saw more nodes
    assert sampled(schedule(step, sched, "second")) == (150, 100, 100)
    assert sched.next_start_node_index == 50


def schedule_nominated(step: int, sched: Any, name: str, node: str) -> str:
    """One cycle for a new pod of 1 CPU nominated to ``node`` (as a preemption left it): the
    node it was bound to."""
    pod = pod_asking(name, container("c", cpu="1", memory="1Gi"))
    pod.status = client.V1PodStatus(nominated_node_name=node)
    add_pods(sched, pod)
    sched.scheduling_queue.add(pod)
    step_module(step, "schedule_one").schedule_one(sched)
    return sched.recorder.of("selected")[-1]["node"]


@step_param
def test_a_nominated_node_that_fits_is_searched_alone_and_sets_the_index_back_to_0(
    step: int,
) -> None:
    sched = cluster(step, 200)
    schedule(step, sched, "first")
    assert sched.next_start_node_index == 100
    assert schedule_nominated(step, sched, "preemptor", "n-150x") == "n-150x"
    # v1.23: the nominated node's search runs over a list of that one node, and moves the
    # index modulo 1. Later releases leave the index alone there (it would stay at 100).
    assert sampled(sched.recorder.of("feasible")[-2]) == (0, 1, 1)
    assert sched.recorder.of("feasible")[-1]["nominated"] == "n-150x"
    assert sched.next_start_node_index == 0
    assert sampled(schedule(step, sched, "after")) == (0, 100, 100)


@step_param
def test_a_nominated_node_that_fails_sends_the_full_search_back_to_index_0(step: int) -> None:
    sched = cluster(step, 200, cordoned={150})
    schedule(step, sched, "first")
    assert sched.next_start_node_index == 100
    # n-150x is cordoned: the one-node search fails (and moves the index to 0), then the search
    # over every node starts at 0, not at 100 where the last cycle stopped.
    assert schedule_nominated(step, sched, "preemptor", "n-150x") != "n-150x"
    assert sampled(sched.recorder.of("feasible")[-1]) == (0, 100, 100)
    assert sched.next_start_node_index == 100


# --- 100 % decides as the step before did ----------------------------------------------------


# The last step that filters every node.
BEFORE_SAMPLING = 11


def decisions(step: int, **options: Any) -> list[str]:
    """Where 40 pods of random sizes go on 150 nodes of a few sizes (ties broken at random,
    some nodes cordoned): the selected node of each, or the FitError message.

    Nodes and pods have 4Gi of memory per CPU, so the plugins step 13 adds score every node
    alike (NodeResourcesBalancedAllocation 100, no taints, no affinity): the decisions depend
    on sampling and NodeResourcesFit alone, as in steps 11 and 12."""
    rng = random.Random(7)
    sizes = {i: rng.choice(["2", "4", "8"]) for i in range(150)}
    sched = offline_scheduler(step, **options)
    nodes = []
    for i in range(150):
        node = node_of(f"n-{i:03d}x", cpu=sizes[i], memory=f"{4 * int(sizes[i])}Gi")
        node.spec.unschedulable = (i % 17 == 3) or None
        nodes.append(node)
    add_nodes(sched, *nodes)
    outcome = []
    for k in range(40):
        cpu, memory = rng.choice(
            [("500m", "2Gi"), ("1", "4Gi"), ("2", "8Gi"), ("3", "12Gi"), ("7", "28Gi")]
        )
        pod = pod_asking(f"pod-{k:02d}x", container("c", cpu=cpu, memory=memory))
        add_pods(sched, pod)
        sched.scheduling_queue.add(pod)
        step_module(step, "schedule_one").schedule_one(sched)
        key = f"default/{pod.metadata.name}"
        selected = [s["node"] for s in sched.recorder.of("selected") if s["pod"] == key]
        failed = [u["message"] for u in sched.recorder.of("unschedulable") if u["pod"] == key]
        outcome.append(selected[-1] if selected else failed[-1])
    return outcome


@step_param
def test_at_100_percent_the_decisions_are_the_previous_steps(step: int) -> None:
    assert decisions(step, percentage_of_nodes_to_score=100) == decisions(BEFORE_SAMPLING)


@step_param
def test_at_the_default_the_decisions_differ_on_150_nodes(step: int) -> None:
    """The test above would pass with sampling left out: this one would not."""
    assert decisions(step) != decisions(step, percentage_of_nodes_to_score=100)


# --- the flag ------------------------------------------------------------------------------


def test_the_flag_is_refused_by_a_step_without_the_setting(
    capsys: pytest.CaptureFixture[str],
) -> None:
    without = [s for s in steps.built() if not cli.has_setting(s, "percentage_of_nodes_to_score")]
    assert without and STEPS
    code = runner.main([str(without[-1].number), "--percentage-of-nodes-to-score", "50"])
    err = capsys.readouterr().err
    assert code == 2
    assert err == (
        f"error: step {without[-1].number} has no percentageOfNodesToScore setting "
        f"(--percentage-of-nodes-to-score); the steps that have it: {', '.join(map(str, STEPS))}\n"
    )


@step_param
def test_the_flag_reaches_the_scheduler(step: int) -> None:
    parser = argparse.ArgumentParser()
    cli.add_common_flags(parser)
    args = parser.parse_args(["--percentage-of-nodes-to-score", "30"])
    assert cli.scheduler_options(steps.get(step), args) == {"percentage_of_nodes_to_score": 30}
    assert cli.scheduler_options(steps.get(step), parser.parse_args([])) == {}
