"""Step 18's limit on the pods being bound at once (schedule_one.BindingsInFlight): the
scheduling thread waits while MAX_BINDINGS_IN_FLIGHT pods are being bound, goes on as one of
them is done, and does not count a pod that waits on Permit."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from tests.conftest import built_steps, step_module
from tests.fakes import add_pods
from tests.test_noderesources import container, pod_asking
from tests.test_sampling import cluster

STEPS = built_steps(18)
step_param = pytest.mark.parametrize("step", STEPS, ids=lambda n: f"step{n}")


def held_bindings(sched: Any) -> threading.Event:
    """Make every binding POST wait until the returned event is set."""
    release = threading.Event()
    bind = sched.client.create_namespaced_pod_binding

    def held(*args: Any, **kwargs: Any) -> Any:
        assert release.wait(10), "the test never released the bindings"
        return bind(*args, **kwargs)

    sched.client.create_namespaced_pod_binding = held
    return release


def queue_pods(sched: Any, count: int) -> None:
    for i in range(count):
        pod = pod_asking(f"p{i}x", container("c", cpu="100m"))
        add_pods(sched, pod)
        sched.scheduling_queue.add(pod)


@step_param
def test_the_scheduling_thread_waits_while_the_limit_is_being_bound(step: int) -> None:
    schedule_one = step_module(step, "schedule_one")
    assert schedule_one.MAX_BINDINGS_IN_FLIGHT == 16
    sched = cluster(step, 3)
    sched.bindings_in_flight.limit = 2
    release = held_bindings(sched)
    queue_pods(sched, 3)
    schedule_one.schedule_one(sched)
    schedule_one.schedule_one(sched)
    third = threading.Thread(target=schedule_one.schedule_one, args=(sched,))
    third.start()
    # Two pods are being bound: the third cycle waits before it pops its pod.
    third.join(0.5)
    assert third.is_alive()
    assert len(sched.recorder.of("selected")) == 2
    release.set()
    third.join(10)
    assert not third.is_alive()
    assert len(sched.recorder.of("selected")) == 3
    assert sched.client.wait_for_bindings(3)


@step_param
def test_a_stopping_scheduler_does_not_wait_for_room(step: int) -> None:
    schedule_one = step_module(step, "schedule_one")
    sched = cluster(step, 3)
    sched.bindings_in_flight.limit = 1
    release = held_bindings(sched)
    queue_pods(sched, 2)
    schedule_one.schedule_one(sched)
    waiting = threading.Thread(
        target=sched.bindings_in_flight.wait_for_room, args=(sched.stopping,)
    )
    waiting.start()
    waiting.join(0.3)
    assert waiting.is_alive()
    sched.stop()
    waiting.join(5)
    assert not waiting.is_alive()
    release.set()


@step_param
def test_a_pod_waiting_on_permit_is_not_counted(step: int) -> None:
    """Coscheduling's siblings wait on Permit for each other: counting them could stop the
    scheduling thread before the last sibling, which allows them all, is scheduled."""
    schedule_one = step_module(step, "schedule_one")
    fw = step_module(step, "framework")
    sched = cluster(step, 3)
    fwk = next(iter(sched.profiles.values()))

    class Wait:
        def name(self) -> str:
            return "Wait"

        def permit(self, state: Any, pod: Any, node_name: str) -> Any:
            return fw.Status(fw.Code.WAIT), 30.0

    fwk.permit_plugins = [Wait()]
    queue_pods(sched, 2)
    schedule_one.schedule_one(sched)
    schedule_one.schedule_one(sched)
    assert [w["pod"] for w in sched.recorder.of("waiting")] == ["default/p0x", "default/p1x"]
    assert sched.bindings_in_flight._count == 0
    sched.stop()
