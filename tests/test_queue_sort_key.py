"""Step 18's activeQ orders pods by PrioritySort's ``sort_key`` (a tuple worked out once per
pod) instead of calling its ``less`` per comparison: the same order, whatever is added,
updated, deleted and popped."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kubernetes import client

from tests.conftest import built_steps, step_module

STEPS = built_steps(18)

# (operation, pod index, priority, timestamp): add (or update) a pod, delete it, or pop.
operations = st.lists(
    st.tuples(
        st.sampled_from(["add", "add", "add", "delete", "pop"]),
        st.integers(0, 7),
        st.sampled_from([None, -5, 0, 0, 10, 2**31 - 1]),
        st.sampled_from([0.0, 1.0, 1.0, 2.5]),
    ),
    max_size=40,
)


def pod_info(step: int, i: int, priority: int | None, timestamp: float) -> Any:
    fw = step_module(step, "framework")
    pod = client.V1Pod(
        metadata=client.V1ObjectMeta(name=f"p{i}", namespace="default", uid=f"u{i}"),
        spec=client.V1PodSpec(containers=[], priority=priority),
    )
    return fw.QueuedPodInfo(pod=pod, timestamp=timestamp, initial_attempt_timestamp=timestamp)


@pytest.mark.parametrize("step", STEPS, ids=lambda n: f"step{n}")
@settings(max_examples=200, deadline=None)
@given(ops=operations)
def test_sort_key_pops_in_less_order(step: int, ops: list[tuple[str, int, Any, float]]) -> None:
    queue = step_module(step, "scheduling_queue")
    plugin = step_module(step, "plugins.prioritysort").PrioritySort()
    by_less = queue.Heap(queue.pod_info_key, plugin.less)
    by_key = queue.Heap(queue.pod_info_key, plugin.less, plugin.sort_key)
    for op, i, priority, timestamp in ops:
        if op == "add":
            by_less.add(pod_info(step, i, priority, timestamp))
            by_key.add(pod_info(step, i, priority, timestamp))
        elif op == "delete":
            a, b = by_less.delete(f"default/p{i}"), by_key.delete(f"default/p{i}")
            assert (a is None) == (b is None)
        else:
            a, b = by_less.pop(), by_key.pop()
            assert (a and a.pod.metadata.name) == (b and b.pod.metadata.name)
    # What is left comes out in the same order; among equals (same priority and timestamp)
    # the heap's own order decides, the same for both.
    left = [by_less.pop() for _ in range(len(by_less))]
    right = [by_key.pop() for _ in range(len(by_key))]
    assert [p.pod.metadata.name for p in left] == [p.pod.metadata.name for p in right]


@pytest.mark.parametrize("step", STEPS, ids=lambda n: f"step{n}")
def test_the_scheduler_queue_uses_the_sort_key(step: int) -> None:
    from tests.fakes import offline_scheduler

    sched = offline_scheduler(step, config=None)
    assert sched.scheduling_queue._active_q._sort_key is not None
