"""The scheduler cache (steps 9+): its pod state machine and the errors upstream returns for
each wrong transition, the expiry of assumed pods on a FakeClock, the snapshot's isolation
from later cache changes, and that deleted pods and nodes leave nothing behind."""

from __future__ import annotations

import copy
import threading
from typing import Any

import pytest

from minisched.clock import FakeClock
from tests.conftest import built_steps, step_module
from tests.fakes import make_node, make_pod

STEPS = built_steps(9)
step_param = pytest.mark.parametrize("step", STEPS, ids=lambda n: f"step{n}")


def new_cache(step: int, clock: FakeClock | None = None) -> Any:
    cache = step_module(step, "cache")
    return cache.Cache(cache.DURATION_TO_EXPIRE_ASSUMED_POD, clock or FakeClock())


def on(pod: Any, node: str) -> Any:
    """The pod with ``spec.node_name`` set, as assume and the informer's bound pod have it."""
    bound = copy.copy(pod)
    bound.spec = copy.copy(pod.spec)
    bound.spec.node_name = node
    return bound


def pods_on(step: int, cache: Any, node: str) -> list[str]:
    """The pods a fresh snapshot shows on the node."""
    snapshot = step_module(step, "snapshot").Snapshot()
    cache.update_snapshot(snapshot)
    return [p.metadata.name for p in snapshot.get(node).pods]


def error(step: int) -> type[Exception]:
    return step_module(step, "cache").CacheError


# --- the state machine -----------------------------------------------------------------------


@step_param
def test_v1_23_constants(step: int) -> None:
    cache = step_module(step, "cache")
    assert cache.CLEAN_ASSUMED_PERIOD == 1.0
    assert cache.DURATION_TO_EXPIRE_ASSUMED_POD == 15 * 60.0


@step_param
def test_an_assumed_pod_counts_on_its_node_until_forgotten(step: int) -> None:
    cache = new_cache(step)
    cache.add_node(make_node("node1"))
    pod = on(make_pod("pod1"), "node1")
    cache.assume_pod(pod)
    assert cache.is_assumed_pod(pod) and pods_on(step, cache, "node1") == ["pod1"]
    cache.forget_pod(pod)
    assert not cache.is_assumed_pod(pod) and pods_on(step, cache, "node1") == []
    with pytest.raises(error(step), match="^pod uid-pod1 wasn't assumed so cannot be forgotten$"):
        cache.forget_pod(pod)


@step_param
def test_a_pod_in_the_cache_cannot_be_assumed_again(step: int) -> None:
    cache = new_cache(step)
    pod = on(make_pod("pod1"), "node1")
    cache.assume_pod(pod)
    with pytest.raises(error(step), match="^pod uid-pod1 is in the cache, so can't be assumed$"):
        cache.assume_pod(pod)
    assert cache.pod_count() == 1


@step_param
def test_the_bound_pods_add_confirms_the_assumed_pod_without_counting_it_twice(step: int) -> None:
    clock = FakeClock()
    cache = new_cache(step, clock)
    cache.add_node(make_node("node1"))
    pod = on(make_pod("pod1"), "node1")
    cache.assume_pod(pod)
    cache.finish_binding(pod)
    informer_pod = on(make_pod("pod1"), "node1")
    cache.add_pod(informer_pod)
    assert not cache.is_assumed_pod(pod)
    assert pods_on(step, cache, "node1") == ["pod1"] and cache.pod_count() == 1
    assert cache.get_pod(pod) is informer_pod
    # Confirmed pods never expire.
    cache.cleanup_assumed_pods(clock.now() + 10 * cache.ttl)
    assert cache.pod_count() == 1
    with pytest.raises(error(step), match="^pod uid-pod1 was already in added state$"):
        cache.add_pod(informer_pod)
    with pytest.raises(error(step), match="wasn't assumed so cannot be forgotten"):
        cache.forget_pod(pod)


@step_param
def test_forget_on_another_node_than_assumed_is_refused(step: int) -> None:
    cache = new_cache(step)
    cache.assume_pod(on(make_pod("pod1"), "node1"))
    with pytest.raises(
        error(step), match="^pod uid-pod1 was assumed on node2 but assigned to node1$"
    ):
        cache.forget_pod(on(make_pod("pod1"), "node2"))
    assert cache.pod_count() == 1


