"""A property of the scheduling queue of steps 6-8: under any sequence of operations, no pod
is lost and none is in two places.

Hypothesis plays the scheduler and the informers against one queue and a FakeClock: pods are
added, popped, failed (with random rejecting plugins), bound, updated and deleted, cluster
events move pods, time passes and (in step 8) the flush loops run. After every operation:

- every live pod (added, neither deleted nor bound) is in exactly one of activeQ,
  podBackoffQ, unschedulableQ, or in flight (popped and not yet handed back);
- a pod is never in two sub-queues, and never queued while in flight;
- ``pop`` never hands out a pod that is already in flight;
- each heap's index matches its items and its order holds.

The test plays the scheduler's part: a pod deleted while in flight is not handed back (the
error func finds it gone), and pods in flight get no updates (upstream ignores updates of
assumed pods; what an update does to a pod in flight is a unit test of its own).
"""

from __future__ import annotations

from typing import Any

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from kubernetes.client import V1Toleration

from minisched.clock import FakeClock
from tests.conftest import built_steps, step_module
from tests.fakes import ListRecorder, make_pod

QUEUE_STEPS = built_steps(6)
NAMES = [f"pod{i}" for i in range(6)]
PLUGINS = ["NodeUnschedulable", "NodeNumber", "Other"]


