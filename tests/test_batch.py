"""Step 18's Filter and Score over every node at once (nodearrays.py, the plugins'
``filter_nodes`` and ``score_nodes``) decide exactly as the node-by-node loops of step 17 do.

Each example builds one cluster twice: nodes of a few kinds (resources, cordoned, taints),
pods already on them, then pods (requests, tolerations, priorities) scheduled one after the
other. One scheduler runs as it is; the other has the batch paths turned off, so that Filter,
Score and selectHost run the node-by-node code kept from step 17. Both must record the same
events (the nodes that failed and why, how many were checked and found, every score, the node
chosen, FitError's message), leave the start index in the same place and draw the same
random numbers.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kubernetes import client

from tests.conftest import built_steps, step_module
from tests.fakes import add_nodes, add_pods, framework_of, offline_scheduler
from tests.test_noderesources import container, node_of, pod_asking

STEPS = built_steps(18)

TAINTS = [
    ("dedicated", "gpu", "NoSchedule"),
    ("spot", "", "PreferNoSchedule"),
    ("evict", "x", "NoExecute"),
    ("slow", "yes", "PreferNoSchedule"),
]
# The events a scheduling cycle records (not the binding threads', which may interleave).
CYCLE_EVENTS = {"filter", "feasible", "score", "selected", "unschedulable", "error"}

node_kinds = st.fixed_dictionaries(
    {
        "cpu": st.sampled_from(["0", "1", "2", "4"]),
        "memory": st.sampled_from(["0", "1Gi", "4Gi"]),
        "pods": st.sampled_from(["1", "2", "110"]),
        "unschedulable": st.booleans(),
        "taints": st.lists(st.sampled_from(TAINTS), unique=True, max_size=2),
        "running": st.sampled_from([None, "100m", "1"]),
    }
)
pod_specs = st.fixed_dictionaries(
    {
        "cpu": st.sampled_from([None, "0", "100m", "1", "3"]),
        "memory": st.sampled_from([None, "100Mi", "2Gi"]),
        "tolerate": st.lists(
            st.sampled_from(TAINTS + [("node.kubernetes.io/unschedulable", "", "NoSchedule")]),
            unique=True,
            max_size=2,
        ),
        "priority": st.sampled_from([None, 10]),
    }
)


def build(step: int, kinds: list[dict[str, Any]], count: int, seed: int) -> Any:
    sched = offline_scheduler(step, seed=seed, config=None)
    nodes, running = [], []
    for i in range(count):
        kind = kinds[i % len(kinds)]
        node = node_of(f"n-{i:03d}x", cpu=kind["cpu"], memory=kind["memory"], pods=kind["pods"])
        node.spec.unschedulable = kind["unschedulable"] or None
        node.spec.taints = [
            client.V1Taint(key=k, value=v or None, effect=e) for k, v, e in kind["taints"]
        ] or None
        nodes.append(node)
        if kind["running"]:
            pod = pod_asking(f"running-{i:03d}x", container("c", cpu=kind["running"]))
            pod.spec.node_name = node.metadata.name
            running.append(pod)
    add_nodes(sched, *nodes)
    for pod in running:
        sched.cache.add_pod(pod)
    return sched


def to_pod(i: int, spec: dict[str, Any]) -> client.V1Pod:
    requests = {k: spec[k] for k in ("cpu", "memory") if spec[k] is not None}
    pod = pod_asking(f"pod-{i}x", container("c", **requests))
    pod.spec.tolerations = [
        client.V1Toleration(key=k, operator="Equal", value=v, effect=e)
        if v
        else client.V1Toleration(key=k, operator="Exists", effect=e)
        for k, v, e in spec["tolerate"]
    ] or None
    pod.spec.priority = spec["priority"]
    return pod


def node_by_node(step: int, sched: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Turn the batch paths off: step 17's loops decide."""
    schedule_one = step_module(step, "schedule_one")
    framework_of(sched).run_filter_plugins_batch = lambda *args: None

    def prioritize(sched: Any, fwk: Any, state: Any, pod: Any, nodes: Any) -> Any:
        node_scores = schedule_one.prioritize_nodes(sched, fwk, state, pod, nodes)
        index = sched.snapshot.node_arrays().index
        rows = np.array([index[ns.name] for ns in node_scores], np.intp)
        return rows, np.array([ns.score for ns in node_scores], np.int64)

    def select(sched: Any, totals: Any) -> int:
        fw = step_module(step, "framework")
        scores = [fw.NodeScore(str(i), int(s)) for i, s in enumerate(totals)]
        return int(schedule_one.select_host(sched, scores))

    monkeypatch.setattr(schedule_one, "prioritize_nodes_batch", prioritize)
    monkeypatch.setattr(schedule_one, "select_host_batch", select)


def run(step: int, sched: Any, pods: list[client.V1Pod]) -> tuple[Any, ...]:
    schedule_one = step_module(step, "schedule_one")
    for pod in pods:
        add_pods(sched, pod)
        sched.scheduling_queue.add(pod)
        schedule_one.schedule_one(sched)
    events = [
        (e, {k: v for k, v in f.items() if k != "seconds"})
        for e, f in sched.recorder.events
        if e in CYCLE_EVENTS
    ]
    return events, sched.next_start_node_index, sched.rng.random()


@pytest.mark.parametrize("step", STEPS, ids=lambda n: f"step{n}")
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    kinds=st.lists(node_kinds, min_size=1, max_size=4),
    count=st.sampled_from([1, 2, 7, 130]),
    specs=st.lists(pod_specs, min_size=1, max_size=6),
    seed=st.integers(0, 3),
)
def test_batch_decides_as_node_by_node(
    step: int,
    kinds: list[dict[str, Any]],
    count: int,
    specs: list[dict[str, Any]],
    seed: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pods = [to_pod(i, spec) for i, spec in enumerate(specs)]
    batch = run(step, build(step, kinds, count, seed), pods)
    with monkeypatch.context() as m:
        sched = build(step, kinds, count, seed)
        node_by_node(step, sched, m)
        plain = run(step, sched, [to_pod(i, spec) for i, spec in enumerate(specs)])
    assert batch == plain


@pytest.mark.parametrize("step", STEPS, ids=lambda n: f"step{n}")
def test_the_batch_path_runs(step: int) -> None:
    """The comparison above is not between two node-by-node runs: the scheduler as built uses
    the batch paths for a plain pod."""
    sched = build(
        step,
        [
            {
                "cpu": "4",
                "memory": "4Gi",
                "pods": "110",
                "unschedulable": False,
                "taints": [],
                "running": None,
            }
        ],
        130,
        1,
    )
    calls = []
    fwk = framework_of(sched)
    original = fwk.run_filter_plugins_batch

    def counted(*args: Any) -> Any:
        passed = original(*args)
        calls.append(passed is not None)
        return passed

    fwk.run_filter_plugins_batch = counted
    run(step, sched, [to_pod(0, {"cpu": "1", "memory": None, "tolerate": [], "priority": None})])
    assert calls == [True]
