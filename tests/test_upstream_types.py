"""kube-scheduler v1.23's own NodeInfo and Resource test tables, ported case by case (issue 29).

Ported from kubernetes v1.23.x pkg/scheduler/framework/types_test.go (read at
QuarfotPrice/sched.dev@448ef7a3cea647dce342c869b72c2c3483cf1c1f, a copy of kube-scheduler's tree
whose go.mod pins k8s.io/* v0.23.4). No stored copy of kubernetes/kubernetes is at a v1.23
commit, so this one was checked against v1.23.10 (the tree vendored by kubernetes-sigs/
scheduler-plugins v0.23.10): its framework/types.go at that commit is v1.23.10's but for where
one import line sits, and the tests call only what v1.23.10 has (NewResource, Resource.Clone,
SetMaxResource, NewNodeInfo, NodeInfo.Clone/AddPod/RemovePod/SetNode).

The code under test: Resource and NodeInfo in steps/step9/framework.py (step 9 brings the
cache); step 10 adds NodeInfo.non_zero_requested (upstream's NonZeroRequested). Each case runs
against steps 9, 10 and 12; the ids are ``step<N>-<upstream test>/<the case's name>``, the case's
name being upstream's subtest name (``case_<i>`` where the table has no names, the test's own
name where it has no table).

What the steps' NodeInfo does not have is not compared: UsedPorts, ImageStates and PVCRefCounts
("Not implemented: PodsWithAffinity, UsedPorts, ImageStates and PVCRefCounts",
steps/step9/framework.py NodeInfo), so the host ports and PVC volumes of upstream's pods only
ride along, and TestNodeInfoClone's removal of a port from the original is left out. At step 9
NonZeroRequested is compared only where it differs from Requested (a case about the non-zero
defaults), and those cases are expected failures there. Upstream's Resource.Clone has no
counterpart in the steps; TestResourceClone checks the copy NodeInfo.clone makes of each Resource
instead.

Upstream tests of this file not ported:

- TestResourceAddScalar: only extended (scalar) resources, which the steps never had
  ("Not implemented: extended resources (ScalarResources) and hugepages", Resource).
- TestHostPortInfo_AddRemove, TestHostPortInfo_Check: HostPortInfo, the NodeInfo's UsedPorts,
  which the steps never had (no NodePorts plugin).
- TestGetNamespacesFromPodAffinityTerm: PodInfo's parsed affinity terms, which the steps never
  had ("Simplified: the pods are held as they are", NodeInfo).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from _pytest.mark.structures import ParameterSet
from kubernetes import client

from tests.conftest import step_module

# Step 9 brings NodeInfo and Resource, step 10 the non-zero requests, step 12 is the last.
STEPS = (9, 10, 12)
NON_ZERO_STEP = 10
MI = 1024**2
# Upstream: schedutil.DefaultMilliCPURequest, DefaultMemoryRequest.
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * MI

# The expected failures, by the mark in steps/ that explains them.
EXTENDED = pytest.mark.xfail(
    strict=True,
    raises=(AttributeError, TypeError),
    reason="Not implemented: extended resources (ScalarResources) and hugepages "
    "(steps/step9/framework.py Resource)",
)
NO_NON_ZERO = pytest.mark.xfail(
    strict=True,
    raises=AttributeError,
    reason="Not implemented: NonZeroRequested (steps/step9/framework.py NodeInfo); step 10 adds it",
)


def by_step(*cases: ParameterSet, non_zero: Collection[str] = ()) -> list[ParameterSet]:
    """Each case once per step, as ``(step, *case values)``; the cases named in ``non_zero``
    (about the non-zero defaults) are expected failures before step 10."""
    params = []
    for step in STEPS:
        for case in cases:
            assert case.id is not None
            marks = list(case.marks)
            if case.id in non_zero and step < NON_ZERO_STEP:
                assert not marks, f"{case.id}: one expected failure per case"
                marks.append(NO_NON_ZERO)
            params.append(pytest.param(step, *case.values, id=f"step{step}-{case.id}", marks=marks))
    return params


# --- upstream's test helpers -------------------------------------------------------------------


def make_base_pod(
    node_name: str,
    obj_name: str,
    cpu: str,
    mem: str,
    extended: str = "",
    ports: Sequence[client.V1ContainerPort] | None = None,
    volumes: Sequence[client.V1Volume] | None = None,
    *,
    namespace: str = "node_info_cache_test",
) -> client.V1Pod:
    """Upstream: makeBasePod. One container asking ``cpu`` and ``mem`` (nothing when ``cpu``
    is empty), and ``extended`` ("name:quantity") too."""
    requests: dict[str, str] = {}
    if cpu:
        requests = {"cpu": cpu, "memory": mem}
        if extended:
            name, quantity = extended.split(":")
            requests[name] = quantity
    return client.V1Pod(
        metadata=client.V1ObjectMeta(uid=obj_name, namespace=namespace, name=obj_name),
        spec=client.V1PodSpec(
            containers=[
                client.V1Container(
                    name="c",
                    resources=client.V1ResourceRequirements(requests=requests),
                    ports=list(ports) if ports else None,
                )
            ],
            node_name=node_name,
            volumes=list(volumes) if volumes else None,
        ),
    )


def host_port(port: int, host_ip: str = "127.0.0.1") -> client.V1ContainerPort:
    """A container port bound on the host (upstream's pods carry them; the steps ignore them)."""
    return client.V1ContainerPort(
        container_port=port, host_ip=host_ip, host_port=port, protocol="TCP"
    )


def pvc(claim: str) -> client.V1Volume:
    return client.V1Volume(
        name=claim,
        persistent_volume_claim=client.V1PersistentVolumeClaimVolumeSource(claim_name=claim),
    )


def fake_node_info(step: int, *pods: client.V1Pod) -> Any:
    """Upstream: fakeNodeInfo, a NodeInfo of the pods on node "test-node" (no allocatable)."""
    node_info = step_module(step, "framework").NodeInfo(*pods)
    node_info.set_node(client.V1Node(metadata=client.V1ObjectMeta(name="test-node")))
    return node_info


def scalar_resources(resource: Any) -> dict[str, int]:
    """Upstream's Resource.ScalarResources: no step has it (AttributeError)."""
    return dict(resource.scalar_resources)


# --- what a NodeInfo should hold ---------------------------------------------------------------


@dataclass
class Want:
    """The fields of upstream's expected NodeInfo that the steps have.

    ``pods`` are the very objects, in order; ``non_zero`` defaults to ``requested``;
    ``scalars`` are the extended resources upstream expects in Requested (no step has them).
    """

    pods: list[client.V1Pod]
    requested: tuple[int, int]  # (milli CPU, memory)
    non_zero: tuple[int, int] | None = None
    ephemeral_storage: int = 0
    allocatable: tuple[int, int] | None = None  # (milli CPU, memory); None: not checked
    node: client.V1Node | None = None
    scalars: dict[str, int] = field(default_factory=dict)


def check_node_info(step: int, node_info: Any, want: Want) -> None:
    """Upstream's reflect.DeepEqual of two NodeInfos, generation aside, on the fields the steps
    have. The checks that need what a step lacks come last, so that an expected failure (an
    AttributeError) never hides a wrong value the step does have."""
    requested = node_info.requested
    assert (requested.milli_cpu, requested.memory) == want.requested
    assert requested.ephemeral_storage == want.ephemeral_storage
    assert requested.allowed_pod_number == 0
    if want.allocatable is not None:
        allocatable = node_info.allocatable
        assert (allocatable.milli_cpu, allocatable.memory) == want.allocatable
    assert node_info.node() is want.node
    assert pod_names(node_info.pods) == pod_names(want.pods)
    assert all(got is pod for got, pod in zip(node_info.pods, want.pods, strict=True))
    non_zero = want.non_zero or want.requested
    if step >= NON_ZERO_STEP or non_zero != want.requested:
        got = node_info.non_zero_requested  # AttributeError before step 10
        assert (got.milli_cpu, got.memory) == non_zero
    if want.scalars:
        assert scalar_resources(requested) == want.scalars


def pod_names(pods: Sequence[client.V1Pod]) -> list[str]:
    return [p.metadata.name for p in pods]


# --- TestNewResource ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("step", "resource_list", "expected", "scalars"),
    by_step(
        pytest.param({}, (0, 0, 0, 0), {}, id="TestNewResource/empty resource"),
        pytest.param(
            {
                "cpu": "4m",
                "memory": "2000",
                "pods": "80",
                "ephemeral-storage": "5000",
                "scalar.test/scalar1": "1",
                "hugepages-test": "2",
            },
            (4, 2000, 5000, 80),
            {"scalar.test/scalar1": 1, "hugepages-test": 2},
            id="TestNewResource/complex resource",
            marks=EXTENDED,
        ),
    ),
)
def test_new_resource(
    step: int,
    resource_list: dict[str, str],
    expected: tuple[int, int, int, int],
    scalars: dict[str, int],
) -> None:
    r = step_module(step, "framework").Resource.from_resource_list(resource_list)
    assert (r.milli_cpu, r.memory, r.ephemeral_storage, r.allowed_pod_number) == expected
    if scalars:
        assert scalar_resources(r) == scalars


