"""kube-scheduler v1.23's own NodeResourcesBalancedAllocation test tables, ported case by case.

Ported from kubernetes pkg/scheduler/framework/plugins/noderesources/balanced_allocation_test.go
(TestNodeResourcesBalancedAllocation) and pkg/scheduler/apis/config/validation/
validation_pluginargs_test.go (TestValidateNodeResourcesBalancedAllocationArgs, the validation
NewBalancedAllocation runs), read at
QuarfotPrice/sched.dev@bd78f932b5685f63c0bbe4aeffd822663695557b, a copy of the scheduler tree
taken from kubernetes master in February 2022. It was checked against v1.23.10 (the tree
vendored by kubernetes-sigs/scheduler-plugins v0.23.10): balanced_allocation.go,
resource_allocation.go (useRequested: true), test_util.go (makeNode,
makeNodeWithExtendedResource) and ValidateNodeResourcesBalancedAllocationArgs are v1.23.10's,
and the tests call only what v1.23.10 has (NewBalancedAllocation(&args, fh,
Features{EnablePodOverhead: true}), Score with a nil CycleState).

Each case runs against every built step from 13, which brings the plugin. The ids are
``<upstream test>/<the case's name>``. Upstream's validation test compares the errors' types and
fields only; here the whole message is compared, as v1.23.10's field.Error and aggregate print it.

Upstream tests of these files not ported: the other validation tests of
validation_pluginargs_test.go (DefaultPreemption, InterPodAffinity, PodTopologySpread,
NodeAffinity, VolumeBinding, NodeResourcesFit args), which are other plugins' args.
"""

from __future__ import annotations

import itertools
from types import SimpleNamespace
from typing import Any

import pytest
from kubernetes import client

from tests.conftest import built_steps, step_module

STEPS = built_steps(13)
step_param = pytest.mark.parametrize("step", STEPS, ids=lambda n: f"step{n}")

MAX_NODE_SCORE = 100

EXTENDED = pytest.mark.xfail(
    strict=True,
    reason="Not implemented: extended resources (and Fit's ignoredResources args): a "
    "BalancedAllocation resource that is not cpu, memory or ephemeral-storage is left out of "
    "the score (steps/step13/plugins/noderesources.py docstring)",
)

_names = itertools.count(1)

# --- upstream's pod specs and helpers ----------------------------------------------------------


def container(requests: dict[str, str] | None = None) -> client.V1Container:
    return client.V1Container(
        name=f"c{next(_names)}",
        resources=client.V1ResourceRequirements(requests=requests) if requests else None,
    )


def pod(containers: list[client.V1Container], node_name: str | None = None) -> client.V1Pod:
    name = f"pod{next(_names)}"
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name, namespace="default", uid=f"uid-{name}"),
        spec=client.V1PodSpec(containers=containers, node_name=node_name),
    )


def cpu_and_memory_and_gpu() -> client.V1Pod:
    """Upstream: cpuAndMemoryAndGPU, on machine1."""
    return pod(
        [
            container({"cpu": "1000m", "memory": "2000"}),
            container({"cpu": "2000m", "memory": "3000", "nvidia.com/gpu": "3"}),
        ],
        "machine1",
    )


def machine_spec(node_name: str) -> client.V1Pod:
    """Upstream: machine1Spec / machine2Spec, a pod without containers on the node."""
    return pod([], node_name)


def no_resources() -> client.V1Pod:
    """Upstream: noResources, no containers."""
    return pod([])


def cpu_only(node_name: str = "machine1") -> client.V1Pod:
    """Upstream: cpuOnly (machine1) and cpuOnly2 (machine2): 3000m cpu, memory explicitly 0."""
    return pod(
        [container({"cpu": "1000m", "memory": "0"}), container({"cpu": "2000m", "memory": "0"})],
        node_name,
    )


def cpu_and_memory() -> client.V1Pod:
    """Upstream: cpuAndMemory, on machine2: 3000m cpu and 5000 memory."""
    return pod(
        [
            container({"cpu": "1000m", "memory": "2000"}),
            container({"cpu": "2000m", "memory": "3000"}),
        ],
        "machine2",
    )


def non_zero_container(node_name: str | None = None) -> client.V1Pod:
    """Upstream: nonZeroContainer / nonZeroContainer1: one container without requests."""
    return pod([container()], node_name)


