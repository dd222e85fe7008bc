"""scheduler-plugins v0.23.10's Coscheduling tests, ported case by case, with the queue's
Activate and the plugin's args beside them.

Ported from kubernetes-sigs/scheduler-plugins at v0.23.10 (the local mirror's tag):

- pkg/coscheduling/coscheduling_test.go: TestLess, TestPermit, TestPostFilter (the plugin);
- pkg/coscheduling/core/core_test.go: TestPreFilter, TestPermit, TestPostBind,
  TestCheckClusterResource (PodGroupManager and CheckClusterResource);
- apis/config/v1beta2/defaults_test.go and apis/config/v1beta3/defaults_test.go: the
  CoschedulingArgs cases of TestSchedulingDefaults;
- apis/config/scheme/scheme_test.go: TestCodecsDecodePluginConfig and
  TestCodecsEncodePluginConfig, restricted to the Coscheduling entry of their pluginConfig
  (the other entries are the args of plugins no step has: kept in the file, not compared).

The fixtures are upstream's, from test/util (v0.23.10): ``make_nodes_and_pods`` is
MakeNodesAndPods (pod ``i`` on node ``i % nodes``, labels rotated as there), ``make_pg`` is MakePG
(scheduleTimeoutSeconds 10), ``FakeSharedLister`` is NewFakeSharedLister (one NodeInfo per node
name the pods or nodes give, a pod without a node on a NodeInfo without a Node). The pods are
kube-scheduler v1.23.10's st.MakePod and st.MakeNode (``Capacity`` puts ``pods: 32`` first, and
sets allocatable too), from the mirror's vendor tree. Upstream's informer stores and listers are
``PodGroupStore`` and ``PodStore``; its fake PodGroup clientset is ``FakePodGroupClient``, which
applies each merge patch to its copy of the group, as the clientset's tracker does; upstream's
framework handle (st.NewFramework with PrioritySort and DefaultBinder) is the step's Framework
built for that profile. Times: upstream's ``time.Now()`` is a fixed instant here; groups are
created at datetimes and pods first tried at the same instants in epoch seconds, on one scale
(``clock_minus_wall`` 0). A QueuedPodInfo without an InitialAttemptTimestamp has Go's zero time,
-inf here, as ``GetCreationTimestamp`` has for a group without a creation time.

kube-scheduler v1.23.10's scheduling_queue_test.go has no test of Activate (the queue's own
tests are in tests/test_upstream_scheduling_queue.py). TestPriorityQueue_Activate came with a
later release (its file already calls unschedulableQ ``unschedulablePods``; read in the public
code index, where no v1.23 copy has it); Activate is the same there as in v1.23.10, so its four
cases run here, on v1.23's sub-queues. The ``test_activate_*`` tests are this project's: the
ForceActivate label, the pods left alone, the nomination, the wake-up of a waiting ``pop``.

The tests marked ``beyond upstream`` check what the upstream tables leave out: Less ordering by
the group's creation time (TestLess passes as well without it), CheckClusterResource taking
the group's own pods off a node (TestCheckClusterResource's pod is on no node), Permit's wait
time and the siblings it activates, the waiting siblings that Permit allows and PostFilter
rejects, PreFilter's memory of a permitted group, and an enabled Coscheduling without args.

Every case runs against step 16, which brings Coscheduling, and every later built step. The ids
are ``<upstream file>.<test>/<case>`` (the file without ``.go``), with the version first for
the two defaults_test.go files.
"""

from __future__ import annotations

import copy
import json
import math
import os
import threading
import time
from datetime import datetime, timedelta, timezone
from types import ModuleType
from typing import Any

import pytest
from kubernetes import client

from minisched.clock import FakeClock
from tests.conftest import built_steps, step_module
from tests.fakes import FakeCoreV1Api, ListRecorder
from tests.test_upstream_scheduling_queue import Queue, high_pri_nominated_pod

STEPS = built_steps(16)
step_param = pytest.mark.parametrize("step", STEPS, ids=lambda n: f"step{n}")

POD_GROUP_LABEL = "pod-group.scheduling.sigs.k8s.io"
V1BETA2 = "kubescheduler.config.k8s.io/v1beta2"
V1BETA3 = "kubescheduler.config.k8s.io/v1beta3"

# Upstream's time.Now(), fixed; and Go's zero time.Time, before every other.
NOW = datetime(2022, 9, 1, 12, 0, tzinfo=timezone.utc)
GO_ZERO_TIME = -math.inf
# The scheduleTimeout every upstream test gives the manager and the plugin (10 * time.Second).
SCHEDULE_TIMEOUT = 10.0


class Modules:
    """The step's modules the tests use."""

    def __init__(self, step: int) -> None:
        self.step = step
        self.cos: ModuleType = step_module(step, "plugins.coscheduling")
        self.pg: ModuleType = step_module(step, "podgroup")
        self.fw: ModuleType = step_module(step, "framework")
        self.cycle_state: ModuleType = step_module(step, "cycle_state")


# --- upstream's fixtures (st.MakePod, st.MakeNode, test/util) --------------------------------


def make_pod(
    name: str = "",
    namespace: str = "",
    uid: str = "",
    *,
    labels: dict[str, str] | None = None,
    priority: int | None = None,
    node: str = "",
    req: dict[str, str] | None = None,
    zero_termination_grace_period: bool = False,
) -> client.V1Pod:
    """st.MakePod().Name(name).Namespace(namespace).UID(uid).Label(...).Priority(...).Node(...)
    .Req(...).ZeroTerminationGracePeriod(): Go's zero values where a call is left out (no
    containers; ``Req`` adds one with the requests)."""
    containers = []
    if req:
        containers.append(
            client.V1Container(
                name="con0",
                image="k8s.gcr.io/pause:3.6",
                resources=client.V1ResourceRequirements(requests=dict(req)),
            )
        )
    return client.V1Pod(
        metadata=client.V1ObjectMeta(
            name=name, namespace=namespace, uid=uid, labels=dict(labels) if labels else None
        ),
        spec=client.V1PodSpec(
            containers=containers,
            node_name=node or None,
            priority=priority,
            termination_grace_period_seconds=0 if zero_termination_grace_period else None,
        ),
    )


def make_node(name: str, capacity: dict[str, str] | None = None) -> client.V1Node:
    """st.MakeNode().Name(name).Capacity(capacity): ``pods: 32`` unless given, as capacity and
    allocatable."""
    res = {"pods": "32", **(capacity or {})}
    return client.V1Node(
        metadata=client.V1ObjectMeta(name=name),
        status=client.V1NodeStatus(capacity=dict(res), allocatable=dict(res)),
    )


def make_nodes_and_pods(
    labels: dict[str, str], existing_pods_num: int, all_nodes_num: int
) -> tuple[list[client.V1Pod], list[client.V1Node]]:
    """Upstream: MakeNodesAndPods. Nodes of 1 cpu and 20 pods; pod ``i`` on node ``i % nodes``
    with labels[0], labels[0,1], ..., labels[all] in turn (Go's map order; one label here)."""
    label_pairs = list(labels.items())
    nodes = [make_node(f"node{i}", {"cpu": "1", "pods": "20"}) for i in range(all_nodes_num)]
    pods = []
    for i in range(existing_pods_num):
        pair_labels = dict(label_pairs[: i % len(label_pairs) + 1])
        pods.append(make_pod(f"pod{i}", labels=pair_labels, node=f"node{i % all_nodes_num}"))
    return pods, nodes