# --- TestResourceClone -------------------------------------------------------------------------

FOUR_FIELDS = {"milli_cpu": 4, "memory": 2000, "ephemeral_storage": 5000, "allowed_pod_number": 80}


@pytest.mark.parametrize(
    ("step", "fields"),
    by_step(
        pytest.param({}, id="TestResourceClone/case_0"),
        pytest.param(
            {**FOUR_FIELDS, "scalar_resources": {"scalar.test/scalar1": 1, "hugepages-test": 2}},
            id="TestResourceClone/case_1",
            marks=EXTENDED,
        ),
    ),
)
def test_resource_clone(step: int, fields: dict[str, Any]) -> None:
    """Upstream clones the Resource and changes the original's MilliCPU; the steps copy a
    Resource only inside NodeInfo.clone, so each of the NodeInfo's Resources is checked."""
    framework = step_module(step, "framework")
    node_info = framework.NodeInfo()
    names = ["requested", "allocatable"]
    if step >= NON_ZERO_STEP:
        names.append("non_zero_requested")
    for name in names:
        setattr(node_info, name, framework.Resource(**fields))  # TypeError for scalars
    clone = node_info.clone()
    for name in names:
        getattr(node_info, name).milli_cpu += 1000
    for name in names:
        assert getattr(clone, name) == framework.Resource(**fields), name