def make_node(name: str, milli_cpu: int, memory: int) -> client.V1Node:
    """Upstream: makeNode (test_util.go)."""
    return make_node_with_extended_resource(name, milli_cpu, memory, {})


def make_node_with_extended_resource(
    name: str, milli_cpu: int, memory: int, extended: dict[str, int]
) -> client.V1Node:
    """Upstream: makeNodeWithExtendedResource (test_util.go)."""
    resources = {res: str(q) for res, q in extended.items()}
    resources.update({"cpu": f"{milli_cpu}m", "memory": str(memory)})
    return client.V1Node(
        metadata=client.V1ObjectMeta(name=name),
        status=client.V1NodeStatus(capacity=resources, allocatable=resources),
    )


def new_snapshot(step: int, pods: list[client.V1Pod], nodes: list[client.V1Node]) -> Any:
    """Upstream: cache.NewSnapshot(pods, nodes)."""
    fw = step_module(step, "framework")
    snapshot = step_module(step, "snapshot").Snapshot()
    for node in nodes:
        info = fw.NodeInfo()
        info.set_node(node)
        snapshot.node_info_map[node.metadata.name] = info
        snapshot.node_info_list.append(info)
    for p in pods:
        snapshot.node_info_map.setdefault(p.spec.node_name, fw.NodeInfo()).add_pod(p)
    return snapshot


def args_of(step: int, *resources: tuple[str, int]) -> Any:
    """Upstream: config.NodeResourcesBalancedAllocationArgs{Resources: ...}."""
    nr = step_module(step, "plugins.noderesources")
    return nr.NodeResourcesBalancedAllocationArgs(
        tuple(nr.ResourceSpec(name, weight) for name, weight in resources)
    )


DEFAULT_SET = (("cpu", 1), ("memory", 1))
SCALAR_RESOURCE = {"nvidia.com/gpu": 8}


# --- TestNodeResourcesBalancedAllocation -------------------------------------------------------