def make_pg(
    m: Modules,
    name: str,
    namespace: str,
    min_member: int,
    creation_time: datetime | None = None,
    min_resources: dict[str, str] | None = None,
) -> Any:
    """Upstream: MakePG: scheduleTimeoutSeconds 10, the creation time and minResources if
    given."""
    return m.pg.PodGroup(
        metadata=client.V1ObjectMeta(
            name=name, namespace=namespace, creation_timestamp=creation_time
        ),
        spec=m.pg.PodGroupSpec(
            min_member=min_member, schedule_timeout_seconds=10, min_resources=min_resources
        ),
    )


class FakeSharedLister:
    """Upstream: NewFakeSharedLister: a NodeInfo per node name the pods and the nodes give (a
    pod without a node lands on the NodeInfo of node "", which has no Node)."""

    def __init__(self, m: Modules, pods: list[client.V1Pod], nodes: list[client.V1Node]) -> None:
        infos: dict[str, Any] = {}
        for pod in pods:
            infos.setdefault(pod.spec.node_name or "", m.fw.NodeInfo()).add_pod(pod)
        for node in nodes:
            infos.setdefault(node.metadata.name, m.fw.NodeInfo()).set_node(node)
        self.node_info_map = infos

    def node_infos(self) -> FakeSharedLister:
        return self

    def list(self) -> list[Any]:
        return list(self.node_info_map.values())

    def get(self, node_name: str) -> Any:
        return self.node_info_map.get(node_name)


class PodGroupStore:
    """The PodGroup informer's store, as the plugin reads it (upstream: pgInformer's lister)."""

    def __init__(self, *pgs: Any) -> None:
        self.pgs = {f"{pg.metadata.namespace}/{pg.metadata.name}": pg for pg in pgs}

    def get_by_key(self, key: str) -> Any:
        return self.pgs.get(key)


class PodStore:
    """The pod informer's store (upstream: podInformer.Lister())."""

    def __init__(self, *pods: client.V1Pod) -> None:
        self.pods = list(pods)

    def list(self) -> list[client.V1Pod]:
        return list(self.pods)


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: what the API server (and the fake tracker) does with one."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


class FakePodGroupClient:
    """Upstream: fakepgclientset.NewSimpleClientset(pgs...): copies of the groups, patched by
    merge patches; every patch recorded."""

    def __init__(self, m: Modules, *pgs: Any) -> None:
        self.m = m
        self.objects = {
            f"{pg.metadata.namespace}/{pg.metadata.name}": pg.model_copy(deep=True) for pg in pgs
        }
        self.patches: list[tuple[str, str, dict[str, Any]]] = []

    def patch(self, namespace: str, name: str, patch: dict[str, Any]) -> None:
        self.patches.append((namespace, name, patch))
        key = f"{namespace}/{name}"
        current = self.objects[key].model_dump(mode="json", by_alias=True)
        self.objects[key] = self.m.pg.PodGroup.model_validate(merge_patch(current, patch))

    def get(self, namespace: str, name: str) -> Any:
        return self.objects[f"{namespace}/{name}"]


def new_handle(m: Modules, snapshot: FakeSharedLister) -> Any:
    """Upstream: st.NewFramework with PrioritySort (QueueSort) and DefaultBinder (Bind), the
    fake clientset and the snapshot: the step's Framework, which holds the waiting pods."""
    config = step_module(m.step, "config")
    registry = step_module(m.step, "plugins").new_registry()
    names = ("PrioritySort", "DefaultBinder")
    profile = config.KubeSchedulerProfile(
        scheduler_name="",
        plugins=config.Plugins(
            queue_sort=config.PluginSet(enabled=[config.Plugin("PrioritySort")]),
            bind=config.PluginSet(enabled=[config.Plugin("DefaultBinder")]),
        ),
    )
    return step_module(m.step, "runtime").Framework(
        {n: registry[n] for n in names},
        profile,
        FakeClock(),
        ListRecorder(),
        client_set=FakeCoreV1Api(),
        snapshot_shared_lister=snapshot,
    )


def new_manager(
    m: Modules,
    *pgs: Any,
    snapshot: FakeSharedLister | None = None,
    pods: tuple[client.V1Pod, ...] = (),
    pg_client: FakePodGroupClient | None = None,
    clock: FakeClock | None = None,
) -> Any:
    """Upstream: core.NewPodGroupManager(cs, snapshot, &scheduleTimeout, pgInformer,
    podInformer), or the &PodGroupManager{...} literal of core_test.go."""
    return m.cos.PodGroupManager(
        pg_client,
        snapshot,
        SCHEDULE_TIMEOUT,
        PodGroupStore(*pgs),
        PodStore(*pods),
        (clock or FakeClock()).now,
        0.0,
    )


def pg_label(name: str) -> dict[str, str]:
    return {POD_GROUP_LABEL: name}


# --- coscheduling_test.go: TestLess -----------------------------------------------------------

# time.Now() plus 0, 1, 2, 3, -2, -1 seconds.
TIME_OFFSETS = [0, 1, 2, 3, -2, -1]
LOW_PRIORITY, HIGH_PRIORITY = 10, 100

# Each pod: (priority, its group's label or None, the index of its InitialAttemptTimestamp in
# ``times`` or None for the zero time). p1 is namespace1/pod1, p2 namespace2/pod2.
LessPod = tuple[int, str | None, int | None]
LESS_CASES: list[tuple[str, LessPod, LessPod, bool]] = [
    (
        "p1.priority less than p2.priority",
        (LOW_PRIORITY, None, None),
        (HIGH_PRIORITY, None, None),
        False,
    ),
    (
        "p1.priority greater than p2.priority",
        (HIGH_PRIORITY, None, None),
        (LOW_PRIORITY, None, None),
        True,
    ),
    (
        "equal priority. p1 is added to schedulingQ earlier than p2",
        (HIGH_PRIORITY, None, 0),
        (HIGH_PRIORITY, None, 1),
        True,
    ),
    (
        "equal priority. p2 is added to schedulingQ earlier than p1",
        (HIGH_PRIORITY, None, 1),
        (HIGH_PRIORITY, None, 0),
        False,
    ),
    (
        "p1.priority less than p2.priority, p1 belongs to podGroup1",
        (LOW_PRIORITY, "pg1", None),
        (HIGH_PRIORITY, None, None),
        False,
    ),
    (
        "p1.priority greater than p2.priority, p1 belongs to podGroup1",
        (HIGH_PRIORITY, "pg1", None),
        (LOW_PRIORITY, None, None),
        True,
    ),
    (
        "equal priority. p1 is added to schedulingQ earlier than p2, p1 belongs to podGroup3",
        (HIGH_PRIORITY, "pg3", 0),
        (HIGH_PRIORITY, None, 1),
        True,
    ),
    (
        "equal priority. p2 is added to schedulingQ earlier than p1, p1 belongs to podGroup3",
        (HIGH_PRIORITY, "pg3", 1),
        (HIGH_PRIORITY, None, 0),
        False,
    ),
    (
        "p1.priority less than p2.priority, p1 belongs to podGroup1 and p2 belongs to podGroup2",
        (LOW_PRIORITY, "pg1", None),
        (HIGH_PRIORITY, "pg2", None),
        False,
    ),
    (
        "p1.priority greater than p2.priority, p1 belongs to podGroup1 and p2 belongs to podGroup2",
        (HIGH_PRIORITY, "pg1", None),
        (LOW_PRIORITY, "pg2", None),
        True,
    ),
    (
        "equal priority. p1 is added to schedulingQ earlier than p2, p1 belongs to podGroup1 "
        "and p2 belongs to podGroup2",
        (HIGH_PRIORITY, "pg1", 0),
        (HIGH_PRIORITY, "pg2", 1),
        True,
    ),
    (
        "equal priority. p2 is added to schedulingQ earlier than p1, p1 belongs to podGroup4 "
        "and p2 belongs to podGroup3",
        (HIGH_PRIORITY, "pg4", 1),
        (HIGH_PRIORITY, "pg3", 0),
        False,
    ),
    (
        "equal priority and creation time, p1 belongs to podGroup1 and p2 belongs to podGroup2",
        (HIGH_PRIORITY, "pg1", 0),
        (HIGH_PRIORITY, "pg2", 0),
        True,
    ),
    (
        "equal priority and creation time, p2 belong to podGroup2",
        (HIGH_PRIORITY, None, 0),
        (HIGH_PRIORITY, "pg2", 0),
        True,
    ),
]


