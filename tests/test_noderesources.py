"""PreFilter and NodeResourcesFit (steps 10+): the pod's request, the Filter reasons, the
LeastAllocated scores, the non-zero defaults, and the events that move a pod it rejected."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

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
from tests.test_event_handlers import where

STEPS = built_steps(10)
step_param = pytest.mark.parametrize("step", STEPS, ids=lambda n: f"step{n}")

GI = 1024**3
MI = 1024**2


def container(name: str, **requests: str) -> client.V1Container:
    rename = {"ephemeral_storage": "ephemeral-storage"}
    requests = {rename.get(k, k): v for k, v in requests.items()}
    return client.V1Container(
        name=name,
        image="pause",
        resources=client.V1ResourceRequirements(requests=requests or None),
    )


def pod_asking(name: str, *containers: client.V1Container, **kw: Any) -> client.V1Pod:
    pod = make_pod(name)
    pod.spec.containers = list(containers) or [container("c")]
    pod.spec.init_containers = kw.get("init")
    pod.spec.overhead = kw.get("overhead")
    return pod


def node_of(name: str, **allocatable: str) -> client.V1Node:
    node = make_node(name)
    node.status.allocatable = {"pods": "110", **allocatable}
    return node


def node_info(step: int, node: client.V1Node, *pods: client.V1Pod) -> Any:
    info = step_module(step, "framework").NodeInfo(*pods)
    info.set_node(node)
    return info


def plugin(step: int) -> Any:
    [fit] = [p for p in framework_of(offline_scheduler(step)).filter_plugins if p.name() == NAME]
    return fit


NAME = "NodeResourcesFit"


# --- the request arithmetic --------------------------------------------------------------------


@step_param
def test_containers_add_up_and_init_containers_count_at_their_largest(step: int) -> None:
    nr = step_module(step, "plugins.noderesources")
    # Upstream's example in computePodResourceRequest's comment.
    pod = pod_asking(
        "pod1",
        container("c1", cpu="2", memory="1G"),
        container("c2", cpu="1", memory="1G"),
        init=[container("ic1", cpu="2", memory="1G"), container("ic2", cpu="2", memory="3G")],
    )
    request = nr.compute_pod_resource_request(pod).resource
    assert (request.milli_cpu, request.memory) == (3000, 3 * 10**9)


@step_param
def test_the_pods_overhead_comes_on_top(step: int) -> None:
    nr = step_module(step, "plugins.noderesources")
    pod = pod_asking(
        "pod1",
        container("c", cpu="500m", memory="1Gi"),
        init=[container("ic", cpu="2")],
        overhead={"cpu": "250m", "memory": "120Mi"},
    )
    request = nr.compute_pod_resource_request(pod).resource
    # The init container's 2 CPU beat the container's 500m; the overhead adds to the maximum.
    assert (request.milli_cpu, request.memory) == (2250, GI + 120 * MI)


@step_param
def test_pre_filter_writes_the_request_once_into_the_cycle_state(step: int) -> None:
    cs = step_module(step, "cycle_state")
    nr = step_module(step, "plugins.noderesources")
    state = cs.CycleState()
    fwk = framework_of(offline_scheduler(step))
    # From step 13 NodeAffinity runs first, as in v1.23's default profile.
    first = ["NodeAffinity"] if step >= 13 else []
    assert [p.name() for p in fwk.pre_filter_plugins] == [*first, NAME]
    pod = pod_asking("pod1", container("c", cpu="1"))
    assert fwk.run_pre_filter_plugins(state, pod).is_success()
    assert state.read("PreFilterNodeResourcesFit").resource.milli_cpu == 1000
    assert fwk.pre_filter_plugins[0].pre_filter_extensions() is None
    assert nr.PRE_FILTER_STATE_KEY == "PreFilterNodeResourcesFit"


@step_param
def test_the_non_zero_defaults_count_only_an_absent_request(step: int) -> None:
    fw = step_module(step, "framework")
    assert (fw.DEFAULT_MILLI_CPU_REQUEST, fw.DEFAULT_MEMORY_REQUEST) == (100, 200 * MI)
    bare = pod_asking("bare")
    zero_cpu = pod_asking("zero", container("c", cpu="0"))
    info = node_info(step, node_of("node1", cpu="4", memory="8Gi"), bare, zero_cpu)
    assert (info.requested.milli_cpu, info.requested.memory) == (0, 0)
    # bare: 100m and 200Mi; zero: an explicit 0 CPU stays 0, its memory defaults.
    assert info.non_zero_requested.milli_cpu == 100
    assert info.non_zero_requested.memory == 400 * MI
    info.remove_pod(bare)
    assert (info.non_zero_requested.milli_cpu, info.non_zero_requested.memory) == (0, 200 * MI)
    # Init containers at their largest and the overhead, as for the real request.
    pod = pod_asking("init", init=[container("ic", cpu="1")], overhead={"memory": "1Mi"})
    _, non0_cpu, non0_mem = fw.calculate_resource(pod)
    assert (non0_cpu, non0_mem) == (1000, 201 * MI)


# --- Filter ------------------------------------------------------------------------------------


def filter_reasons(step: int, pod: client.V1Pod, info: Any) -> tuple[Any, list[str]]:
    cs = step_module(step, "cycle_state")
    fit = plugin(step)
    state = cs.CycleState()
    assert fit.pre_filter(state, pod).is_success()
    status = fit.filter(state, pod, info)
    return status.code, status.reasons


@step_param
def test_filter_reasons_are_upstreams(step: int) -> None:
    fw = step_module(step, "framework")
    node = node_of("node1", cpu="2", memory="2Gi", **{"ephemeral-storage": "10Gi"})
    held = pod_asking("held", container("c", cpu="1500m", memory="1Gi"))
    info = node_info(step, node, held)
    fits = pod_asking("fits", container("c", cpu="500m", memory="1Gi"))
    assert filter_reasons(step, fits, info) == (fw.Code.SUCCESS, [])
    cpu = pod_asking("cpu", container("c", cpu="501m"))
    assert filter_reasons(step, cpu, info) == (fw.Code.UNSCHEDULABLE, ["Insufficient cpu"])
    mem = pod_asking("mem", container("c", memory="1025Mi"))
    assert filter_reasons(step, mem, info) == (fw.Code.UNSCHEDULABLE, ["Insufficient memory"])
    disk = pod_asking("disk", container("c", ephemeral_storage="11Gi"))
    assert filter_reasons(step, disk, info) == (
        fw.Code.UNSCHEDULABLE,
        ["Insufficient ephemeral-storage"],
    )
    both = pod_asking("both", container("c", cpu="1", memory="2Gi"))
    assert filter_reasons(step, both, info)[1] == ["Insufficient cpu", "Insufficient memory"]


@step_param
def test_too_many_pods_even_for_a_pod_that_asks_for_nothing(step: int) -> None:
    fw = step_module(step, "framework")
    node = node_of("node1", cpu="1", memory="1Gi")
    node.status.allocatable["pods"] = "1"
    full = node_info(step, node, pod_asking("held", container("c", cpu="1")))
    # It asks for nothing: the CPU the node lacks does not matter, its pod count does.
    assert filter_reasons(step, pod_asking("bare"), full) == (
        fw.Code.UNSCHEDULABLE,
        ["Too many pods"],
    )
    node.status.allocatable["pods"] = "2"
    assert filter_reasons(step, pod_asking("bare"), node_info(step, node))[0] == fw.Code.SUCCESS
    big = pod_asking("big", container("c", cpu="2"))
    assert filter_reasons(step, big, full)[1] == ["Too many pods", "Insufficient cpu"]


@step_param
def test_filter_without_pre_filter_is_an_error(step: int) -> None:
    fw = step_module(step, "framework")
    cs = step_module(step, "cycle_state")
    status = plugin(step).filter(cs.CycleState(), make_pod("pod1"), node_info(step, make_node("n")))
    assert status.code == fw.Code.ERROR
    assert status.message() == (
        'error reading "PreFilterNodeResourcesFit" from cycleState: not found'
    )


@step_param
def test_an_assumed_pod_takes_its_cpu_and_the_fit_error_counts_every_node(step: int) -> None:
    sched = offline_scheduler(step)
    add_nodes(sched, *(node_of(f"n-{c}", cpu="1", memory="1Gi") for c in "abc"))
    for c in "ab":
        sched.cache.assume_pod(on(f"n-{c}", pod_asking(f"held-{c}", container("c", cpu="600m"))))
    pod = pod_asking("pod1", container("c", cpu="600m"))
    add_pods(sched, pod)
    sched.scheduling_queue.add(pod)
    step_module(step, "schedule_one").schedule_one(sched)
    # n-a and n-b hold assumed pods, not bound: the cycle counts them; the pod goes to n-c
    # (no digit in the name: no Permit wait, it binds at once).
    assert [f["node"] for f in sched.recorder.of("filter")] == ["n-a", "n-b"]
    assert sched.recorder.of("selected") == [{"pod": "default/pod1", "node": "n-c"}]
    late = pod_asking("pod2", container("c", cpu="600m"))
    add_pods(sched, late)
    sched.scheduling_queue.add(late)
    step_module(step, "schedule_one").schedule_one(sched)
    assert sched.recorder.of("unschedulable")[-1]["message"] == (
        "0/3 nodes are available: 3 Insufficient cpu."
    )


# --- PreFilter in the framework ---------------------------------------------------------------


class FakePreFilter:
    def __init__(self, fw: Any, name: str, status: Any, *, extensions: bool = False) -> None:
        self._name = name
        self.status = status
        self.calls: list[str] = []
        self.extensions = extensions
        self.fw = fw

    def name(self) -> str:
        return self._name

    def pre_filter(self, state: Any, pod: Any) -> Any:
        self.calls.append("pre_filter")
        return self.status

    def pre_filter_extensions(self) -> Any:
        return self if self.extensions else None

    def add_pod(self, state: Any, pod: Any, pod_to_add: Any, node_info: Any) -> Any:
        self.calls.append(f"add {pod_to_add.metadata.name}")
        return self.status

    def remove_pod(self, state: Any, pod: Any, pod_to_remove: Any, node_info: Any) -> Any:
        self.calls.append(f"remove {pod_to_remove.metadata.name}")
        return self.status


class CountingFilter:
    def __init__(self, fw: Any) -> None:
        self.fw = fw
        self.nodes: list[str] = []

    def name(self) -> str:
        return "Counting"

    def filter(self, state: Any, pod: Any, node_info: Any) -> Any:
        self.nodes.append(node_info.node().metadata.name)
        return self.fw.Status()


@step_param
def test_an_unschedulable_pre_filter_fails_every_node_and_no_filter_runs(step: int) -> None:
    fw = step_module(step, "framework")
    sched = offline_scheduler(step)
    first = FakePreFilter(fw, "First", fw.Status(fw.Code.UNSCHEDULABLE, ["pod is odd"]))
    second = FakePreFilter(fw, "Second", fw.Status())
    counting = CountingFilter(fw)
    registry = {"First": lambda a, h: first, "Second": lambda a, h: second}
    registry["Counting"] = lambda a, h: counting
    fwk = new_framework(
        step, registry, pre_filter=["First", "Second"], filter=["Counting"], clock=sched.clock
    )
    fwk.snapshot = sched.snapshot
    set_framework(sched, fwk)
    add_nodes(sched, make_node("node-a"), make_node("node-b"))
    pod = make_pod("pod1")
    add_pods(sched, pod)
    sched.scheduling_queue.add(pod)
    step_module(step, "schedule_one").schedule_one(sched)
    assert (first.calls, second.calls, counting.nodes) == (["pre_filter"], [], [])
    assert sched.recorder.of("unschedulable")[-1]["message"] == (
        "0/2 nodes are available: 2 pod is odd."
    )
    [p_info] = sched.scheduling_queue._unschedulable_q.values()
    assert p_info.unschedulable_plugins == {"First"}


@step_param
def test_a_pre_filter_error_ends_the_cycle_with_its_name(step: int) -> None:
    fw = step_module(step, "framework")
    cs = step_module(step, "cycle_state")
    broken = FakePreFilter(fw, "Broken", fw.Status(fw.Code.ERROR, ["boom"]))
    fwk = new_framework(step, {"Broken": lambda a, h: broken}, pre_filter=["Broken"])
    status = fwk.run_pre_filter_plugins(cs.CycleState(), make_pod("pod1"))
    assert status.code == fw.Code.ERROR
    assert status.message() == 'running PreFilter plugin "Broken": boom'


@step_param
def test_pre_filter_extensions_hear_of_added_and_removed_pods(step: int) -> None:
    fw = step_module(step, "framework")
    cs = step_module(step, "cycle_state")
    with_ext = FakePreFilter(fw, "WithExt", fw.Status(), extensions=True)
    without = FakePreFilter(fw, "Without", fw.Status())
    registry = {"WithExt": lambda a, h: with_ext, "Without": lambda a, h: without}
    fwk = new_framework(step, registry, pre_filter=["Without", "WithExt"])
    state, info = cs.CycleState(), node_info(step, make_node("node1"))
    pod, victim = make_pod("pod1"), make_pod("victim")
    assert fwk.run_pre_filter_extension_remove_pod(state, pod, victim, info).is_success()
    assert fwk.run_pre_filter_extension_add_pod(state, pod, victim, info).is_success()
    assert (with_ext.calls, without.calls) == (["remove victim", "add victim"], [])
    with_ext.status = fw.Status(fw.Code.UNSCHEDULABLE, ["no"])
    status = fwk.run_pre_filter_extension_add_pod(state, pod, victim, info)
    assert (status.code, status.message()) == (
        fw.Code.ERROR,
        'running AddPod on PreFilter plugin "WithExt": no',
    )
    status = fwk.run_pre_filter_extension_remove_pod(state, pod, victim, info)
    assert status.message() == 'running RemovePod on PreFilter plugin "WithExt": no'


# --- Score: LeastAllocated -----------------------------------------------------------------------


def least_allocated(step: int, pod: client.V1Pod, node: client.V1Node, *pods: client.V1Pod) -> int:
    sched = offline_scheduler(step)
    add_nodes(sched, node)
    for p in pods:
        sched.cache.add_pod(p)
    sched.cache.update_snapshot(sched.snapshot)
    [fit] = [p for p in framework_of(sched).score_plugins if p.name() == NAME]
    cycle_state = step_module(step, "cycle_state")
    state = cycle_state.CycleState()
    if not hasattr(fit, "pre_score"):
        # v1.23's Fit has no PreScore: Score computes the pod's request itself, for every node.
        score, status = fit.score(state, pod, node.metadata.name)
        assert status.is_success(), status
        return score
    # Step 18 (v1.27's shape): PreScore works the pod's request out once; a Score that finds
    # no PreScore state computes it itself, to the same score.
    alone, alone_status = fit.score(cycle_state.CycleState(), pod, node.metadata.name)
    assert fit.pre_score(state, pod, [node]).is_success()
    score, status = fit.score(state, pod, node.metadata.name)
    assert status.is_success() and alone_status.is_success(), (status, alone_status)
    assert score == alone
    return score


def on(node: str, pod: client.V1Pod) -> client.V1Pod:
    pod.spec.node_name = node
    return pod


@step_param
def test_least_allocated_scores_by_hand(step: int) -> None:
    # cpu (4000 - 2000) * 100 / 4000 = 50; memory (8Gi - 4Gi) * 100 / 8Gi = 50; mean 50.
    node = node_of("node1", cpu="4", memory="8Gi")
    held = on("node1", pod_asking("held", container("c", cpu="1", memory="2Gi")))
    pod = pod_asking("pod1", container("c", cpu="1", memory="2Gi"))
    assert least_allocated(step, pod, node, held) == 50
    # cpu (3000 - 2000) * 100 / 3000 = 33; memory (4Gi - 1Gi) * 100 / 4Gi = 75; (33 + 75) // 2.
    node = node_of("large", cpu="3", memory="4Gi")
    assert (
        least_allocated(step, pod_asking("db", container("c", cpu="2", memory="1Gi")), node) == 54
    )
    # More than the node has scores 0 for that resource: cpu 0, memory 75.
    big = pod_asking("big", container("c", cpu="5", memory="1Gi"))
    assert least_allocated(step, big, node) == 37


@step_param
def test_least_allocated_uses_the_non_zero_defaults(step: int) -> None:
    # A pod without requests counts 100m and 200Mi: cpu (1000 - 100) * 100 / 1000 = 90,
    # memory (1024Mi - 200Mi) * 100 / 1024Mi = 80 (80.47 rounded down); (90 + 80) // 2 = 85.
    node = node_of("node1", cpu="1", memory="1Gi")
    assert least_allocated(step, pod_asking("bare"), node) == 85
    # The pods already there count with the defaults too: 200m and 400Mi with this one.
    held = on("node1", pod_asking("held"))
    # cpu 80; memory (1024 - 400) * 100 / 1024 = 60 (60.9); 70.
    assert least_allocated(step, pod_asking("bare"), node, held) == 70


@step_param
def test_score_adds_the_overhead_in_whole_units_as_v1_23_does(step: int) -> None:
    # v1.23's calculatePodResourceRequest adds the overhead with Quantity.Value(): a cpu
    # overhead of 250m adds 1 to the 1000 millicores, not 250. cpu (2000 - 1001) * 100 / 2000
    # = 49; memory (4Gi - 1Gi) * 100 / 4Gi = 75; (49 + 75) // 2 = 62 (with 250m: 56).
    overhead = {"cpu": "250m"}
    pod = pod_asking("web", container("c", cpu="1", memory="1Gi"), overhead=overhead)
    assert least_allocated(step, pod, node_of("node1", cpu="2", memory="4Gi")) == 62
    # Filter counts the overhead in millicores: 1250m do not fit 1200m.
    tight = node_info(step, node_of("node1", cpu="1200m", memory="4Gi"))
    assert filter_reasons(step, pod, tight)[1] == ["Insufficient cpu"]


@step_param
def test_a_resource_the_node_does_not_offer_is_left_out_of_the_mean(step: int) -> None:
    # No memory allocatable: cpu alone, (2000 - 100) * 100 / 2000 = 95.
    assert least_allocated(step, pod_asking("bare"), node_of("node1", cpu="2")) == 95
    assert least_allocated(step, pod_asking("bare"), node_of("node1")) == 0


@step_param
def test_least_allocated_prefers_the_emptier_node(step: int) -> None:
    sched = offline_scheduler(step)
    add_nodes(sched, node_of("small", cpu="1", memory="4Gi"), node_of("big", cpu="4", memory="4Gi"))
    pod = pod_asking("web", container("c", cpu="1", memory="1Gi"))
    add_pods(sched, pod)
    sched.scheduling_queue.add(pod)
    step_module(step, "schedule_one").schedule_one(sched)
    assert sched.recorder.of("selected") == [{"pod": "default/web", "node": "big"}]
    scores = {s["node"]: s["score"] for s in sched.recorder.of("score") if s["plugin"] == NAME}
    # small: cpu 0, memory 75: 37. big: cpu 75, memory 75: 75.
    assert scores == {"small": 37, "big": 75}


# --- events ---------------------------------------------------------------------------------


def rejected_for_cpu(step: int) -> Any:
    """A scheduler whose pod1 (1 CPU) failed on node-a (1 CPU, all of it pod0's) and waits in
    unschedulableQ, its backoff over. No node name ends in a digit: no Permit wait, so no
    binding thread outlives the test."""
    sched = offline_scheduler(step)
    add_nodes(sched, node_of("node-a", cpu="1", memory="4Gi"))
    held = on("node-a", pod_asking("pod0", container("c", cpu="1")))
    sched.cache.add_pod(held)
    pod = pod_asking("pod1", container("c", cpu="1"))
    add_pods(sched, pod)
    sched.pod_informer._notify("add", pod)
    step_module(step, "schedule_one").schedule_one(sched)
    assert where(sched, "pod1") == "unschedulableQ"
    [p_info] = sched.scheduling_queue._unschedulable_q.values()
    assert p_info.unschedulable_plugins == {NAME}
    sched.clock.advance(1)
    return sched, held


@step_param
def test_an_assigned_pods_deletion_moves_a_pod_rejected_for_resources(step: int) -> None:
    sched, held = rejected_for_cpu(step)
    sched.pod_informer._notify("delete", held)
    assert where(sched, "pod1") == "activeQ"
    assert sched.recorder.of("queue")[-1]["event"] == "AssignedPodDelete"
    step_module(step, "schedule_one").schedule_one(sched)
    assert sched.recorder.of("selected")[-1] == {"pod": "default/pod1", "node": "node-a"}


def updated(old: client.V1Node, path: str, value: Any) -> client.V1Node:
    new = client.V1Node.from_dict(old.to_dict())
    obj, attrs = new, path.split(".")
    for part in attrs[:-1]:
        obj = getattr(obj, part)
    setattr(obj, attrs[-1], value)
    return new


@step_param
def test_a_new_node_or_any_node_update_moves_it_where_it_would_fit(step: int) -> None:
    # v1.23 registers Node Update as a whole: any scheduling-relevant node update moves it,
    # as long as preCheckForNode finds that its requests fit the node (noderesources.Fits).
    old = node_of("node-a", cpu="1", memory="4Gi")
    sched, _ = rejected_for_cpu(step)
    more = client.V1NodeStatus(allocatable={"cpu": "8", "memory": "4Gi", "pods": "110"})
    sched.node_informer._notify("update", old, updated(old, "status", more))
    assert where(sched, "pod1") == "activeQ"
    assert sched.recorder.of("queue")[-1]["event"] == "NodeAllocatableChange"
    # A label change alone moves it too, once the node has room (pod0 left the cache quietly).
    sched, held = rejected_for_cpu(step)
    sched.cache.remove_pod(held)
    sched.node_informer._notify("update", old, updated(old, "metadata.labels", {"zone": "a"}))
    assert where(sched, "pod1") == "activeQ"
    assert sched.recorder.of("queue")[-1]["event"] == "NodeLabelChange"
    sched, _ = rejected_for_cpu(step)
    sched.node_informer._notify("add", node_of("node-b", cpu="2"))
    assert where(sched, "pod1") == "activeQ"


@step_param
def test_a_node_where_its_requests_do_not_fit_does_not_move_it(step: int) -> None:
    # preCheckForNode's noderesources.Fits: node-a is still full, node-c too small, and a
    # node that gives no "pods" allocatable takes none.
    old = node_of("node-a", cpu="1", memory="4Gi")
    sched, _ = rejected_for_cpu(step)
    cycle = sched.scheduling_queue.scheduling_cycle
    sched.node_informer._notify("update", old, updated(old, "metadata.labels", {"zone": "a"}))
    sched.node_informer._notify("add", node_of("node-c", cpu="500m"))
    no_pods = node_of("node-d", cpu="4")
    no_pods.status.allocatable = {"cpu": "4"}
    sched.node_informer._notify("add", no_pods)
    assert where(sched, "pod1") == "unschedulableQ"
    assert sched.scheduling_queue.move_request_cycle == cycle  # the requests were made


@step_param
def test_a_new_pod_elsewhere_does_not_move_it(step: int) -> None:
    sched, _ = rejected_for_cpu(step)
    sched.pod_informer._notify("add", on("node-a", make_pod("bound-elsewhere")))
    assert where(sched, "pod1") == "unschedulableQ"