# --- TestSetMaxResource ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("step", "fields", "resource_list", "expected"),
    by_step(
        pytest.param(
            {},
            {"cpu": "4m", "memory": "2000", "ephemeral-storage": "5000"},
            {"milli_cpu": 4, "memory": 2000, "ephemeral_storage": 5000},
            id="TestSetMaxResource/case_0",
        ),
        pytest.param(
            {
                "milli_cpu": 4,
                "memory": 4000,
                "ephemeral_storage": 5000,
                "scalar_resources": {"scalar.test/scalar1": 1, "hugepages-test": 2},
            },
            {
                "cpu": "4m",
                "memory": "2000",
                "ephemeral-storage": "7000",
                "scalar.test/scalar1": "4",
                "hugepages-test": "5",
            },
            {
                "milli_cpu": 4,
                "memory": 4000,
                "ephemeral_storage": 7000,
                "scalar_resources": {"scalar.test/scalar1": 4, "hugepages-test": 5},
            },
            id="TestSetMaxResource/case_1",
            marks=EXTENDED,
        ),
    ),
)
def test_set_max_resource(
    step: int, fields: dict[str, Any], resource_list: dict[str, str], expected: dict[str, Any]
) -> None:
    """Upstream's SetMaxResource(ResourceList) is set_max(Resource.from_resource_list(...)) in
    the steps (how calculate_resource takes an init container's requests)."""
    framework = step_module(step, "framework")
    r = framework.Resource(**fields)  # TypeError for scalars
    r.set_max(framework.Resource.from_resource_list(resource_list))
    assert r == framework.Resource(**expected)


# --- TestNewNodeInfo ---------------------------------------------------------------------------


@pytest.mark.parametrize(("step",), by_step(pytest.param(id="TestNewNodeInfo")))
def test_new_node_info(step: int) -> None:
    framework = step_module(step, "framework")
    pods = [
        make_base_pod("test-node", "test-1", "100m", "500", "", [host_port(80)]),
        make_base_pod("test-node", "test-2", "200m", "1Ki", "", [host_port(8080)]),
    ]
    gen = framework.next_generation()  # upstream reads the counter itself
    ni = framework.NodeInfo(*pods)
    assert ni.generation > gen, "Generation is not incremented"
    check_node_info(step, ni, Want(pods, requested=(300, 1524), allocatable=(0, 0)))


# --- TestNodeInfoClone -------------------------------------------------------------------------


@pytest.mark.parametrize(("step",), by_step(pytest.param(id="TestNodeInfoClone/case_0")))
def test_node_info_clone(step: int) -> None:
    """Upstream's NodeInfo is built field by field: two pods (not added: nothing requested) and
    generation 2. After the clone the original's generation moves on (and one of its host
    ports is removed: not implemented, left out)."""
    framework = step_module(step, "framework")
    pods = [
        make_base_pod("test-node", "test-1", "100m", "500", "", [host_port(80)]),
        make_base_pod("test-node", "test-2", "200m", "1Ki", "", [host_port(8080)]),
    ]
    node_info = framework.NodeInfo()
    node_info.pods = list(pods)
    node_info.generation = 2
    ni = node_info.clone()
    node_info.generation += 10
    assert ni.generation == 2
    check_node_info(step, ni, Want(pods, requested=(0, 0), allocatable=(0, 0)))