def queued_pod_info(
    m: Modules, namespace: str, name: str, p: LessPod, times: list[datetime]
) -> Any:
    priority, group, t = p
    pod = make_pod(name, namespace, priority=priority, labels=pg_label(group) if group else None)
    ts = GO_ZERO_TIME if t is None else times[t].timestamp()
    return m.fw.QueuedPodInfo(pod=pod, timestamp=ts, initial_attempt_timestamp=ts)


@step_param
@pytest.mark.parametrize(
    "name,p1,p2,expected",
    [pytest.param(*c, id=f"coscheduling_test.TestLess/{c[0]}") for c in LESS_CASES],
)
def test_less(step: int, name: str, p1: LessPod, p2: LessPod, expected: bool) -> None:
    m = Modules(step)
    times = [NOW + timedelta(seconds=d) for d in TIME_OFFSETS]
    # Note the namespaces: pg1 is namespace1's, pg2..pg4 namespace2's; p1 is in namespace1,
    # so its pg3 and pg4 are groups that do not exist (its own timestamp counts), as upstream.
    pgs = [
        make_pg(m, "pg1", "namespace1", 5, times[2]),
        make_pg(m, "pg2", "namespace2", 5, times[3]),
        make_pg(m, "pg3", "namespace2", 5, times[4]),
        make_pg(m, "pg4", "namespace2", 5, times[5]),
    ]
    existing_pods, all_nodes = make_nodes_and_pods({"test": "a"}, 60, 30)
    snapshot = FakeSharedLister(m, existing_pods, all_nodes)
    pg_mgr = new_manager(m, *pgs, snapshot=snapshot, pg_client=FakePodGroupClient(m))
    # Upstream: &Coscheduling{pgMgr: pgMgr}: no handle, no scheduleTimeout.
    coscheduling = m.cos.Coscheduling(None, pg_mgr, 0.0)
    qp1 = queued_pod_info(m, "namespace1", "pod1", p1, times)
    qp2 = queued_pod_info(m, "namespace2", "pod2", p2, times)
    assert coscheduling.less(qp1, qp2) is expected


# --- coscheduling_test.go: TestPermit ---------------------------------------------------------

PLUGIN_PERMIT_CASES = [
    pytest.param(
        make_pod("pod1", uid="pod1"),
        "SUCCESS",
        id="coscheduling_test.TestPermit/pods do not belong to any podGroup",
    ),
    pytest.param(
        make_pod("pod1", "ns1", "pod1", labels=pg_label("pg1")),
        "WAIT",
        id="coscheduling_test.TestPermit/pods belong to a podGroup, Wait",
    ),
    pytest.param(
        make_pod("pod1", "ns1", "pod1", labels=pg_label("pg2")),
        "SUCCESS",
        id="coscheduling_test.TestPermit/pods belong to a podGroup, Allow",
    ),
]


@step_param
@pytest.mark.parametrize("pod,expected", PLUGIN_PERMIT_CASES)
def test_plugin_permit(step: int, pod: client.V1Pod, expected: str) -> None:
    m = Modules(step)
    pgs = [make_pg(m, "pg1", "ns1", 2), make_pg(m, "pg2", "ns1", 1)]
    existing_pods, all_nodes = make_nodes_and_pods({"test": "a"}, 60, 30)
    snapshot = FakeSharedLister(m, existing_pods, all_nodes)
    f = new_handle(m, snapshot)
    pg_mgr = new_manager(m, *pgs, snapshot=snapshot, pg_client=FakePodGroupClient(m))
    coscheduling = m.cos.Coscheduling(f, pg_mgr, SCHEDULE_TIMEOUT)
    status, _ = coscheduling.permit(m.cycle_state.CycleState(), pod, "test")
    assert status.code == m.fw.Code[expected]


# --- coscheduling_test.go: TestPostFilter -----------------------------------------------------

POST_FILTER_CASES = [
    pytest.param(
        make_pod("pod1", "ns1", "pod1"),
        False,
        False,
        id="coscheduling_test.TestPostFilter/pod does not belong to any pod group",
    ),
    pytest.param(
        make_pod("pod1", "ns1", "pod1", labels=pg_label("pg")),
        True,
        True,
        id="coscheduling_test.TestPostFilter/enough pods assigned, do not reject all",
    ),
    pytest.param(
        make_pod("pod1", "ns1", "pod1", labels=pg_label("pg")),
        False,
        False,
        id="coscheduling_test.TestPostFilter/pod failed at filter phase, reject all pods",
    ),
]


@step_param
@pytest.mark.parametrize("pod,expected_empty_msg,group_pod_snapshot", POST_FILTER_CASES)
def test_post_filter(
    step: int, pod: client.V1Pod, expected_empty_msg: bool, group_pod_snapshot: bool
) -> None:
    m = Modules(step)
    node_status_map = {"node1": m.fw.Status(m.fw.Code.SUCCESS)}
    pg = make_pg(m, "pg", "ns1", 2)
    existing_pods, all_nodes = make_nodes_and_pods({"test": "a"}, 60, 30)
    snapshot = FakeSharedLister(m, existing_pods, all_nodes)
    f = new_handle(m, snapshot)
    # Ten pods of the group, each on its node (pod i on node i): enough for minMember 2.
    existing_pods, all_nodes = make_nodes_and_pods(pg_label("pg"), 10, 30)
    for p in existing_pods:
        p.metadata.namespace = "ns1"
    group_snapshot = FakeSharedLister(m, existing_pods, all_nodes)
    mgr_snapshot = group_snapshot if group_pod_snapshot else snapshot
    pg_mgr = new_manager(m, pg, snapshot=mgr_snapshot, pg_client=FakePodGroupClient(m))
    coscheduling = m.cos.Coscheduling(f, pg_mgr, SCHEDULE_TIMEOUT)
    _, status = coscheduling.post_filter(m.cycle_state.CycleState(), pod, node_status_map)
    assert (status.message() == "") is expected_empty_msg


