"""Every failure puts the pod back in the scheduling queue; only a FitError sets the plugins
that rejected it, as v1.23's error func (steps 6+). Driven by a FakeClock and the fake API
client: no test sleeps."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import built_steps, step_module
from tests.fakes import (
    add_nodes,
    add_pods,
    framework_of,
    make_node,
    make_pod,
    new_framework,
    offline_scheduler,
    set_framework,
)
from tests.test_permit import FakePermit, join_binding_threads

STEPS = built_steps(6)
EVENT_STEPS = built_steps(7)
FLUSH_STEPS = built_steps(8)
step_param = pytest.mark.parametrize("step", STEPS, ids=lambda n: f"step{n}")


def where(sched: Any, name: str) -> tuple[str, Any]:
    """The sub-queue holding the pod, and its QueuedPodInfo."""
    q = sched.scheduling_queue
    key = f"default/{name}"
    if q._active_q.get(key) is not None:
        return "activeQ", q._active_q.get(key)
    if q._pod_backoff_q.get(key) is not None:
        return "podBackoffQ", q._pod_backoff_q.get(key)
    p_info = q._unschedulable_q.get(f"{name}_default")
    return ("unschedulableQ", p_info) if p_info is not None else ("none", None)


def attempt(sched: Any, step: int, *pods: Any) -> None:
    """Queue the pods (as the informer would) and run one scheduling cycle."""
    add_pods(sched, *pods)
    for pod in pods:
        sched.scheduling_queue.add(pod)
    step_module(step, "schedule_one").schedule_one(sched)
    join_binding_threads()


def retry(sched: Any, step: int) -> None:
    """Once the backoff is over, move every parked pod to activeQ and run one cycle."""
    sched.clock.advance(10)
    # Step 6's events are labels that move every pod.
    q = step_module(step, "scheduling_queue")
    sched.scheduling_queue.move_all_to_active_or_backoff_queue(
        getattr(q, "WILDCARD_EVENT", "WildCardEvent")
    )
    step_module(step, "schedule_one").schedule_one(sched)
    join_binding_threads()


@step_param
def test_a_fit_error_parks_the_pod_with_the_filter_plugins_that_rejected_it(step: int) -> None:
    sched = offline_scheduler(step)
    add_nodes(sched, make_node("node0", unschedulable=True))
    attempt(sched, step, make_pod("pod1"))
    queue, p_info = where(sched, "pod1")
    assert queue == "unschedulableQ"
    assert p_info.unschedulable_plugins == {"NodeUnschedulable"}
    assert p_info.attempts == 1


@step_param
def test_no_nodes_parks_the_pod_for_any_event(step: int) -> None:
    sched = offline_scheduler(step)
    attempt(sched, step, make_pod("pod1"))
    assert where(sched, "pod1")[0] == "unschedulableQ"
    assert where(sched, "pod1")[1].unschedulable_plugins == set()


@step_param
def test_the_same_queued_pod_info_comes_back_on_every_retry(step: int) -> None:
    sched = offline_scheduler(step)
    add_nodes(sched, make_node("node0", unschedulable=True))
    attempt(sched, step, make_pod("pod1"))
    first = where(sched, "pod1")[1]
    start = first.initial_attempt_timestamp
    retry(sched, step)
    queue, again = where(sched, "pod1")
    assert queue == "unschedulableQ" and again is first
    assert (again.attempts, again.initial_attempt_timestamp) == (2, start)
    assert again.timestamp == start + 10  # the failure refreshed the timestamp
    # The backoff grew with the attempts: 2 s now.
    assert sched.scheduling_queue.get_backoff_time(again) - again.timestamp == 2


def _permit(step: int, sched: Any, status: Any, timeout: float = 0.0) -> None:
    plugin = FakePermit("Gate", status, timeout)
    set_framework(
        sched,
        new_framework(step, {"Gate": lambda a, h: plugin}, permit=["Gate"], clock=sched.clock),
    )


@step_param
def test_a_permit_rejection_keeps_the_last_fit_errors_plugins(step: int) -> None:
    # v1.23's error func sets UnschedulablePlugins for FitErrors only: a rejection at Permit
    # leaves the set of the pod's last FitError in place (later releases record Gate).
    fw = step_module(step, "framework")
    sched = offline_scheduler(step)
    add_nodes(sched, make_node("node0", unschedulable=True))
    attempt(sched, step, make_pod("pod1"))
    assert where(sched, "pod1")[1].unschedulable_plugins == {"NodeUnschedulable"}
    _permit(step, sched, fw.Status(fw.Code.UNSCHEDULABLE, ["closed"]))
    add_nodes(sched, make_node("node1"))
    retry(sched, step)
    queue, p_info = where(sched, "pod1")
    assert queue == "unschedulableQ" and p_info.unschedulable_plugins == {"NodeUnschedulable"}
    assert p_info.attempts == 2


@step_param
def test_a_permit_error_records_no_rejecting_plugin(step: int) -> None:
    # Upstream re-queues a Permit plugin's error as a plain error: no rejector, so any event
    # may move the pod (the failed plugin named in the status is not recorded).
    fw = step_module(step, "framework")
    sched = offline_scheduler(step)
    _permit(step, sched, fw.Status(fw.Code.ERROR, ["broken"]))
    add_nodes(sched, make_node("node1"))
    attempt(sched, step, make_pod("pod1"))
    queue, p_info = where(sched, "pod1")
    assert queue == "unschedulableQ" and p_info.unschedulable_plugins == set()


@step_param
def test_a_permit_timeout_records_no_rejecting_plugin(step: int) -> None:
    fw = step_module(step, "framework")
    sched = offline_scheduler(step)
    _permit(step, sched, fw.Status(fw.Code.WAIT), 10.0)
    add_nodes(sched, make_node("node1"))
    add_pods(sched, make_pod("pod1"))
    sched.scheduling_queue.add(make_pod("pod1"))
    step_module(step, "schedule_one").schedule_one(sched)
    sched.clock.advance(10)
    join_binding_threads()
    queue, p_info = where(sched, "pod1")
    assert queue == "unschedulableQ" and p_info.unschedulable_plugins == set()
    assert sched.client.bindings == []


@step_param
def test_a_score_error_keeps_the_last_fit_errors_plugins(step: int) -> None:
    fw = step_module(step, "framework")
    sched = offline_scheduler(step)
    add_nodes(sched, make_node("node1", unschedulable=True))
    attempt(sched, step, make_pod("pod1"))  # first a FitError: NodeUnschedulable is recorded

    class BadScore:
        def name(self) -> str:
            return "BadScore"

        def score(self, *args: Any) -> tuple[int, Any]:
            return 0, fw.Status(fw.Code.ERROR, ["broken"])

        def score_extensions(self) -> None:
            return None

    set_framework(
        sched,
        new_framework(
            step, {"BadScore": lambda a, h: BadScore()}, score=["BadScore"], clock=sched.clock
        ),
    )
    add_nodes(sched, make_node("node2"), make_node("node3"))
    retry(sched, step)
    queue, p_info = where(sched, "pod1")
    assert queue == "unschedulableQ" and p_info.unschedulable_plugins == {"NodeUnschedulable"}
    assert "broken" in sched.recorder.of("error")[-1]["message"]


@step_param
def test_no_nodes_after_a_fit_error_keeps_its_plugins(step: int) -> None:
    sched = offline_scheduler(step)
    add_nodes(sched, make_node("node0", unschedulable=True))
    attempt(sched, step, make_pod("pod1"))
    sched.node_informer.store._pop("node0")
    retry(sched, step)
    queue, p_info = where(sched, "pod1")
    assert queue == "unschedulableQ" and p_info.unschedulable_plugins == {"NodeUnschedulable"}
    assert p_info.attempts == 2


@pytest.mark.parametrize("step", EVENT_STEPS, ids=lambda n: f"step{n}")
def test_a_pod_rejected_by_node_unschedulable_then_by_no_nodes_ignores_a_pod_delete(
    step: int,
) -> None:
    # The consequence of keeping the set: AssignedPodDelete, which NodeUnschedulable did not
    # register, leaves the pod where it is, as upstream.
    q = step_module(step, "scheduling_queue")
    sched = offline_scheduler(step)
    add_nodes(sched, make_node("node0", unschedulable=True))
    attempt(sched, step, make_pod("pod1"))
    sched.node_informer.store._pop("node0")
    retry(sched, step)
    sched.scheduling_queue.move_all_to_active_or_backoff_queue(q.ASSIGNED_POD_DELETE)
    assert where(sched, "pod1")[0] == "unschedulableQ"


@pytest.mark.parametrize("step", EVENT_STEPS, ids=lambda n: f"step{n}")
def test_a_pod_whose_permit_plugin_failed_with_an_error_moves_on_any_event(step: int) -> None:
    # The Permit plugin registered only Node/Add; its error makes it no rejector, so a pod
    # delete moves the pod, as upstream.
    fw = step_module(step, "framework")
    q = step_module(step, "scheduling_queue")
    sched = offline_scheduler(step)

    class NodeAddGate(FakePermit):
        def events_to_register(self) -> list[Any]:
            return [fw.ClusterEvent(fw.GVK.NODE, fw.ActionType.ADD)]

    plugin = NodeAddGate("Gate", fw.Status(fw.Code.ERROR, ["broken"]), 0.0)
    set_framework(
        sched,
        new_framework(step, {"Gate": lambda a, h: plugin}, permit=["Gate"], clock=sched.clock),
    )
    sched.scheduling_queue.cluster_event_map = framework_of(sched).cluster_event_map
    add_nodes(sched, make_node("node1"))
    attempt(sched, step, make_pod("pod1"))
    assert where(sched, "pod1")[0] == "unschedulableQ"
    sched.scheduling_queue.move_all_to_active_or_backoff_queue(q.ASSIGNED_POD_DELETE)
    assert where(sched, "pod1")[0] in ("activeQ", "podBackoffQ")


@step_param
def test_a_failed_bind_is_kept_in_the_backoff_queue_and_never_lost(step: int) -> None:
    sched = offline_scheduler(step)
    add_nodes(sched, make_node("node-x"))  # no digit: NodeNumber lets the pod go at once
    sched.client.fail_binds = 1
    attempt(sched, step, make_pod("pod1"))
    assert sched.client.bindings == []
    # The failure made a move request, so the pod backs off instead of waiting for an event.
    queue, p_info = where(sched, "pod1")
    assert queue == "podBackoffQ" and p_info.attempts == 1
    # Upstream's message, with the Status body's message (not the raw JSON) at its end: what
    # `kubectl describe` shows in the event and the PodScheduled condition.
    message = (
        'binding rejected: running Bind plugin "DefaultBinder": '
        'pod pod1 is already assigned to node "elsewhere"'
    )
    assert sched.recorder.of("error")[-1]["message"] == message
    [(_, args)] = [c for c in sched.client.calls if c[0] == "patch_namespaced_pod_status"]
    condition = args[2]["status"]["conditions"][0]
    assert (condition["reason"], condition["message"]) == ("SchedulerError", message)
    assert ("Warning", "FailedScheduling", message) in sched.event_recorder.events


@pytest.mark.parametrize("step", FLUSH_STEPS, ids=lambda n: f"step{n}")
def test_a_failed_bind_is_retried_after_its_backoff_and_bound_once(step: int) -> None:
    sched = offline_scheduler(step)
    add_nodes(sched, make_node("node-x"))
    sched.client.fail_binds = 1
    sched.scheduling_queue.run()
    attempt(sched, step, make_pod("pod1"))
    sched.clock.advance(2)  # past the 1 s backoff and a flush tick
    assert where(sched, "pod1")[0] == "activeQ"
    step_module(step, "schedule_one").schedule_one(sched)
    assert sched.client.wait_for_bindings(1)
    join_binding_threads()
    assert sched.client.bindings == [("default/pod1", "node-x")]
    sched.scheduling_queue.close()


@step_param
def test_a_pod_deleted_or_bound_meanwhile_is_not_requeued(step: int) -> None:
    sched = offline_scheduler(step)
    add_nodes(sched, make_node("node0", unschedulable=True))
    sched.scheduling_queue.add(make_pod("gone"))  # never in the informer cache
    step_module(step, "schedule_one").schedule_one(sched)
    assert where(sched, "gone")[0] == "none"

    add_pods(sched, make_pod("bound", node_name="node9"))
    sched.scheduling_queue.add(make_pod("bound"))
    step_module(step, "schedule_one").schedule_one(sched)
    assert where(sched, "bound")[0] == "none"


@step_param
def test_the_requeued_pod_is_the_informers_latest_version(step: int) -> None:
    sched = offline_scheduler(step)
    add_nodes(sched, make_node("node0", unschedulable=True))
    sched.scheduling_queue.add(make_pod("pod1"))
    newer = make_pod("pod1")
    newer.metadata.resource_version = "7"
    add_pods(sched, newer)
    step_module(step, "schedule_one").schedule_one(sched)
    assert where(sched, "pod1")[1].pod is newer


@step_param
def test_an_update_with_the_same_resource_version_is_ignored(step: int) -> None:
    sched = offline_scheduler(step)
    pod = make_pod("pod1")
    sched.pod_informer._notify("add", pod)
    p_info = sched.scheduling_queue.pop()
    sched.pod_informer._notify("update", pod, make_pod("pod1"))  # a relist: same version
    assert where(sched, "pod1")[0] == "none"
    newer = make_pod("pod1")
    newer.metadata.resource_version = "2"
    sched.pod_informer._notify("update", pod, newer)
    assert where(sched, "pod1")[0] == "activeQ"
    assert p_info.pod is pod