BALANCED_ALLOCATION = [
    # Node1: cpu 0/4000, memory 0/10000: std 0, 100. Node2: the same.
    pytest.param(
        no_resources(),
        [],
        [make_node("machine1", 4000, 10000), make_node("machine2", 4000, 10000)],
        [("machine1", MAX_NODE_SCORE), ("machine2", MAX_NODE_SCORE)],
        DEFAULT_SET,
        id="TestNodeResourcesBalancedAllocation/nothing scheduled, nothing requested",
    ),
    # Node1: cpu 3000/4000 = 0.75, memory 5000/10000 = 0.5: std 0.125, 87.
    # Node2: cpu 3000/6000 = 0.5, memory 0.5: std 0, 100.
    pytest.param(
        cpu_and_memory(),
        [],
        [make_node("machine1", 4000, 10000), make_node("machine2", 6000, 10000)],
        [("machine1", 87), ("machine2", MAX_NODE_SCORE)],
        DEFAULT_SET,
        id="TestNodeResourcesBalancedAllocation/nothing scheduled, resources requested, "
        "differently sized machines",
    ),
    pytest.param(
        no_resources(),
        [
            machine_spec("machine1"),
            machine_spec("machine1"),
            machine_spec("machine2"),
            machine_spec("machine2"),
        ],
        [make_node("machine1", 4000, 10000), make_node("machine2", 4000, 10000)],
        [("machine1", MAX_NODE_SCORE), ("machine2", MAX_NODE_SCORE)],
        DEFAULT_SET,
        id="TestNodeResourcesBalancedAllocation/no resources requested, pods without container "
        "scheduled",
    ),
    # v1.23's useRequested: the containers without requests count 0, not the non-zero defaults
    # (which would be 100m of 250m cpu and 200Mi of 1000Mi memory).
    pytest.param(
        non_zero_container(),
        [non_zero_container("machine1"), non_zero_container("machine1")],
        [
            make_node("machine1", 250, 1000 * 1024 * 1024),
            make_node("machine2", 250, 1000 * 1024 * 1024),
        ],
        [("machine1", 100), ("machine2", 100)],
        DEFAULT_SET,
        id="TestNodeResourcesBalancedAllocation/no resources requested, pods with container "
        "scheduled",
    ),
    # Node1: cpu 6000/10000 = 0.6, memory 0/20000: std 0.3, 70.
    # Node2: cpu 0.6, memory 5000/20000 = 0.25: std 0.175, 82.
    pytest.param(
        no_resources(),
        [cpu_only(), cpu_only(), cpu_only("machine2"), cpu_and_memory()],
        [make_node("machine1", 10000, 20000), make_node("machine2", 10000, 20000)],
        [("machine1", 70), ("machine2", 82)],
        DEFAULT_SET,
        id="TestNodeResourcesBalancedAllocation/no resources requested, pods scheduled with "
        "resources",
    ),
    # Node1: cpu 0.6, memory 0.25: 82. Node2: cpu 0.6, memory 10000/20000 = 0.5: std 0.05, 95.
    pytest.param(
        cpu_and_memory(),
        [cpu_only(), cpu_and_memory()],
        [make_node("machine1", 10000, 20000), make_node("machine2", 10000, 20000)],
        [("machine1", 82), ("machine2", 95)],
        DEFAULT_SET,
        id="TestNodeResourcesBalancedAllocation/resources requested, pods scheduled with resources",
    ),
    # Node1: 82. Node2: cpu 0.6, memory 10000/50000 = 0.2: std 0.2, 80.
    pytest.param(
        cpu_and_memory(),
        [cpu_only(), cpu_and_memory()],
        [make_node("machine1", 10000, 20000), make_node("machine2", 10000, 50000)],
        [("machine1", 82), ("machine2", 80)],
        DEFAULT_SET,
        id="TestNodeResourcesBalancedAllocation/resources requested, pods scheduled with "
        "resources, differently sized machines",
    ),
    # Node1: cpu 6000/6000 = 1, memory 0: std 0.5, 50. Node2: cpu 1, memory 0.5: std 0.25, 75.
    pytest.param(
        cpu_only(),
        [cpu_only(), cpu_and_memory()],
        [make_node("machine1", 6000, 10000), make_node("machine2", 6000, 10000)],
        [("machine1", 50), ("machine2", 75)],
        DEFAULT_SET,
        id="TestNodeResourcesBalancedAllocation/requested resources at node capacity",
    ),
    # Nothing allocatable: every resource is left out, std 0.
    pytest.param(
        no_resources(),
        [cpu_only(), cpu_and_memory()],
        [make_node("machine1", 0, 0), make_node("machine2", 0, 0)],
        [("machine1", 100), ("machine2", 100)],
        DEFAULT_SET,
        id="TestNodeResourcesBalancedAllocation/zero node resources, pods scheduled with resources",
    ),
    # Node1: cpu 3000/3500, memory 5000/40000, gpu 4/8: std 0.3002, 70.
    # Node2: cpu 3000/3500, memory 5000/40000, gpu 1/8: 65.
    pytest.param(
        pod([container({"memory": "0", "nvidia.com/gpu": "1"})]),
        [cpu_and_memory(), cpu_and_memory_and_gpu()],
        [
            make_node_with_extended_resource("machine1", 3500, 40000, SCALAR_RESOURCE),
            make_node_with_extended_resource("machine2", 3500, 40000, SCALAR_RESOURCE),
        ],
        [("machine1", 70), ("machine2", 65)],
        (("cpu", 1), ("memory", 1), ("nvidia.com/gpu", 1)),
        marks=EXTENDED,
        id="TestNodeResourcesBalancedAllocation/include scalar resource on a node for balanced "
        "resource allocation",
    ),
    # Only machine1 has the scalar resource, and the pod does not request it: it is left out.
    # Both nodes: cpu only, std 0, 100.
    pytest.param(
        pod([container()]),
        [cpu_only(), cpu_only("machine2")],
        [
            make_node_with_extended_resource("machine1", 3500, 40000, SCALAR_RESOURCE),
            make_node("machine2", 3500, 40000),
        ],
        [("machine1", 100), ("machine2", 100)],
        (("cpu", 1), ("nvidia.com/gpu", 1)),
        id="TestNodeResourcesBalancedAllocation/node without the scalar resource results to a "
        "higher score",
    ),
]