# --- core_test.go: TestPreFilter --------------------------------------------------------------


def pg_pod(name: str, group: str, req: dict[str, str] | None = None) -> client.V1Pod:
    """st.MakePod().Name(name).UID(name).Namespace("ns1").Label(PodGroupLabel, group)."""
    return make_pod(name, "ns1", name, labels=pg_label(group), req=req)


PRE_FILTER_CASES = [
    pytest.param(
        make_pod("p", "ns1", "p"),
        [pg_pod("pg1-1", "pg1"), pg_pod("pg2-1", "pg2")],
        True,
        id="core_test.TestPreFilter/pod does not belong to any pg",
    ),
    pytest.param(
        pg_pod("p2", "pg-notexisting"),
        [],
        True,
        id="core_test.TestPreFilter/pod belongs to a non-existing pg",
    ),
    pytest.param(
        pg_pod("p2", "pg1"),
        [pg_pod("pg2-1", "pg2")],
        False,
        id="core_test.TestPreFilter/pod count less than minMember",
    ),
    pytest.param(
        pg_pod("p2", "pg1"),
        [pg_pod("pg1-1", "pg1"), pg_pod("pg2-1", "pg1")],
        True,
        id="core_test.TestPreFilter/pod count equal minMember",
    ),
    pytest.param(
        pg_pod("p2", "pg1"),
        [pg_pod("pg1-1", "pg1"), pg_pod("pg2-1", "pg1"), pg_pod("pg3-1", "pg1")],
        True,
        id="core_test.TestPreFilter/pod count more minMember",
    ),
    pytest.param(
        pg_pod("p2-1", "pg2", req={"cpu": "1"}),
        [pg_pod("pg1-1", "pg2"), pg_pod("pg2-1", "pg2")],
        True,
        id="core_test.TestPreFilter/cluster resource enough, min Resource",
    ),
    pytest.param(
        pg_pod("p2-1", "pg3", req={"cpu": "20"}),
        [pg_pod("pg1-1", "pg3"), pg_pod("pg2-1", "pg3")],
        False,
        id="core_test.TestPreFilter/cluster resource not enough, min Resource",
    ),
    pytest.param(
        pg_pod("p2-1", "pg1"),
        [pg_pod("pg1-1", "pg1"), pg_pod("pg2-1", "pg1")],
        True,
        id="core_test.TestPreFilter/cluster resource enough not required",
    ),
]


def pre_filter_groups(m: Modules) -> list[Any]:
    return [
        make_pg(m, "pg", "ns1", 2),
        make_pg(m, "pg1", "ns1", 2),
        make_pg(m, "pg2", "ns1", 2, min_resources={"cpu": "4"}),
        make_pg(m, "pg3", "ns1", 2, min_resources={"cpu": "40"}),
    ]


@step_param
@pytest.mark.parametrize("pod,pods,expected_success", PRE_FILTER_CASES)
def test_pre_filter(
    step: int, pod: client.V1Pod, pods: list[client.V1Pod], expected_success: bool
) -> None:
    m = Modules(step)
    # Thirty nodes of 1 cpu, with two pods each that request nothing: 30 cpus free.
    existing_pods, all_nodes = make_nodes_and_pods({"test": "a"}, 60, 30)
    snapshot = FakeSharedLister(m, existing_pods, all_nodes)
    pg_mgr = new_manager(m, *pre_filter_groups(m), snapshot=snapshot, pods=tuple(pods))
    err = pg_mgr.pre_filter(pod)
    assert (err is None) is expected_success, err


# --- core_test.go: TestPermit -----------------------------------------------------------------

CORE_PERMIT_CASES = [
    pytest.param(
        make_pod("p", "ns1", "p"),
        None,
        "POD_GROUP_NOT_SPECIFIED",
        id="core_test.TestPermit/pod does not belong to any pg, allow",
    ),
    pytest.param(
        pg_pod("p", "pg-noexist"),
        None,
        "POD_GROUP_NOT_FOUND",
        id="core_test.TestPermit/pod belongs to a non-existing pg",
    ),
    pytest.param(
        pg_pod("p", "pg1"),
        "empty",
        "WAIT",
        id="core_test.TestPermit/pod belongs to a pg that doesn't have enough pods",
    ),
    pytest.param(
        pg_pod("p", "pg1"),
        "one assigned",
        "SUCCESS",
        id="core_test.TestPermit/pod belongs to a pg that has enough pods",
    ),
]


@step_param
@pytest.mark.parametrize("pod,which_snapshot,want", CORE_PERMIT_CASES)
def test_core_permit(step: int, pod: client.V1Pod, which_snapshot: str | None, want: str) -> None:
    m = Modules(step)
    pgs = [make_pg(m, "pg", "ns1", 2), make_pg(m, "pg1", "ns1", 2)]
    # One pod of pg1, on node0.
    existing_pods, all_nodes = make_nodes_and_pods(pg_label("pg1"), 1, 1)
    existing_pods[0].spec.node_name = all_nodes[0].metadata.name
    existing_pods[0].metadata.namespace = "ns1"
    snapshots = {
        None: None,
        "empty": FakeSharedLister(m, [], []),
        "one assigned": FakeSharedLister(m, existing_pods, all_nodes),
    }
    pg_mgr = m.cos.PodGroupManager(
        FakePodGroupClient(m, *pgs),
        snapshots[which_snapshot],
        SCHEDULE_TIMEOUT,
        PodGroupStore(*pgs),
        None,
        FakeClock().now,
        0.0,
    )
    assert pg_mgr.permit(pod) == getattr(m.cos, want)


# --- core_test.go: TestPostBind ---------------------------------------------------------------

POST_BIND_CASES = [
    pytest.param(
        "pg",
        "POD_GROUP_SCHEDULED",
        1,
        id="core_test.TestPostBind/pg status convert to scheduled",
    ),
    pytest.param(
        "pg1",
        "POD_GROUP_SCHEDULING",
        1,
        id="core_test.TestPostBind/pg status convert to scheduling",
    ),
    pytest.param(
        "pg2",
        "POD_GROUP_SCHEDULING",
        1,
        id="core_test.TestPostBind/pg status does not convert, although scheduled pods change",
    ),
]


@step_param
@pytest.mark.parametrize("group,desired_group_phase,desired_scheduled", POST_BIND_CASES)
def test_post_bind(step: int, group: str, desired_group_phase: str, desired_scheduled: int) -> None:
    m = Modules(step)
    pg = make_pg(m, "pg", "ns1", 1)
    pg1 = make_pg(m, "pg1", "ns1", 2)
    pg2 = make_pg(m, "pg2", "ns1", 3)
    pg2.status.phase = m.pg.POD_GROUP_SCHEDULING
    pg2.status.scheduled = 1
    fake_client = FakePodGroupClient(m, pg, pg1, pg2)
    # Upstream: &PodGroupManager{pgClient: fakeClient, pgLister: pgLister}.
    pg_mgr = m.cos.PodGroupManager(
        fake_client, None, 0.0, PodGroupStore(pg, pg1, pg2), None, FakeClock().now, 0.0
    )
    pod = pg_pod("p", group)
    pg_mgr.post_bind(pod, "test")
    # Upstream polls the clientset's copy until it matches: the patch is synchronous here.
    got = fake_client.get("ns1", group)
    assert (got.status.phase, got.status.scheduled) == (
        getattr(m.pg, desired_group_phase),
        desired_scheduled,
    )