# --- TestNodeInfoAddPod ------------------------------------------------------------------------


def node_info_add_pod_pods() -> list[client.V1Pod]:
    """Upstream's three pods: overheads, an init container asking more than the containers,
    and pods asking no memory (the non-zero default counts for them)."""

    def pod(
        name: str,
        requests: dict[str, str],
        port: int,
        overhead: dict[str, str],
        claim: str,
        init: dict[str, str] | None = None,
    ) -> client.V1Pod:
        def container(requests: dict[str, str], port: int | None) -> client.V1Container:
            return client.V1Container(
                name="c",
                resources=client.V1ResourceRequirements(requests=requests),
                ports=[host_port(port)] if port else None,
            )

        return client.V1Pod(
            metadata=client.V1ObjectMeta(namespace="node_info_cache_test", name=name, uid=name),
            spec=client.V1PodSpec(
                containers=[container(requests, port)],
                init_containers=[container(init, None)] if init else None,
                node_name="test-node",
                overhead=overhead,
                volumes=[pvc(claim)],
            ),
        )

    return [
        pod("test-1", {"cpu": "100m", "memory": "500"}, 80, {"cpu": "500m"}, "pvc-1"),
        pod("test-2", {"cpu": "200m"}, 8080, {"cpu": "500m", "memory": "500"}, "pvc-1"),
        pod(
            "test-3",
            {"cpu": "200m"},
            8080,
            {"cpu": "500m", "memory": "500"},
            "pvc-2",
            init={"cpu": "500m", "memory": "200Mi"},
        ),
    ]


@pytest.mark.parametrize(
    ("step",), by_step(pytest.param(id="TestNodeInfoAddPod"), non_zero={"TestNodeInfoAddPod"})
)
def test_node_info_add_pod(step: int) -> None:
    pods = node_info_add_pod_pods()
    ni = fake_node_info(step)
    gen = ni.generation
    for pod in pods:
        ni.add_pod(pod)
        assert ni.generation > gen, "Generation is not incremented"
        gen = ni.generation
    check_node_info(
        step,
        ni,
        Want(
            pods,
            # 1500 + 200Mi of the init container
            requested=(2300, 209716700),
            # 200Mi (init container) + 200Mi (the default memory) + 1500 asked or overhead
            non_zero=(2300, 419431900),
            allocatable=(0, 0),
            node=ni.node(),
        ),
    )
    assert ni.node().metadata.name == "test-node"


# --- TestNodeInfoRemovePod ---------------------------------------------------------------------


def node_info_remove_pod_pods() -> list[client.V1Pod]:
    pods = [
        make_base_pod("test-node", "test-1", "100m", "500", "", [host_port(80)], [pvc("pvc-1")]),
        make_base_pod("test-node", "test-2", "200m", "1Ki", "", [host_port(8080)]),
    ]
    for pod in pods:  # upstream: add pod Overhead
        pod.spec.overhead = {"cpu": "500m", "memory": "500"}
    return pods


@pytest.mark.parametrize(
    ("step", "to_remove", "err_expected", "want_pods", "requested"),
    by_step(
        pytest.param(
            "non-exist", True, ["test-1", "test-2"], (1300, 2524), id="TestNodeInfoRemovePod/case_0"
        ),
        pytest.param("test-1", False, ["test-2"], (700, 1524), id="TestNodeInfoRemovePod/case_1"),
    ),
)
def test_node_info_remove_pod(
    step: int,
    to_remove: str,
    err_expected: bool,
    want_pods: list[str],
    requested: tuple[int, int],
) -> None:
    pods = node_info_remove_pod_pods()
    if to_remove == "non-exist":
        pod = make_base_pod(
            "test-node", "non-exist", "0", "0", "", [client.V1ContainerPort(container_port=0)]
        )
    else:  # a copy of test-1, as upstream writes it out again
        [pod] = node_info_remove_pod_pods()[:1]
    ni = fake_node_info(step, *pods)
    gen = ni.generation
    if err_expected:
        with pytest.raises(
            Exception, match="^no corresponding pod non-exist in pods of node test-node$"
        ):
            ni.remove_pod(pod)
    else:
        ni.remove_pod(pod)
        assert ni.generation > gen, "Generation is not incremented"
    by_name = {p.metadata.name: p for p in pods}
    check_node_info(
        step,
        ni,
        Want(
            [by_name[n] for n in want_pods], requested=requested, allocatable=(0, 0), node=ni.node()
        ),
    )
    assert ni.node().metadata.name == "test-node"