@step_param
def test_a_pod_bound_elsewhere_than_assumed_counts_where_it_was_bound(step: int) -> None:
    cache = new_cache(step)
    cache.add_node(make_node("node1"))
    cache.add_node(make_node("node2"))
    cache.assume_pod(on(make_pod("pod1"), "node1"))
    cache.add_pod(on(make_pod("pod1"), "node2"))
    assert pods_on(step, cache, "node1") == [] and pods_on(step, cache, "node2") == ["pod1"]
    assert not cache.is_assumed_pod(make_pod("pod1"))


@step_param
def test_update_and_remove_need_an_added_pod(step: int) -> None:
    cache = new_cache(step)
    pod = on(make_pod("pod1"), "node1")
    not_added = "^pod uid-pod1 is not added to scheduler cache, so cannot be updated$"
    with pytest.raises(error(step), match=not_added):
        cache.update_pod(pod, pod)
    # An assumed pod gets no update before the add that confirms it.
    cache.assume_pod(pod)
    with pytest.raises(error(step), match=not_added):
        cache.update_pod(pod, pod)
    cache.forget_pod(pod)
    with pytest.raises(
        error(step),
        match="^pod uid-pod1 is not found in scheduler cache, so cannot be removed from it$",
    ):
        cache.remove_pod(pod)


@step_param
def test_an_update_replaces_the_pod_and_a_remove_drops_it(step: int) -> None:
    cache = new_cache(step)
    cache.add_node(make_node("node1"))
    old = on(make_pod("pod1"), "node1")
    cache.add_pod(old)
    new = on(make_pod("pod1"), "node1")
    new.metadata = copy.copy(old.metadata)
    new.metadata.resource_version = "2"
    cache.update_pod(old, new)
    assert cache.get_pod(old) is new and cache.pod_count() == 1
    with pytest.raises(error(step), match="updated on a different node"):
        cache.update_pod(new, on(make_pod("pod1"), "node2"))
    cache.remove_pod(new)
    assert cache.pod_count() == 0
    with pytest.raises(error(step), match="does not exist in scheduler cache"):
        cache.get_pod(old)


@step_param
def test_a_pod_without_uid_has_no_key(step: int) -> None:
    cache = new_cache(step)
    pod = on(make_pod("pod1"), "node1")
    pod.metadata = copy.copy(pod.metadata)
    pod.metadata.uid = ""
    with pytest.raises(Exception, match="^cannot get cache key for pod with empty UID$"):
        cache.assume_pod(pod)
    assert not cache.is_assumed_pod(pod)


# --- expiry ------------------------------------------------------------------------------------


@step_param
def test_an_assumed_pod_expires_only_after_its_binding_finished_and_the_ttl(step: int) -> None:
    clock = FakeClock()
    cache = new_cache(step, clock)
    cache.add_node(make_node("node1"))
    pod = on(make_pod("pod1"), "node1")
    cache.assume_pod(pod)
    cache.run()
    # Still binding: it never expires, however long that takes.
    clock.advance(2 * cache.ttl)
    assert cache.is_assumed_pod(pod)
    cache.finish_binding(pod)
    clock.advance(cache.ttl - 1)
    assert cache.is_assumed_pod(pod) and cache.pod_count() == 1
    clock.advance(2)  # past the deadline, and a 1 s tick of the loop
    assert not cache.is_assumed_pod(pod) and cache.pod_count() == 0
    assert pods_on(step, cache, "node1") == []
    # The informer's add that comes after all puts it back (upstream: "Pod was expired").
    cache.add_pod(on(make_pod("pod1"), "node1"))
    assert pods_on(step, cache, "node1") == ["pod1"]
    cache.stop()
    assert clock.pending() == 0


@step_param
def test_finish_binding_of_a_pod_not_assumed_does_nothing(step: int) -> None:
    clock = FakeClock()
    cache = new_cache(step, clock)
    pod = on(make_pod("pod1"), "node1")
    cache.add_pod(pod)
    cache.finish_binding(pod)
    cache.cleanup_assumed_pods(clock.now() + 10 * cache.ttl)
    assert cache.pod_count() == 1


# --- the snapshot ------------------------------------------------------------------------------


@step_param
def test_the_snapshot_keeps_its_view_while_the_cache_changes(step: int) -> None:
    cache = new_cache(step)
    snapshot = step_module(step, "snapshot").Snapshot()
    cache.add_node(make_node("node1"))
    cache.update_snapshot(snapshot)
    node1 = snapshot.get("node1")

    # Another thread (an informer, a binding cycle) changes the cache mid-cycle.
    def change() -> None:
        cache.assume_pod(on(make_pod("pod1"), "node1"))
        cache.add_node(make_node("node2"))

    thread = threading.Thread(target=change)
    thread.start()
    thread.join(5)
    assert [n.node().metadata.name for n in snapshot.node_infos().list()] == ["node1"]
    assert node1.pods == [] and snapshot.num_nodes() == 1
    with pytest.raises(Exception, match='^nodeinfo not found for node name "node2"$'):
        snapshot.get("node2")

    # The next cycle's update brings both in, and keeps node1's NodeInfo object.
    cache.update_snapshot(snapshot)
    assert [n.node().metadata.name for n in snapshot.list()] == ["node1", "node2"]
    assert snapshot.get("node1") is node1 and [p.metadata.name for p in node1.pods] == ["pod1"]


