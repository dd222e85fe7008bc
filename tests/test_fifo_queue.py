"""The first steps' scheduling queue: a FIFO that blocks in pop() and wakes on close()."""

from __future__ import annotations

import threading

import pytest
from kubernetes.client import V1ObjectMeta, V1Pod, V1PodSpec

from minisched.recorder import NullRecorder
from tests.conftest import built_steps, step_module
from tests.fakes import ListRecorder, make_pod, offline_scheduler

FIFO_STEPS = built_steps(1, 5)


def pod(name: str, rv: str = "1") -> V1Pod:
    return V1Pod(
        metadata=V1ObjectMeta(name=name, namespace="ns", resource_version=rv),
        spec=V1PodSpec(containers=[]),
    )


@pytest.fixture(params=FIFO_STEPS, ids=[f"step{n}" for n in FIFO_STEPS])
def queue(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    return step_module(request.param, "scheduling_queue").SchedulingQueue(NullRecorder())


def test_pops_in_arrival_order(queue) -> None:  # type: ignore[no-untyped-def]
    for name in ("a", "b", "c"):
        queue.add(pod(name))
    assert [queue.pop().metadata.name for _ in range(3)] == ["a", "b", "c"]


def test_update_keeps_the_place_and_the_newest_version(queue) -> None:  # type: ignore[no-untyped-def]
    queue.add(pod("a"))
    queue.add(pod("b"))
    queue.update(pod("a"), pod("a", rv="2"))
    first = queue.pop()
    assert (first.metadata.name, first.metadata.resource_version) == ("a", "2")


def test_update_of_an_unknown_pod_queues_it(queue) -> None:  # type: ignore[no-untyped-def]
    queue.update(pod("a"), pod("a", rv="2"))
    assert queue.pop().metadata.name == "a"


def test_delete_removes_the_pod(queue) -> None:  # type: ignore[no-untyped-def]
    queue.add(pod("a"))
    queue.add(pod("b"))
    queue.delete(pod("a"))
    assert [p.metadata.name for p in queue.pending_pods()] == ["b"]


def test_pop_blocks_until_a_pod_arrives(queue) -> None:  # type: ignore[no-untyped-def]
    got: list[V1Pod | None] = []
    popper = threading.Thread(target=lambda: got.append(queue.pop()))
    popper.start()
    popper.join(0.05)
    assert popper.is_alive() and got == []  # still waiting: nothing to pop
    queue.add(pod("a"))
    popper.join(5)
    assert [p.metadata.name for p in got] == ["a"]


def test_close_wakes_a_blocked_pop_with_none(queue) -> None:  # type: ignore[no-untyped-def]
    got: list[V1Pod | None] = []
    popper = threading.Thread(target=lambda: got.append(queue.pop()))
    popper.start()
    queue.close()
    popper.join(5)
    assert got == [None]


def test_a_closed_queue_still_hands_out_the_pods_it_holds(queue) -> None:  # type: ignore[no-untyped-def]
    # As upstream's Pop: closing only ends the wait of a pop on an empty queue.
    queue.add(pod("a"))
    queue.close()
    assert queue.pop().metadata.name == "a"
    assert queue.pop() is None


def test_the_fifo_is_not_reported_as_activeq() -> None:
    # activeQ is step 6's heap; the first steps' queue is a FIFO and says so.
    recorder = ListRecorder()
    for step in FIFO_STEPS:
        step_module(step, "scheduling_queue").SchedulingQueue(recorder).add(pod("a"))
    assert {f["queue"] for f in recorder.of("queue")} == {"FIFO"}


@pytest.mark.parametrize("step", FIFO_STEPS, ids=[f"step{n}" for n in FIFO_STEPS])
def test_a_relisted_pod_being_scheduled_is_not_queued_again(step: int) -> None:
    # A relist delivers every pod again as an update with the same resourceVersion. Upstream
    # (updatePodInSchedulingQueue) ignores it; queueing it would schedule the pod twice (in
    # step 5, a pod waiting at Permit would be tried again, time out and be reported failed).
    sched = offline_scheduler(step)
    p = make_pod("pod1")
    sched.pod_informer._notify("add", p)
    assert sched.scheduling_queue.pop() is p  # being scheduled: in no queue
    sched.pod_informer._notify("update", p, make_pod("pod1"))  # the relist: same version
    assert sched.scheduling_queue.pending_pods() == []
    newer = make_pod("pod1")
    newer.metadata.resource_version = "2"
    sched.pod_informer._notify("update", p, newer)  # a real change is queued, as upstream
    assert sched.scheduling_queue.pending_pods() == [newer]