# --- core_test.go: TestCheckClusterResource ---------------------------------------------------

CHECK_CLUSTER_RESOURCE_CASES = [
    pytest.param(
        {"memory": 10},
        "",
        False,
        True,
        id="core_test.TestCheckClusterResource/Cluster resource enough",
    ),
    pytest.param(
        {"memory": 1000},
        "",
        False,
        False,
        id="core_test.TestCheckClusterResource/Cluster resource not enough",
    ),
    pytest.param(
        {"memory": 250},
        "pg1-1",
        True,
        True,
        id="core_test.TestCheckClusterResource/Cluster resource enough, some resources of the "
        "pods belonging to the group have been included",
    ),
]


@step_param
@pytest.mark.parametrize(
    "resource_request,desired_pg_name,with_assumed_pod,desired_resource_enough",
    CHECK_CLUSTER_RESOURCE_CASES,
)
def test_check_cluster_resource(
    step: int,
    resource_request: dict[str, Any],
    desired_pg_name: str,
    with_assumed_pod: bool,
    desired_resource_enough: bool,
) -> None:
    m = Modules(step)
    node = make_node("fake-node", {"memory": "300"})
    node_info = FakeSharedLister(m, [], [node]).node_infos().list()
    # A pod of group pg1-1 without a namespace or a node: on the NodeInfo of node "" (which
    # has no Node, so it is skipped), as upstream's fake lister puts it.
    pod = make_pod(
        "t1-p1-3",
        req={"memory": "100"},
        labels=pg_label("pg1-1"),
        zero_termination_grace_period=True,
    )
    scheduled_node_info = FakeSharedLister(m, [pod], [node]).node_infos().list()
    node_list = scheduled_node_info if with_assumed_pod else node_info
    err = m.cos.check_cluster_resource(node_list, dict(resource_request), desired_pg_name)
    assert (err is None) is desired_resource_enough, err


# --- beyond upstream: what the tables leave out -----------------------------------------------


def waiting_pod(m: Modules, fwk: Any, pod: client.V1Pod) -> Any:
    """A pod waiting at Permit for Coscheduling, registered in the framework."""
    wp = step_module(m.step, "waiting_pods").WaitingPod(pod, fwk.clock)
    fwk.waiting_pods.add(wp)
    wp.start({m.cos.NAME: SCHEDULE_TIMEOUT})
    return wp


def signalled(wp: Any) -> bool:
    """Whether the waiting pod was allowed or rejected (its signal is sent)."""
    return not wp._signal.empty()


@step_param
def test_less_orders_groups_by_their_creation_time(step: int) -> None:
    """beyond upstream: TestLess passes just as well if Less ignores the groups (in every case
    its two orders agree). Here they differ: a pod of a group created after another pod's first
    attempt goes after it, though it was tried first; a group without a creation time (Go's
    zero time) goes before everything; and a creation time is moved onto the scheduler's
    clock by ``clock_minus_wall``."""
    m = Modules(step)
    created = NOW + timedelta(seconds=2)
    pg1 = make_pg(m, "pg1", "ns1", 2, created)
    pg0 = make_pg(m, "pg0", "ns1", 2)  # no creation time
    pg_mgr = new_manager(m, pg1, pg0)
    coscheduling = m.cos.Coscheduling(None, pg_mgr, 0.0)
    t0 = NOW.timestamp()

    def info(name: str, group: str | None, ts: float) -> Any:
        pod = make_pod(name, "ns1", name, labels=pg_label(group) if group else None)
        return m.fw.QueuedPodInfo(pod=pod, timestamp=ts, initial_attempt_timestamp=ts)

    grouped, plain = info("a", "pg1", t0), info("b", None, t0 + 1)
    assert not coscheduling.less(grouped, plain)
    assert coscheduling.less(plain, grouped)
    assert coscheduling.less(info("z", "pg0", t0 + 5), info("y", None, -1e18))
    # The scheduler's clock reads 100 s behind the wall: the group was created at t0 - 98.
    pg_mgr.clock_minus_wall = -100.0
    assert coscheduling.less(grouped, info("b", None, t0 - 99)) is False
    assert coscheduling.less(grouped, info("b", None, t0 - 97)) is True


@step_param
def test_check_cluster_resource_counts_the_groups_own_pods_as_free(step: int) -> None:
    """beyond upstream: in TestCheckClusterResource the group's pod sits on no node (node "")
    and in no namespace, so nothing is taken off. Here it is on the node: its 100 of memory
    count as free for its own group, not for another."""
    m = Modules(step)
    node = make_node("fake-node", {"memory": "300"})
    pod = make_pod("t1-p1-3", "ns1", "t1-p1-3", req={"memory": "100"}, labels=pg_label("pg1-1"))
    pod.spec.node_name = "fake-node"
    node_list = FakeSharedLister(m, [pod], [node]).node_infos().list()
    assert m.cos.check_cluster_resource(node_list, {"memory": 250}, "ns1/pg1-1") is None
    assert (
        m.cos.check_cluster_resource(node_list, {"memory": 250}, "ns1/other")
        == "resource gap: map[memory:50]"
    )


@step_param
def test_permit_wait_activates_the_siblings_and_waits_the_groups_timeout(step: int) -> None:
    """beyond upstream: a Wait asks for the group's other pods (not the pod itself, not another
    group's) to be activated, and waits the group's scheduleTimeoutSeconds."""
    m = Modules(step)
    pg1 = make_pg(m, "pg1", "ns1", 3)
    pg1.spec.schedule_timeout_seconds = 7
    pod, sibling = pg_pod("p1", "pg1"), pg_pod("p2", "pg1")
    other = pg_pod("q1", "pg2")
    elsewhere = make_pod("p3", "ns2", "p3", labels=pg_label("pg1"))
    snapshot = FakeSharedLister(m, [], [])
    pg_mgr = new_manager(m, pg1, snapshot=snapshot, pods=(pod, sibling, other, elsewhere))
    coscheduling = m.cos.Coscheduling(new_handle(m, snapshot), pg_mgr, SCHEDULE_TIMEOUT)
    state = m.cycle_state.CycleState()
    to_activate = m.fw.PodsToActivate()
    state.write(m.fw.PODS_TO_ACTIVATE_KEY, to_activate)
    status, wait = coscheduling.permit(state, pod, "node0")
    assert (status.code, wait) == (m.fw.Code.WAIT, 7.0)
    assert to_activate.map == {"ns1/p2": sibling}


