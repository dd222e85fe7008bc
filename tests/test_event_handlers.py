"""Cluster events (steps 7+): plugins register the events that can help the pods they reject,
and the informers' handlers turn pod and node changes into queue moves."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from minisched.informer import DeletedFinalStateUnknown
from tests.conftest import built_steps, step_module
from tests.fakes import add_nodes, add_pods, framework_of, make_node, make_pod, offline_scheduler
from tests.test_permit import FakePermit, join_binding_threads

STEPS = built_steps(7)
step_param = pytest.mark.parametrize("step", STEPS, ids=lambda n: f"step{n}")


def where(sched: Any, name: str) -> str:
    q = sched.scheduling_queue
    key = f"default/{name}"
    if q._active_q.get(key) is not None:
        return "activeQ"
    if q._pod_backoff_q.get(key) is not None:
        return "podBackoffQ"
    return "unschedulableQ" if f"{name}_default" in q._unschedulable_q else "none"


def parked(step: int, *names: str) -> Any:
    """A scheduler whose pods failed on a cordoned node0 and wait in unschedulableQ, with
    their backoff over."""
    sched = offline_scheduler(step)
    add_nodes(sched, make_node("node0", unschedulable=True))
    for name in names:
        pod = make_pod(name)
        add_pods(sched, pod)
        sched.pod_informer._notify("add", pod)
        step_module(step, "schedule_one").schedule_one(sched)
        assert where(sched, name) == "unschedulableQ"
    sched.clock.advance(1)
    return sched


def node_event(sched: Any, what: str, *nodes: Any) -> None:
    sched.node_informer._notify(what, *nodes)


# --- registration --------------------------------------------------------------------------------


@step_param
def test_each_plugin_registers_its_events_under_its_own_name(step: int) -> None:
    fw = step_module(step, "framework")
    sched = offline_scheduler(step)
    expected = {
        fw.ClusterEvent(fw.GVK.NODE, fw.ActionType.ADD | fw.ActionType.UPDATE_NODE_TAINT): {
            "NodeUnschedulable"
        },
        fw.ClusterEvent(fw.GVK.NODE, fw.ActionType.ADD): {"NodeNumber"},
        # PrioritySort has no EnqueueExtensions: it is registered for every event.
        fw.ClusterEvent(fw.GVK.WILDCARD, fw.ActionType.ALL): {"PrioritySort"},
    }
    if step == 9:  # MaxPods
        expected[fw.ClusterEvent(fw.GVK.POD, fw.ActionType.DELETE)] = {"MaxPods"}
        node_add_or_allocatable = fw.ActionType.ADD | fw.ActionType.UPDATE_NODE_ALLOCATABLE
        expected[fw.ClusterEvent(fw.GVK.NODE, node_add_or_allocatable)] = {"MaxPods"}
    if step >= 10:  # NodeResourcesFit, as v1.23 registers it
        expected[fw.ClusterEvent(fw.GVK.POD, fw.ActionType.DELETE)] = {"NodeResourcesFit"}
        node_add_or_update = fw.ActionType.ADD | fw.ActionType.UPDATE
        expected[fw.ClusterEvent(fw.GVK.NODE, node_add_or_update)] = {"NodeResourcesFit"}
    if step >= 9:  # the Bind plugins, which have no EnqueueExtensions either
        expected[fw.ClusterEvent(fw.GVK.WILDCARD, fw.ActionType.ALL)] |= {
            "FlakyBinder",
            "DefaultBinder",
        }
    if step >= 11:  # DefaultPreemption, which has no EnqueueExtensions in v1.23
        expected[fw.ClusterEvent(fw.GVK.WILDCARD, fw.ActionType.ALL)] |= {"DefaultPreemption"}
    if step >= 13:  # NodeAffinity and TaintToleration, as v1.23 registers them
        node_add_or_update = fw.ActionType.ADD | fw.ActionType.UPDATE
        expected[fw.ClusterEvent(fw.GVK.NODE, node_add_or_update)] |= {
            "NodeAffinity",
            "TaintToleration",
        }
        # A Score plugin without EnqueueExtensions is registered for every event too.
        expected[fw.ClusterEvent(fw.GVK.WILDCARD, fw.ActionType.ALL)] |= {
            "NodeResourcesBalancedAllocation"
        }
    assert framework_of(sched).cluster_event_map == expected
    assert sched.scheduling_queue.cluster_event_map is framework_of(sched).cluster_event_map


@step_param
def test_a_plugin_that_registers_nothing_is_in_no_event(step: int) -> None:
    runtime = step_module(step, "runtime")

    class Deaf:
        def name(self) -> str:
            return "Deaf"

        def events_to_register(self) -> list[Any]:
            return []

    event_map: dict[Any, set[str]] = {}
    runtime.fill_event_to_plugin_map(Deaf(), event_map)
    assert event_map == {}


# --- nodes ---------------------------------------------------------------------------------------


@step_param
def test_a_new_node_moves_pods_rejected_by_node_unschedulable(step: int) -> None:
    sched = parked(step, "pod1")
    node_event(sched, "add", make_node("node1"))
    assert where(sched, "pod1") == "activeQ"
    assert sched.recorder.of("queue")[-1] == {
        "pod": "default/pod1",
        "queue": "activeQ",
        "event": "NodeAdd",
    }


@step_param
def test_a_pod_still_backing_off_goes_to_the_backoff_queue(step: int) -> None:
    sched = parked(step)
    pod = make_pod("pod1")
    add_pods(sched, pod)
    sched.pod_informer._notify("add", pod)
    step_module(step, "schedule_one").schedule_one(sched)
    node_event(sched, "add", make_node("node1"))  # right after the failure
    assert where(sched, "pod1") == "podBackoffQ"


def _with(node: Any, **changes: Any) -> Any:
    new = client.V1Node.from_dict(node.to_dict())
    for path, value in changes.items():
        obj, attr = new, path.split(".")
        for part in attr[:-1]:
            obj = getattr(obj, part)
        setattr(obj, attr[-1], value)
    new.metadata.resource_version = "2"
    return new


def _ready(status: str) -> client.V1NodeStatus:
    return client.V1NodeStatus(
        allocatable={"cpu": "4"},
        conditions=[client.V1NodeCondition(type="Ready", status=status, message="m")],
    )


@step_param
@pytest.mark.parametrize(
    ("change", "label"),
    [
        ({"spec.unschedulable": False}, "NodeSpecUnschedulableChange"),
        ({"spec.unschedulable": True}, None),  # cordoned: helps nobody
        ({"status": client.V1NodeStatus(allocatable={"cpu": "8"})}, "NodeAllocatableChange"),
        ({"metadata.labels": {"zone": "a"}}, "NodeLabelChange"),
        (
            {"spec.taints": [client.V1Taint(key="k", effect="NoSchedule")]},
            "NodeTaintChange",
        ),
        ({"status": _ready("False")}, "NodeConditionChange"),
        ({"metadata.annotations": {"a": "b"}}, None),
    ],
)
def test_node_updates_are_classified_like_upstream(
    step: int, change: dict[str, Any], label: str | None
) -> None:
    handlers = step_module(step, "eventhandlers")
    old = make_node("node0")
    old.status = _ready("True")
    if change.get("spec.unschedulable") is False:
        old.spec.unschedulable = True
    event = handlers.node_scheduling_properties_change(_with(old, **change), old)
    assert (event.label if event else None) == label


@step_param
def test_the_first_matching_change_wins(step: int) -> None:
    handlers = step_module(step, "eventhandlers")
    old = make_node("node0", unschedulable=True)
    new = _with(old, **{"spec.unschedulable": False, "metadata.labels": {"zone": "a"}})
    assert handlers.node_scheduling_properties_change(new, old).label == (
        "NodeSpecUnschedulableChange"
    )


@step_param
def test_uncordoning_a_node_moves_node_unschedulable_pods(step: int) -> None:
    sched = parked(step, "pod1")
    old = make_node("node0", unschedulable=True)
    node_event(sched, "update", old, _with(old, **{"metadata.labels": {"zone": "a"}}))
    assert where(sched, "pod1") == "unschedulableQ"  # a label change does not help
    node_event(sched, "update", old, _with(old, **{"spec.unschedulable": False}))
    assert where(sched, "pod1") == "activeQ"
    assert sched.recorder.of("queue")[-1]["event"] == "NodeSpecUnschedulableChange"


@step_param
def test_deleting_a_node_moves_nobody(step: int) -> None:
    sched = parked(step, "pod1")
    node_event(sched, "delete", make_node("node0"))
    node_event(sched, "delete", DeletedFinalStateUnknown("node1", make_node("node1")))
    assert where(sched, "pod1") == "unschedulableQ"


@step_param
def test_a_pod_rejected_at_permit_has_no_rejector_and_moves_on_any_event(step: int) -> None:
    # v1.23 records no rejecting plugin for a Permit rejection (later releases record it): a
    # node update that NodeNumber (Node Add only) did not register moves the pod all the same.
    fw = step_module(step, "framework")
    sched = offline_scheduler(step)
    reject = FakePermit("NodeNumber", fw.Status(fw.Code.UNSCHEDULABLE, ["no"]))
    framework_of(sched).permit_plugins = [reject]
    add_nodes(sched, make_node("node1"))
    pod = make_pod("pod1")
    add_pods(sched, pod)
    sched.pod_informer._notify("add", pod)
    step_module(step, "schedule_one").schedule_one(sched)
    sched.clock.advance(1)
    assert where(sched, "pod1") == "unschedulableQ"
    old = make_node("node1", unschedulable=True)
    node_event(sched, "update", old, _with(old, **{"spec.unschedulable": False}))
    assert where(sched, "pod1") == "activeQ"


# --- pods ----------------------------------------------------------------------------------------


@step_param
def test_a_bound_pod_leaves_the_queue_and_counts_as_a_move_request(step: int) -> None:
    sched = offline_scheduler(step)
    pod = make_pod("pod1")
    sched.pod_informer._notify("add", pod)
    assert where(sched, "pod1") == "activeQ"
    bound = make_pod("pod1", node_name="node1")
    bound.metadata.resource_version = "2"
    sched.pod_informer._notify("update", pod, bound)
    assert where(sched, "pod1") == "none"
    assert sched.scheduling_queue.move_request_cycle == 0  # AssignedPodAdd


@step_param
def test_deleting_an_assigned_pod_moves_pods_for_any_event(step: int) -> None:
    sched = parked(step, "pod1")
    sched.scheduling_queue._unschedulable_q["pod1_default"].unschedulable_plugins = set()
    sched.pod_informer._notify("delete", make_pod("other", node_name="node0"))
    assert where(sched, "pod1") == "activeQ"
    assert sched.recorder.of("queue")[-1]["event"] == "AssignedPodDelete"


@step_param
def test_an_assigned_pod_recreated_under_its_name_counts_as_a_delete_and_an_add(step: int) -> None:
    """A delete and an add merged into one update (a new UID): upstream's updatePodInCache
    treats it as both, so the delete moves pods that any event may help."""
    sched = parked(step, "pod1")
    sched.scheduling_queue._unschedulable_q["pod1_default"].unschedulable_plugins = set()
    old = make_pod("other", node_name="node0")
    new = make_pod("other", node_name="node0", uid="uid-other-2")
    new.metadata.resource_version = "2"
    sched.pod_informer._notify("update", old, new)
    assert where(sched, "pod1") == "activeQ"
    assert sched.recorder.of("queue")[-1]["event"] == "AssignedPodDelete"


@step_param
def test_pods_of_other_schedulers_are_not_queued(step: int) -> None:
    sched = offline_scheduler(step)
    pod = make_pod("theirs")
    pod.spec.scheduler_name = "default-scheduler"
    sched.pod_informer._notify("add", pod)
    assert where(sched, "theirs") == "none"


@step_param
def test_deleting_a_pod_waiting_on_permit_rejects_it_and_it_is_not_requeued(step: int) -> None:
    sched = offline_scheduler(step)
    add_nodes(sched, make_node("node8"))
    pod = make_pod("pod8")
    add_pods(sched, pod)
    sched.pod_informer._notify("add", pod)
    step_module(step, "schedule_one").schedule_one(sched)  # waits 8 s on NodeNumber
    assert framework_of(sched).get_waiting_pod(pod.metadata.uid) is not None
    sched.pod_informer.store._pop("default/pod8")
    sched.pod_informer._notify("delete", pod)
    join_binding_threads()
    assert framework_of(sched).get_waiting_pod(pod.metadata.uid) is None
    assert sched.client.bindings == []
    assert where(sched, "pod8") == "none"


# --- preCheckForNode ----------------------------------------------------------------------------


def _taint(effect: str, key: str = "dedicated") -> client.V1Taint:
    return client.V1Taint(key=key, value="gpu", effect=effect)


@step_param
def test_a_new_node_with_an_untolerated_no_schedule_taint_moves_no_pod(step: int) -> None:
    # Upstream's preCheckForNode is fixed: whatever plugins run, a pod that does not tolerate
    # the new node's NoSchedule or NoExecute taint is not moved; the move request is recorded.
    sched = parked(step, "pod1")
    cycle = sched.scheduling_queue.scheduling_cycle
    node_event(sched, "add", make_node("node1", taints=[_taint("NoSchedule")]))
    assert where(sched, "pod1") == "unschedulableQ"
    assert sched.scheduling_queue.move_request_cycle == cycle
    node_event(sched, "add", make_node("node2", taints=[_taint("NoExecute")]))
    assert where(sched, "pod1") == "unschedulableQ"
    node_event(sched, "add", make_node("node3", taints=[_taint("PreferNoSchedule")]))
    assert where(sched, "pod1") == "activeQ"


@step_param
def test_a_tolerated_taint_lets_a_new_node_move_the_pod(step: int) -> None:
    sched = parked(step, "pod1")
    p_info = sched.scheduling_queue._unschedulable_q["pod1_default"]
    p_info.pod.spec.tolerations = [client.V1Toleration(key="dedicated", operator="Exists")]
    node_event(sched, "add", make_node("node1", taints=[_taint("NoSchedule")]))
    assert where(sched, "pod1") == "activeQ"


@step_param
def test_a_node_update_moves_only_pods_whose_node_affinity_it_matches(step: int) -> None:
    sched = parked(step, "pod1", "pod2")
    q = sched.scheduling_queue
    q._unschedulable_q["pod1_default"].pod.spec.node_selector = {"zone": "a"}
    term = client.V1NodeSelectorTerm(
        match_expressions=[
            client.V1NodeSelectorRequirement(key="zone", operator="In", values=["b"])
        ]
    )
    q._unschedulable_q["pod2_default"].pod.spec.affinity = client.V1Affinity(
        node_affinity=client.V1NodeAffinity(
            required_during_scheduling_ignored_during_execution=client.V1NodeSelector(
                node_selector_terms=[term]
            )
        )
    )
    old = make_node("node0", unschedulable=True)
    uncordoned = _with(old, **{"spec.unschedulable": False})
    uncordoned.metadata.labels = {"zone": "b"}
    node_event(sched, "update", old, uncordoned)
    assert (where(sched, "pod1"), where(sched, "pod2")) == ("unschedulableQ", "activeQ")


@step_param
def test_required_node_affinity_operators(step: int) -> None:
    if step >= 13:  # NodeAffinity's matching, which pre_check_for_node shares from step 13

        def match(pod: Any, node: Any) -> bool:
            return step_module(step, "corev1").get_required_node_affinity(pod).match(node)[0]

    else:
        match = step_module(step, "eventhandlers").required_node_affinity_matches
    node = make_node("node1")
    node.metadata.labels = {"zone": "a", "cores": "8"}

    def pod_with(*requirements: tuple[str, str, list[str] | None], field: bool = False) -> Any:
        exprs = [
            client.V1NodeSelectorRequirement(key=k, operator=o, values=v)
            for k, o, v in requirements
        ]
        term = client.V1NodeSelectorTerm(
            **{"match_fields" if field else "match_expressions": exprs}
        )
        pod = make_pod("p")
        pod.spec.affinity = client.V1Affinity(
            node_affinity=client.V1NodeAffinity(
                required_during_scheduling_ignored_during_execution=client.V1NodeSelector(
                    node_selector_terms=[term]
                )
            )
        )
        return pod

    assert match(make_pod("p"), node)
    assert match(pod_with(("zone", "In", ["a", "b"])), node)
    assert not match(pod_with(("zone", "NotIn", ["a"])), node)
    assert match(pod_with(("gpu", "NotIn", ["yes"])), node)  # an absent label is not in
    assert match(pod_with(("zone", "Exists", None), ("gpu", "DoesNotExist", None)), node)
    assert match(pod_with(("cores", "Gt", ["4"])), node)
    assert not match(pod_with(("cores", "Lt", ["4"])), node)
    assert not match(pod_with(("zone", "Gt", ["4"])), node)  # not a number
    assert match(pod_with(("metadata.name", "In", ["node1"]), field=True), node)
    assert not match(pod_with(("metadata.name", "In", ["node2"]), field=True), node)