@step_param
def test_the_snapshot_copies_only_what_changed(step: int) -> None:
    cache = new_cache(step)
    snapshot = step_module(step, "snapshot").Snapshot()
    for name in ("node1", "node2"):
        cache.add_node(make_node(name))
    cache.update_snapshot(snapshot)
    before = {name: vars(snapshot.get(name)).copy() for name in ("node1", "node2")}
    cache.assume_pod(on(make_pod("pod1"), "node2"))
    cache.update_snapshot(snapshot)
    assert vars(snapshot.get("node1")) == before["node1"]  # untouched
    assert snapshot.get("node2").generation > before["node2"]["generation"]
    assert snapshot.generation == snapshot.get("node2").generation


@step_param
def test_a_node_info_sums_its_pods_requests(step: int) -> None:
    fw = step_module(step, "framework")
    pod = make_pod("pod1")
    pod.spec.containers[0].resources = fw_requests({"cpu": "250m", "memory": "1Gi"})
    init = copy.copy(pod.spec.containers[0])
    init.resources = fw_requests({"cpu": "1", "memory": "100Mi"})
    pod.spec.init_containers = [init]
    node_info = fw.NodeInfo()
    node_info.set_node(make_node("node1"))
    generation = node_info.generation
    node_info.add_pod(pod)
    assert node_info.generation > generation
    # Containers sum; an init container counts when it asks for more.
    assert (node_info.requested.milli_cpu, node_info.requested.memory) == (1000, 1024**3)
    assert node_info.allocatable.allowed_pod_number == 110
    node_info.remove_pod(pod)
    assert (node_info.requested.milli_cpu, node_info.requested.memory) == (0, 0)
    with pytest.raises(Exception, match="^no corresponding pod pod1 in pods of node node1$"):
        node_info.remove_pod(pod)


@step_param
def test_removing_a_pod_moves_the_last_pod_into_its_place(step: int) -> None:
    # v1.23's NodeInfo.RemovePod (and TestNodeInfoRemovePod's expected order): the last pod
    # fills the gap, so the order of the others changes.
    fw = step_module(step, "framework")
    pods = [make_pod(name, uid=f"uid-{name}") for name in ("a", "b", "c", "d")]
    node_info = fw.NodeInfo(*pods)
    node_info.remove_pod(pods[1])
    assert [p.metadata.name for p in node_info.pods] == ["a", "d", "c"]
    node_info.remove_pod(pods[3])
    assert [p.metadata.name for p in node_info.pods] == ["a", "c"]


def fw_requests(requests: dict[str, str]) -> Any:
    from kubernetes import client

    return client.V1ResourceRequirements(requests=requests)


# --- memory ------------------------------------------------------------------------------------


@step_param
def test_deleted_pods_and_nodes_leave_nothing_behind(step: int) -> None:
    cache = new_cache(step)
    snapshot = step_module(step, "snapshot").Snapshot()
    for round_ in range(3):
        nodes = [make_node(f"node{round_}-{i}") for i in range(5)]
        pods = [on(make_pod(f"pod{round_}-{i}"), f"node{round_}-{i}") for i in range(5)]
        for node, pod in zip(nodes, pods, strict=True):
            cache.add_node(node)
            cache.add_pod(pod)
        cache.update_snapshot(snapshot)
        # Nodes deleted before their pods: ghosts until the pods' deletes arrive.
        for node in nodes:
            cache.remove_node(node)
        cache.update_snapshot(snapshot)
        assert snapshot.num_nodes() == 0 and cache.node_count() == 5
        for pod in pods:
            cache.remove_pod(pod)
        cache.update_snapshot(snapshot)
    assert cache.node_count() == 0 and cache.pod_count() == 0
    assert snapshot.node_info_map == {} and snapshot.list() == []
    assert cache._pod_states == {} and cache._assumed_pods == set()
    with pytest.raises(error(step), match="^node node0-0 is not found$"):
        cache.remove_node(make_node("node0-0"))