@step_param
def test_permit_success_allows_the_waiting_siblings(step: int) -> None:
    """beyond upstream: the pod that completes its group allows its waiting siblings, and only
    them."""
    m = Modules(step)
    pg2 = make_pg(m, "pg2", "ns1", 2)
    snapshot = FakeSharedLister(m, [], [])
    fwk = new_handle(m, snapshot)
    sibling = waiting_pod(m, fwk, pg_pod("s", "pg2"))
    stranger = waiting_pod(m, fwk, pg_pod("t", "pg9"))
    pg_mgr = new_manager(m, pg2, snapshot=snapshot)
    coscheduling = m.cos.Coscheduling(fwk, pg_mgr, SCHEDULE_TIMEOUT)
    # Its sibling is assumed on node0: 1 + 1 >= minMember.
    node = make_node("node0")
    assumed = make_pod("s", "ns1", "s", labels=pg_label("pg2"), node="node0")
    pg_mgr.snapshot_shared_lister = FakeSharedLister(m, [assumed], [node])
    status, _ = coscheduling.permit(m.cycle_state.CycleState(), pg_pod("p", "pg2"), "node0")
    assert status.code == m.fw.Code.SUCCESS
    assert signalled(sibling) and sibling.get_signal().is_success()
    assert not signalled(stranger)


@step_param
def test_post_filter_rejects_the_waiting_siblings(step: int) -> None:
    """beyond upstream: the optimistic rejection rejects the group's waiting pods (same
    namespace, same group) and forgets that the group passed PreFilter."""
    m = Modules(step)
    pg = make_pg(m, "pg", "ns1", 4, min_resources={"cpu": "1"})
    snapshot = FakeSharedLister(m, [], [make_node("node0", {"cpu": "4"})])
    fwk = new_handle(m, snapshot)
    sibling = waiting_pod(m, fwk, pg_pod("s", "pg"))
    same_name_elsewhere = waiting_pod(m, fwk, make_pod("e", "ns2", "e", labels=pg_label("pg")))
    pods = tuple(pg_pod(f"p{i}", "pg") for i in range(4))
    pg_mgr = new_manager(m, pg, snapshot=snapshot, pods=pods)
    assert pg_mgr.pre_filter(pods[0]) is None
    assert "ns1/pg" in pg_mgr.permitted_pg
    coscheduling = m.cos.Coscheduling(fwk, pg_mgr, SCHEDULE_TIMEOUT)
    _, status = coscheduling.post_filter(m.cycle_state.CycleState(), pods[0], {})
    assert status.code == m.fw.Code.UNSCHEDULABLE
    assert status.message() == (
        "PodGroup ns1/pg gets rejected due to Pod p0 is unschedulable even after PostFilter"
    )
    assert signalled(sibling)
    got = sibling.get_signal()
    assert (got.code, got.message(), got.failed_plugin) == (
        m.fw.Code.UNSCHEDULABLE,
        "optimistic rejection in PostFilter",
        m.cos.NAME,
    )
    assert not signalled(same_name_elsewhere)
    assert "ns1/pg" not in pg_mgr.permitted_pg


@step_param
def test_pre_filter_remembers_a_permitted_group_for_the_schedule_timeout(step: int) -> None:
    """beyond upstream: once the cluster was found to hold a group's minResources, PreFilter
    does not check again until scheduleTimeout has passed (upstream: permittedPG, a go-cache
    entry that expires after scheduleTimeout)."""
    m = Modules(step)
    clock = FakeClock()
    pg2 = make_pg(m, "pg2", "ns1", 2, min_resources={"cpu": "4"})
    pods = (pg_pod("a", "pg2"), pg_pod("b", "pg2"))
    existing_pods, all_nodes = make_nodes_and_pods({"test": "a"}, 60, 30)
    snapshot = FakeSharedLister(m, existing_pods, all_nodes)
    pg_mgr = new_manager(m, pg2, snapshot=snapshot, pods=pods, clock=clock)
    assert pg_mgr.pre_filter(pods[0]) is None
    # The cluster shrinks to nothing: the group still passes, for SCHEDULE_TIMEOUT.
    pg_mgr.snapshot_shared_lister = FakeSharedLister(m, [], [])
    clock.advance(SCHEDULE_TIMEOUT - 1)
    assert pg_mgr.pre_filter(pods[1]) is None
    clock.advance(2)
    assert pg_mgr.pre_filter(pods[1]) == "resource gap: map[cpu:4 pods:2]"


# --- PriorityQueue.Activate -------------------------------------------------------------------

# scheduling_queue_test.go's TestPriorityQueue_Activate (a later release's): where the pod is
# before, where the pods of activeQ are after.
ACTIVATE_CASES = [
    pytest.param(
        (),
        (),
        ("hpp",),
        ("hpp",),
        id="scheduling_queue_test.TestPriorityQueue_Activate/pod already in activeQ",
    ),
    pytest.param(
        (),
        (),
        (),
        (),
        id="scheduling_queue_test.TestPriorityQueue_Activate/"
        "pod not in unschedulablePods/podBackoffQ",
    ),
    pytest.param(
        ("hpp",),
        (),
        (),
        ("hpp",),
        id="scheduling_queue_test.TestPriorityQueue_Activate/pod in unschedulablePods",
    ),
    pytest.param(
        (),
        ("hpp",),
        (),
        ("hpp",),
        id="scheduling_queue_test.TestPriorityQueue_Activate/pod in backoffQ",
    ),
]


@step_param
@pytest.mark.parametrize("in_unschedulable,in_backoff,in_active,want", ACTIVATE_CASES)
def test_priority_queue_activate(
    step: int,
    in_unschedulable: tuple[str, ...],
    in_backoff: tuple[str, ...],
    in_active: tuple[str, ...],
    want: tuple[str, ...],
) -> None:
    qq = Queue(step)
    hpp = high_pri_nominated_pod()
    # Prepare activeQ/unschedulablePods/podBackoffQ according to the table.
    for _ in in_active:
        qq.q._active_q.add(qq.lookup(hpp))
    for _ in in_unschedulable:
        qq.q._unschedulable_q[qq.sq.get_pod_full_name(hpp)] = qq.lookup(hpp)
    for _ in in_backoff:
        qq.q._pod_backoff_q.add(qq.lookup(hpp))
    qq.q.activate({"test_pod": hpp})
    assert sorted(p.pod.metadata.name for p in qq.q._active_q.list()) == list(want)


class NotifySpy:
    """Counts the queue condition's notify_all calls (what wakes a waiting pop)."""

    def __init__(self, qq: Queue) -> None:
        self.calls = 0
        cond = qq.q._lock
        real = cond.notify_all

        def notify_all() -> None:
            self.calls += 1
            real()

        cond.notify_all = notify_all


def fail_to_unschedulable_q(qq: Queue, pod: client.V1Pod) -> Any:
    """Add, pop and fail the pod with no move request since: it waits in unschedulableQ."""
    qq.q.add(pod)
    p_info = qq.pop()
    assert qq.auinp(p_info) is None
    return p_info


def fail_to_backoff_q(qq: Queue, pod: client.V1Pod) -> Any:
    """Add, pop and fail the pod after a move request: it backs off in podBackoffQ."""
    qq.q.add(pod)
    p_info = qq.pop()
    qq.q.assigned_pod_added(make_pod("bound", "ns1", "bound", node="node1"))
    assert qq.auinp(p_info) is None
    return p_info


