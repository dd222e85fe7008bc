"""The queue's nominator (steps 11+): AddNominatedPod, DeleteNominatedPodIfExists,
UpdateNominatedPod and NominatedPodsForNode, as v1.23's scheduling_queue.go has them."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from minisched.clock import FakeClock
from tests.conftest import built_steps, step_module
from tests.fakes import ListRecorder, make_pod

STEPS = built_steps(11)
step_param = pytest.mark.parametrize("step", STEPS, ids=lambda n: f"step{n}")


def nominated(name: str, nnn: str | None = None, node_name: str | None = None) -> Any:
    p = make_pod(name, node_name=node_name)
    p.status = client.V1PodStatus(nominated_node_name=nnn)
    return p


class Store:
    def __init__(self, *pods: Any) -> None:
        self.pods = {f"{p.metadata.namespace}/{p.metadata.name}": p for p in pods}

    def get_by_key(self, key: str) -> Any:
        return self.pods.get(key)


def names(nominator: Any, node: str) -> list[str]:
    return [p.metadata.name for p in nominator.nominated_pods_for_node(node)]


@step_param
def test_a_pod_is_nominated_once_to_its_status_node_or_the_override(step: int) -> None:
    q = step_module(step, "scheduling_queue")
    fw = step_module(step, "framework")
    a, b = nominated("a", "n1"), nominated("b")
    nominator = q.Nominator(lambda: Store(a, b))
    nominator.add_nominated_pod(a, None)
    nominator.add_nominated_pod(a, None)
    nominator.add_nominated_pod(b, None)  # no nominatedNodeName: nothing
    assert names(nominator, "n1") == ["a"]
    nominator.add_nominated_pod(b, fw.NominatingInfo("n1", fw.NominatingMode.OVERRIDE))
    nominator.add_nominated_pod(a, fw.NominatingInfo("n2", fw.NominatingMode.OVERRIDE))
    assert (names(nominator, "n1"), names(nominator, "n2")) == (["b"], ["a"])
    nominator.delete_nominated_pod_if_exists(b)
    assert names(nominator, "n1") == []


@step_param
def test_a_pod_gone_or_bound_is_not_nominated(step: int) -> None:
    q = step_module(step, "scheduling_queue")
    bound = nominated("bound", "n1", node_name="n1")
    nominator = q.Nominator(lambda: Store(bound))
    nominator.add_nominated_pod(nominated("gone", "n1"), None)
    nominator.add_nominated_pod(bound, None)
    assert names(nominator, "n1") == []


@step_param
def test_an_update_without_nominated_node_keeps_the_nominators_node(step: int) -> None:
    q = step_module(step, "scheduling_queue")
    fw = step_module(step, "framework")
    old, new = nominated("a"), nominated("a")
    new.metadata.labels = {"changed": "yes"}
    nominator = q.Nominator(lambda: Store(new))
    nominator.add_nominated_pod(old, fw.NominatingInfo("n1", fw.NominatingMode.OVERRIDE))
    # The status update with nominatedNodeName has not come back yet: the node is kept.
    nominator.update_nominated_pod(old, new)
    [kept] = nominator.nominated_pods_for_node("n1")
    assert kept.metadata.labels == {"changed": "yes"}
    # An update that clears nominatedNodeName clears the nomination.
    cleared = nominated("a")
    nominator.update_nominated_pod(nominated("a", "n1"), cleared)
    assert names(nominator, "n1") == []


@step_param
def test_the_queue_nominates_on_add_and_forgets_on_delete(step: int) -> None:
    q = step_module(step, "scheduling_queue")
    a = nominated("a", "n1")
    nominator = q.Nominator(lambda: Store(a))
    queue = q.PriorityQueue(
        lambda x, y: False, FakeClock(), ListRecorder(), pod_nominator=nominator
    )
    queue.add(a)
    assert names(nominator, "n1") == ["a"]
    queue.delete(a)
    assert names(nominator, "n1") == []


@step_param
def test_a_node_whose_last_nominated_pod_leaves_has_no_entry(step: int) -> None:
    # A node without nominated pods is answered without the lock, by its missing entry: the
    # entry goes with the node's last pod, and a hit is a copy the caller may change.
    q = step_module(step, "scheduling_queue")
    fw = step_module(step, "framework")
    a, b = nominated("a", "n1"), nominated("b", "n1")
    nominator = q.Nominator(lambda: Store(a, b))
    nominator.add_nominated_pod(a, None)
    nominator.add_nominated_pod(b, None)
    got = nominator.nominated_pods_for_node("n1")
    got.clear()
    assert names(nominator, "n1") == ["a", "b"]
    nominator.delete_nominated_pod_if_exists(a)
    assert names(nominator, "n1") == ["b"]
    nominator.add_nominated_pod(b, fw.NominatingInfo("n2", fw.NominatingMode.OVERRIDE))
    assert names(nominator, "n1") == []
    assert "n1" not in nominator._nominated_pods
    assert names(nominator, "n2") == ["b"]
    assert nominator.nominated_pods_for_node("n3") == []


@step_param
def test_the_nominated_pods_handed_out_are_copies(step: int) -> None:
    # v1.23's NominatedPodsForNode deep-copies each PodInfo "so the caller can mutate safely".
    q = step_module(step, "scheduling_queue")
    a = nominated("a", "n1")
    nominator = q.Nominator(lambda: Store(a))
    nominator.add_nominated_pod(a, None)
    [copy] = nominator.nominated_pods_for_node("n1")
    assert copy is not a and copy == a
    copy.metadata.labels = {"changed": "by the caller"}
    copy.spec.priority = 7
    [again] = nominator.nominated_pods_for_node("n1")
    assert again.metadata.labels is None and again.spec.priority is None
