"""The first steps' scheduling queue: a FIFO that blocks in pop() and wakes on close()."""

from __future__ import annotations

import threading

import pytest
from kubernetes.client import V1ObjectMeta, V1Pod, V1PodSpec

from minisched.report import NullRecorder
from tests.conftest import built_steps, step_module

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