@step_param
def test_activate_moves_unschedulable_and_backing_off_pods_to_active_q(step: int) -> None:
    """PriorityQueue.activate: a pod in unschedulableQ and one still backing off both go to
    activeQ at once (the same QueuedPodInfo, attempts kept), recorded as ForceActivate, and
    the queue is notified."""
    qq = Queue(step)
    u = make_pod("u", "ns1", "u", priority=1)
    b = make_pod("b", "ns1", "b", priority=2)
    u_info = fail_to_unschedulable_q(qq, u)
    b_info = fail_to_backoff_q(qq, b)
    assert qq.unschedulable(u) is u and qq.in_backoff_q(b)
    assert qq.q.get_backoff_time(b_info) > qq.clock.now()  # still backing off
    spy = NotifySpy(qq)
    qq.q.activate({"ns1/u": u, "ns1/b": b})
    assert spy.calls == 1
    assert qq.in_active_q(u) and qq.in_active_q(b)
    assert qq.unschedulable(u) is None and not qq.in_backoff_q(b)
    moves = qq.q.recorder.of("queue")[-2:]
    assert sorted((mv["pod"], mv["queue"], mv["event"]) for mv in moves) == [
        ("ns1/b", "activeQ", qq.sq.FORCE_ACTIVATE),
        ("ns1/u", "activeQ", qq.sq.FORCE_ACTIVATE),
    ]
    assert qq.sq.FORCE_ACTIVATE == "ForceActivate"
    assert [qq.pop(), qq.pop()] == [b_info, u_info]
    assert (b_info.attempts, u_info.attempts) == (2, 2)


@step_param
def test_activate_leaves_active_and_unqueued_pods_alone(step: int) -> None:
    """PriorityQueue.activate: a pod already in activeQ stays as it is, a pod in flight (popped)
    or never queued is not added; nothing moved, nothing recorded, nobody notified."""
    qq = Queue(step)
    active = make_pod("a", "ns1", "a")
    in_flight = make_pod("f", "ns1", "f")
    never = make_pod("n", "ns1", "n")
    qq.q.add(in_flight)
    qq.pop()
    qq.q.add(active)
    a_info = qq.q._active_q.get("ns1/a")
    recorded = len(qq.q.recorder.of("queue"))
    spy = NotifySpy(qq)
    qq.q.activate({"ns1/a": active, "ns1/f": in_flight, "ns1/n": never})
    assert spy.calls == 0
    assert [p.pod.metadata.name for p in qq.q._active_q.list()] == ["a"]
    assert qq.q._active_q.get("ns1/a") is a_info
    assert len(qq.q.recorder.of("queue")) == recorded


@step_param
def test_activate_nominates_the_pod_again(step: int) -> None:
    """PriorityQueue.activate: as upstream's activate, the pod's nomination (its
    status.nominatedNodeName) is added back to the nominator."""
    qq = Queue(step, (high_pri_nominated_pod(),))
    hpp = high_pri_nominated_pod()
    qq.q._unschedulable_q[qq.sq.get_pod_full_name(hpp)] = qq.lookup(hpp)
    qq.q.activate({"ns1/hpp": hpp})
    assert qq.nominated() == ({"hppns1": "node1"}, {"node1": ["hppns1"]})


@step_param
def test_activate_wakes_a_waiting_pop(step: int) -> None:
    """PriorityQueue.activate: a pop blocked on an empty activeQ returns the activated pod."""
    qq = Queue(step)
    u = make_pod("u", "ns1", "u")
    u_info = fail_to_unschedulable_q(qq, u)
    got: list[Any] = []
    popper = threading.Thread(target=lambda: got.append(qq.q.pop()), daemon=True)
    popper.start()
    try:
        # Until the popper waits on the queue's condition (no sleep: yield the processor).
        deadline = time.monotonic() + 10
        while not qq.q._lock._waiters:
            assert time.monotonic() < deadline and popper.is_alive()
            os.sched_yield()
        assert got == []
        qq.q.activate({"ns1/u": u})
        popper.join(10)
        assert not popper.is_alive()
        assert got == [u_info]
    finally:
        qq.q.close()  # a popper still waiting (the test failed) returns None
        popper.join(10)


# --- CoschedulingArgs in the configuration file -----------------------------------------------

# defaults_test.go's TestSchedulingDefaults, the CoschedulingArgs cases: the versioned args
# given, the versioned args after defaulting, and the internal args the profile holds.
ARGS_DEFAULTS_CASES = [
    pytest.param(
        V1BETA2,
        {},
        {"permitWaitingTimeSeconds": 60, "deniedPGExpirationTimeSeconds": 20},
        60,
        id="v1beta2/defaults_test.TestSchedulingDefaults/empty config CoschedulingArgs",
    ),
    pytest.param(
        V1BETA2,
        {"permitWaitingTimeSeconds": 60, "deniedPGExpirationTimeSeconds": 10},
        {"permitWaitingTimeSeconds": 60, "deniedPGExpirationTimeSeconds": 10},
        60,
        id="v1beta2/defaults_test.TestSchedulingDefaults/set non default CoschedulingArgs",
    ),
    pytest.param(
        V1BETA3,
        {},
        {"permitWaitingTimeSeconds": 60},
        60,
        id="v1beta3/defaults_test.TestSchedulingDefaults/empty config CoschedulingArgs",
    ),
    pytest.param(
        V1BETA3,
        {"permitWaitingTimeSeconds": 60},
        {"permitWaitingTimeSeconds": 60},
        60,
        id="v1beta3/defaults_test.TestSchedulingDefaults/set non default CoschedulingArgs",
    ),
]


def config_with_args(api_version: str, args: dict[str, Any] | None) -> str:
    """A configuration whose one profile gives Coscheduling these args (flow style YAML)."""
    return (
        f"apiVersion: {api_version}\nkind: KubeSchedulerConfiguration\nprofiles:\n"
        f"- schedulerName: scheduler-plugins\n  pluginConfig:\n  - name: Coscheduling\n"
        f"    args: {json.dumps(args) if args is not None else ''}\n"
    )


def coscheduling_config(profile: Any) -> list[Any]:
    return [pc for pc in profile.plugin_config if pc.name == "Coscheduling"]


@step_param
@pytest.mark.parametrize("api_version,given,defaulted,permit_waiting", ARGS_DEFAULTS_CASES)
def test_coscheduling_args_defaults(
    step: int,
    api_version: str,
    given: dict[str, Any],
    defaulted: dict[str, Any],
    permit_waiting: int,
) -> None:
    config = step_module(step, "config")
    cos = step_module(step, "plugins.coscheduling")
    # The defaulting function itself, on the versioned object (upstream: scheme.Default).
    obj = copy.deepcopy(given)
    config.set_defaults_coscheduling_args(obj, api_version)
    assert obj == defaulted
    # The same args through a file: decoded and defaulted in the version...
    text = config_with_args(api_version, given)
    version, versioned = config.decode_versioned(text)
    config.set_defaults_kube_scheduler_configuration(versioned, version)
    [pc] = [pc for pc in versioned["profiles"][0]["pluginConfig"] if pc["name"] == "Coscheduling"]
    assert (pc["args"].kind, pc["args"].fields) == ("CoschedulingArgs", defaulted)
    # ...and converted to the internal args the plugin takes.
    [internal] = coscheduling_config(config.load_config(text).profiles[0])
    assert internal.args == cos.CoschedulingArgs(permit_waiting_time_seconds=permit_waiting)


