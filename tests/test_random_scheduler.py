"""Step 1: pop a pod, pick a random node with the injected random source, bind."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from kubernetes import client

from tests.conftest import built_steps, step_module
from tests.fakes import add_nodes, make_node, make_pod, offline_scheduler


def test_binds_each_pod_to_the_node_the_seeded_random_source_picks() -> None:
    sched = offline_scheduler(1, seed=7)
    nodes = [make_node(f"node{i}") for i in range(10)]
    add_nodes(sched, *nodes)
    schedule_one = step_module(1, "schedule_one").schedule_one
    for name in ("pod1", "pod2", "pod3"):
        sched.scheduling_queue.add(make_pod(name))
        schedule_one(sched)
    expected_rng = random.Random(7)
    expected = [nodes[expected_rng.randrange(10)].metadata.name for _ in range(3)]
    assert sched.client.bindings == [
        ("default/pod1", expected[0]),
        ("default/pod2", expected[1]),
        ("default/pod3", expected[2]),
    ]
    assert [f["node"] for f in sched.recorder.of("bound")] == expected


def test_the_pick_is_uniform_over_nodes() -> None:
    sched = offline_scheduler(1, seed=3)
    add_nodes(sched, *(make_node(f"node{i}") for i in range(4)))
    schedule_one = step_module(1, "schedule_one").schedule_one
    for i in range(400):
        sched.scheduling_queue.add(make_pod(f"p{i}"))
        schedule_one(sched)
    counts = Counter(node for _, node in sched.client.bindings)
    assert set(counts) == {"node0", "node1", "node2", "node3"}
    assert all(60 <= c <= 140 for c in counts.values()), counts


def test_no_nodes_is_an_error_and_binds_nothing() -> None:
    sched = offline_scheduler(1)
    sched.scheduling_queue.add(make_pod("pod1"))
    step_module(1, "schedule_one").schedule_one(sched)
    assert sched.client.bindings == []
    assert sched.recorder.of("error")[0]["message"] == "no nodes available to schedule pods"


def test_a_rejected_binding_is_reported_and_not_retried_in_step_1() -> None:
    sched = offline_scheduler(1)
    add_nodes(sched, make_node("node0"))
    sched.client.fail_binds = 1
    sched.scheduling_queue.add(make_pod("pod1"))
    step_module(1, "schedule_one").schedule_one(sched)
    assert sched.client.bindings == []
    assert sched.recorder.of("error")[0]["message"] == (
        'binding rejected: running Bind plugin "DefaultBinder": '
        'pod pod1 is already assigned to node "elsewhere"'
    )
    assert sched.scheduling_queue.pending_pods() == []  # lost: the reason step 6 exists


@pytest.mark.parametrize("step", built_steps(1), ids=lambda n: f"step{n}")
def test_a_deleting_pod_is_skipped(step: int) -> None:
    import datetime

    sched = offline_scheduler(step)
    add_nodes(sched, make_node("node0"))
    pod = make_pod("pod1")
    pod.metadata.deletion_timestamp = datetime.datetime.now(datetime.timezone.utc)
    sched.scheduling_queue.add(pod)
    step_module(step, "schedule_one").schedule_one(sched)
    assert sched.client.bindings == []
    # As upstream's skipPodSchedule, a Warning event says why.
    assert sched.event_recorder.events == [
        ("Warning", "FailedScheduling", "skip schedule deleting pod: default/pod1")
    ]


@pytest.mark.parametrize("step", built_steps(1), ids=lambda n: f"step{n}")
def test_a_refusal_without_a_status_body_is_named_by_its_status_line(step: int) -> None:
    # From step 9, binding is DefaultBinder's, and so is reading the refusal.
    module = "plugins.defaultbinder" if step >= 9 else "schedule_one"
    status_message = step_module(step, module).status_message
    assert status_message(client.ApiException(status=503, reason="Service Unavailable")) == (
        "503 Service Unavailable"
    )