def machine_for(step: int) -> type[RuleBasedStateMachine]:
    sq = step_module(step, "scheduling_queue")
    fw = step_module(step, "framework")
    less = step_module(step, "plugins.prioritysort").PrioritySort().less
    has_events = hasattr(sq.PriorityQueue, "assigned_pod_added")
    has_flush = hasattr(sq.PriorityQueue, "flush_backoff_q_completed")
    options: dict[str, Any] = {}
    if has_events:
        events: list[Any] = [
            fw.ClusterEvent(fw.GVK.NODE, fw.ActionType.ADD, "NodeAdd"),
            fw.ClusterEvent(fw.GVK.NODE, fw.ActionType.UPDATE_NODE_TAINT, "NodeTaintChange"),
            fw.ClusterEvent(fw.GVK.NODE, fw.ActionType.UPDATE_NODE_LABEL, "NodeLabelChange"),
            fw.ClusterEvent(fw.GVK.POD, fw.ActionType.DELETE, "AssignedPodDelete"),
            fw.ClusterEvent(fw.GVK.WILDCARD, fw.ActionType.ALL, "WildCardEvent"),
        ]
        options["cluster_event_map"] = {
            fw.ClusterEvent(fw.GVK.NODE, fw.ActionType.ADD | fw.ActionType.UPDATE_NODE_TAINT): {
                "NodeUnschedulable"
            },
            fw.ClusterEvent(fw.GVK.NODE, fw.ActionType.ADD): {"NodeNumber"},
        }
    else:
        events = ["NodeAdd", "AssignedPodDelete"]  # step 6: labels, matching every pod

    class QueueMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.clock = FakeClock()
            self.q = sq.PriorityQueue(less, self.clock, ListRecorder(), **options)
            if has_flush:
                self.q.run()
            self.live: set[str] = set()  # added, and neither deleted nor bound
            self.in_flight: dict[str, Any] = {}  # name -> the QueuedPodInfo pop returned
            self.pops: dict[str, int] = {}  # name -> pops since it was added
            self.version: dict[str, int] = {}

        def teardown(self) -> None:
            self.q.close()

        # --- the informers ---

        @rule(name=st.sampled_from(NAMES), priority=st.sampled_from([None, 0, 5]))
        def add(self, name: str, priority: int | None) -> None:
            if name in self.live or name in self.in_flight:
                return  # the informer adds a pod once; names are not reused while in flight
            self.live.add(name)
            self.pops[name] = 0
            self.version[name] = 1
            self.q.add(make_pod(name, priority=priority))

        @rule(name=st.sampled_from(NAMES), meaningful=st.booleans())
        def update(self, name: str, meaningful: bool) -> None:
            if name not in self.live or name in self.in_flight:
                return
            old = make_pod(name)
            self.version[name] += 1
            new = make_pod(
                name, tolerations=[V1Toleration(operator="Exists")] if meaningful else None
            )
            new.metadata.resource_version = str(self.version[name])
            self.q.update(old, new)

        @rule(name=st.sampled_from(NAMES))
        def delete(self, name: str) -> None:
            self.q.delete(make_pod(name))
            self.live.discard(name)

        # --- the scheduler ---

        @precondition(lambda self: len(self.q._active_q) > 0)
        @rule()
        def pop(self) -> None:
            cycle = self.q.scheduling_cycle
            p_info = self.q.pop()
            name = p_info.pod.metadata.name
            assert name not in self.in_flight, f"{name} popped twice"
            assert self.q.scheduling_cycle == cycle + 1
            self.pops[name] += 1
            assert p_info.attempts == self.pops[name]
            self.in_flight[name] = p_info

        @precondition(lambda self: self.in_flight)
        @rule(data=st.data(), plugins=st.sets(st.sampled_from(PLUGINS), max_size=2))
        def fail(self, data: st.DataObject, plugins: set[str]) -> None:
            name = data.draw(st.sampled_from(sorted(self.in_flight)))
            p_info = self.in_flight.pop(name)
            if name not in self.live:
                return  # the error func finds the pod gone and drops it
            p_info.unschedulable_plugins = set(plugins)
            err = self.q.add_unschedulable_if_not_present(p_info, self.q.scheduling_cycle)
            assert err is None, err

        @precondition(lambda self: self.in_flight)
        @rule(data=st.data())
        def bind(self, data: st.DataObject) -> None:
            name = data.draw(st.sampled_from(sorted(self.in_flight)))
            del self.in_flight[name]
            self.live.discard(name)
            self.q.delete(make_pod(name))  # the informer sees it bound: no longer ours

        # --- cluster events and time ---

        @rule(event=st.sampled_from(events), only=st.none() | st.sampled_from(NAMES))
        def move(self, event: Any, only: str | None) -> None:
            check = None if only is None else (lambda pod: pod.metadata.name == only)
            self.q.move_all_to_active_or_backoff_queue(event, check)

        @rule(seconds=st.sampled_from([0.25, 1, 3, 10, 61]))
        def advance(self, seconds: float) -> None:
            self.clock.advance(seconds)

        if has_events:

            @rule()
            def assigned_pod_added(self) -> None:
                self.q.assigned_pod_added(make_pod("bound", node_name="node1"))

        if has_flush:

            @rule()
            def flush(self) -> None:
                self.q.flush_backoff_q_completed()
                self.q.flush_unschedulable_q_leftover()

        # --- the property ---

        @invariant()
        def nothing_lost_nothing_twice(self) -> None:
            q = self.q
            active = [p.pod.metadata.name for p in q._active_q.list()]
            backoff = [p.pod.metadata.name for p in q._pod_backoff_q.list()]
            unschedulable = [p.pod.metadata.name for p in q._unschedulable_q.values()]
            queued = active + backoff + unschedulable
            assert len(queued) == len(set(queued)), (active, backoff, unschedulable)
            assert not set(queued) & set(self.in_flight)
            assert set(queued) <= self.live  # a deleted or bound pod is never queued
            assert set(queued) | (set(self.in_flight) & self.live) == self.live
            assert sorted(p.metadata.name for p in q.pending_pods()) == sorted(queued)

        @invariant()
        def heaps_are_consistent(self) -> None:
            for heap in (self.q._active_q, self.q._pod_backoff_q):
                items = heap._items
                assert {heap._key(item): i for i, item in enumerate(items)} == heap._index
                for i in range(1, len(items)):
                    assert not heap._less(items[i], items[(i - 1) // 2])

    QueueMachine.__name__ = f"QueueMachineStep{step}"
    return QueueMachine


@pytest.mark.parametrize("step", QUEUE_STEPS, ids=[f"step{n}" for n in QUEUE_STEPS])
def test_no_pod_is_lost_or_in_two_places(step: int) -> None:
    run_state_machine_as_test(
        machine_for(step),
        settings=settings(
            max_examples=150,
            stateful_step_count=60,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