SCHEME_V1BETA2_ALL_ARGS = """\
apiVersion: kubescheduler.config.k8s.io/v1beta2
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: scheduler-plugins
  pluginConfig:
  - name: Coscheduling
    args:
      permitWaitingTimeSeconds: 10
      deniedPGExpirationTimeSeconds: 3
  - name: NodeResourcesAllocatable
    args:
      mode: Least
      resources:
      - name: cpu
        weight: 1000000
      - name: memory
        weight: 1
  - name: TargetLoadPacking
    args:
      targetUtilization: 60
      defaultRequests:
        cpu: "1000m"
      defaultRequestsMultiplier: "1.8"
      watcherAddress: http://deadbeef:2020
      metricProvider:
        type: Prometheus
        address: http://prometheus-k8s.monitoring.svc.cluster.local:9090
  - name: LoadVariationRiskBalancing
    args:
      metricProvider:
        type: Prometheus
        address: http://prometheus-k8s.monitoring.svc.cluster.local:9090
        insecureSkipVerify: false
      safeVarianceMargin: 1.0
      safeVarianceSensitivity: 1.0
      watcherAddress: http://deadbeef:2020
  - name: PreemptionToleration
    args:
      minCandidateNodesPercentage: 20
      minCandidateNodesAbsolute: 200
"""

SCHEME_V1BETA2_UNSPECIFIED = """\
apiVersion: kubescheduler.config.k8s.io/v1beta2
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: scheduler-plugins
  pluginConfig:
  - name: Coscheduling
    args:
  - name: NodeResourcesAllocatable
    args:
  - name: TargetLoadPacking
    args:
  - name: LoadVariationRiskBalancing
    args:
  - name: PreemptionToleration
    args:
"""

SCHEME_V1BETA2_ILLEGAL = """\
apiVersion: kubescheduler.config.k8s.io/v1beta2
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: scheduler-plugins
  pluginConfig:
  - name: Coscheduling
    args:
      kubeConfigPath: "/var/run/kubernetes/kube.config"
"""

# scheme_test.go's TestCodecsDecodePluginConfig: the file, and the Coscheduling args wanted
# (permitWaitingTimeSeconds) or the error.
DECODE_CASES = [
    pytest.param(
        SCHEME_V1BETA2_ALL_ARGS,
        10,
        "",
        id="scheme_test.TestCodecsDecodePluginConfig/v1beta2 all plugin args in default profile",
    ),
    pytest.param(
        SCHEME_V1BETA2_UNSPECIFIED,
        60,
        "",
        id="scheme_test.TestCodecsDecodePluginConfig/v1beta2 plugin args unspecified to verify "
        "the default profile",
    ),
    pytest.param(
        SCHEME_V1BETA2_ILLEGAL,
        None,
        "decoding .profiles[0].pluginConfig[0]: decoding args for plugin Coscheduling: strict "
        'decoding error: unknown field "kubeConfigPath"',
        id="scheme_test.TestCodecsDecodePluginConfig/v1beta2 coscheduling plugin args illegal "
        "to get validation error",
    ),
]


@step_param
@pytest.mark.parametrize("data,permit_waiting,want_err", DECODE_CASES)
def test_codecs_decode_plugin_config(
    step: int, data: str, permit_waiting: int | None, want_err: str
) -> None:
    config = step_module(step, "config")
    cos = step_module(step, "plugins.coscheduling")
    if want_err:
        with pytest.raises(config.ConfigError) as exc:
            config.load_config(data)
        assert str(exc.value) == want_err
        return
    profile = config.load_config(data).profiles[0]
    assert profile.scheduler_name == "scheduler-plugins"
    [pc] = coscheduling_config(profile)
    assert pc.args == cos.CoschedulingArgs(permit_waiting_time_seconds=permit_waiting)


@step_param
def test_codecs_encode_plugin_config(step: int) -> None:
    """scheme_test.TestCodecsEncodePluginConfig/v1beta2 plugins, its Coscheduling entry: the
    internal args written in v1beta2, with their kind and version."""
    config = step_module(step, "config")
    cos = step_module(step, "plugins.coscheduling")
    cfg = config.default_config(V1BETA2)
    cfg.profiles = [
        config.KubeSchedulerProfile(
            scheduler_name="scheduler-plugins",
            plugin_config=[config.PluginConfig("Coscheduling", cos.CoschedulingArgs(10))],
        )
    ]
    [profile] = config.to_versioned(cfg)["profiles"]
    assert profile["pluginConfig"] == [
        {
            "name": "Coscheduling",
            "args": {
                "apiVersion": V1BETA2,
                "kind": "CoschedulingArgs",
                "permitWaitingTimeSeconds": 10,
            },
        }
    ]


# scheduler-plugins' manifests/coscheduling/scheduler-config.yaml (v0.23.10) without its
# pluginConfig.
COSCHEDULING_WITHOUT_ARGS = """\
apiVersion: {api_version}
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    queueSort:
      enabled:
      - name: Coscheduling
      disabled:
      - name: "*"
    preFilter:
      enabled:
      - name: Coscheduling
    postFilter:
      enabled:
      - name: Coscheduling
    permit:
      enabled:
      - name: Coscheduling
    reserve:
      enabled:
      - name: Coscheduling
    postBind:
      enabled:
      - name: Coscheduling
"""


@step_param
@pytest.mark.parametrize("api_version", [V1BETA2, V1BETA3], ids=["v1beta2", "v1beta3"])
def test_coscheduling_without_plugin_config_gets_default_args(step: int, api_version: str) -> None:
    """scheduler-plugins registers CoschedulingArgs through kube-scheduler's own SchemeBuilder
    (apis/config/v1beta2/register.go: localSchemeBuilder = &schedschemev1beta2.SchemeBuilder),
    so the plugin-args scheme has it and setDefaults_KubeSchedulerProfile gives an enabled
    Coscheduling without a pluginConfig its default args, as it gives an in-tree plugin its
    (seen with v1.23.10's binary: tests/test_realk8s_coscheduling.py)."""
    config = step_module(step, "config")
    text = COSCHEDULING_WITHOUT_ARGS.format(api_version=api_version)
    profile = config.load_config(text).profiles[0]
    coscheduling = step_module(step, "plugins.coscheduling")
    assert [pc.args for pc in coscheduling_config(profile)] == [
        coscheduling.CoschedulingArgs(permit_waiting_time_seconds=60)
    ]
    registry = step_module(step, "plugins").new_registry()
    fwk = step_module(step, "runtime").Framework(registry, profile, FakeClock(), ListRecorder())
    assert fwk.plugins_map["Coscheduling"].schedule_timeout == 60


@step_param
def test_coscheduling_without_args_is_refused(step: int) -> None:
    """beyond upstream: no args at all (kubescheduler.config.k8s.io/v1, for which
    scheduler-plugins v0.23.10 registers no CoschedulingArgs): New refuses nil, in its words,
    and the framework's build names the plugin."""
    config = step_module(step, "config")
    text = COSCHEDULING_WITHOUT_ARGS.format(api_version="kubescheduler.config.k8s.io/v1")
    profile = config.load_config(text).profiles[0]
    assert coscheduling_config(profile) == []
    registry = step_module(step, "plugins").new_registry()
    with pytest.raises(ValueError) as exc:
        step_module(step, "runtime").Framework(registry, profile, FakeClock(), ListRecorder())
    assert str(exc.value) == (
        'initializing plugin "Coscheduling": want args to be of type CoschedulingArgs, got <nil>'
    )