@step_param
@pytest.mark.parametrize(("pod_", "pods", "nodes", "expected", "resources"), BALANCED_ALLOCATION)
def test_node_resources_balanced_allocation(
    step: int,
    pod_: client.V1Pod,
    pods: list[client.V1Pod],
    nodes: list[client.V1Node],
    expected: list[tuple[str, int]],
    resources: tuple[tuple[str, int], ...],
) -> None:
    snapshot = new_snapshot(step, pods, nodes)
    handle = SimpleNamespace(snapshot_shared_lister=lambda: snapshot)
    nr = step_module(step, "plugins.noderesources")
    plugin = nr.new_balanced_allocation(args_of(step, *resources), handle)
    got = []
    for node in nodes:
        # Upstream scores with a nil CycleState: the plugin keeps no state.
        score, status = plugin.score(None, pod_, node.metadata.name)
        assert status.is_success(), status
        got.append((node.metadata.name, score))
    assert got == expected


# --- TestValidateNodeResourcesBalancedAllocationArgs -------------------------------------------

VALIDATE_ARGS = [
    pytest.param(
        (("cpu", 1), ("memory", 1)),
        None,
        id="TestValidateNodeResourcesBalancedAllocationArgs/valid config",
    ),
    pytest.param(
        (("cpu", 2), ("memory", 1)),
        "resources[0].weight: Invalid value: 2: must be 1",
        id="TestValidateNodeResourcesBalancedAllocationArgs/invalid config",
    ),
    pytest.param(
        (("cpu", 1), ("cpu", 1)),
        'resources[1].name: Duplicate value: "cpu"',
        id="TestValidateNodeResourcesBalancedAllocationArgs/repeated resources",
    ),
]


@step_param
@pytest.mark.parametrize(("resources", "want_err"), VALIDATE_ARGS)
def test_validate_node_resources_balanced_allocation_args(
    step: int, resources: tuple[tuple[str, int], ...], want_err: str | None
) -> None:
    nr = step_module(step, "plugins.noderesources")
    args = args_of(step, *resources)
    if want_err is None:
        assert nr.validate_node_resources_balanced_allocation_args(None, args) is None
        nr.new_balanced_allocation(args, None)
        return
    assert str(nr.validate_node_resources_balanced_allocation_args(None, args)) == want_err
    # NewBalancedAllocation returns the same error.
    with pytest.raises(ValueError) as err:
        nr.new_balanced_allocation(args, None)
    assert str(err.value) == want_err


# --- not upstream's: what the tables above do not reach ----------------------------------------


@step_param
def test_several_errors_print_as_an_aggregate(step: int) -> None:
    """Several field errors print in brackets, in order, as ErrorList.ToAggregate() does."""
    nr = step_module(step, "plugins.noderesources")
    err = nr.validate_node_resources_balanced_allocation_args(
        None, args_of(step, ("cpu", 2), ("cpu", 0))
    )
    assert isinstance(err, ValueError)
    assert str(err) == (
        "[resources[0].weight: Invalid value: 2: must be 1, "
        'resources[1].name: Duplicate value: "cpu", '
        "resources[1].weight: Invalid value: 0: must be 1]"
    )


@step_param
def test_default_args(step: int) -> None:
    """No args is v1beta3's defaults: cpu and memory, weight 1; no scores normalization."""
    nr = step_module(step, "plugins.noderesources")
    plugin = nr.new_balanced_allocation(None, None)
    assert plugin.name() == "NodeResourcesBalancedAllocation"
    assert plugin.resource_to_weight == {"cpu": 1, "memory": 1}
    assert plugin.score_extensions() is None


@step_param
def test_fit_score_keeps_the_non_zero_defaults(step: int) -> None:
    """Sharing the helpers with BalancedAllocation leaves Fit's Score as it was: a container
    without requests counts 100m cpu and 200Mi memory there, and 0 in BalancedAllocation."""
    nr = step_module(step, "plugins.noderesources")
    info = step_module(step, "framework").NodeInfo()
    info.set_node(make_node("n", 1000, 1000 * 1024 * 1024))
    p = non_zero_container()
    assert nr.calculate_resource_allocatable_request(info, p, "cpu") == (1000, 100)
    assert nr.calculate_resource_allocatable_request(info, p, "memory") == (
        1000 * 1024 * 1024,
        200 * 1024 * 1024,
    )
    assert nr.calculate_resource_allocatable_request(info, p, "cpu", use_requested=True) == (
        1000,
        0,
    )
