"""kube-scheduler v1.23's own NodeResourcesFit test tables, ported case by case (issue 29).

Ported from kubernetes v1.23.x pkg/scheduler/framework/plugins/noderesources/fit_test.go and
least_allocated_test.go (read at QuarfotPrice/sched.dev@bd78f932b5685f63c0bbe4aeffd822663695557b,
a copy of the scheduler tree taken from kubernetes master in February 2022). No stored copy of
kubernetes/kubernetes is at a v1.23 commit, so this one was checked against v1.23.10 (the tree
vendored by kubernetes-sigs/scheduler-plugins v0.23.10): its fit.go, least_allocated.go,
resource_allocation.go and test_util.go are v1.23.10's but for one line, Fit.EventsToRegister
(``Add | UpdateNodeAllocatable`` there, ``Add | Update`` in v1.23.10), which no test here reads;
and the tests call only what v1.23.10 has (NewFit(args, handle, Features{EnablePodOverhead}),
computePodResourceRequest(pod, enablePodOverhead), fitsRequest, the LeastAllocated scorer).

Each case runs against step 10, which brings NodeResourcesFit, and every step from 12 on. The
ids are ``<upstream test>/<the case's name>``.

Steps 10 to 13 read no plugin args: upstream's NewFit turns ``args.ScoringStrategy.Resources``
into the scorer's resourceToWeightMap, which the steps' Fit keeps as ``resource_to_weight``;
``new_fit`` below sets that attribute the same way there. The other args (the strategy type, its
shape, ignoredResources, ignoredResourceGroups) are handed to the step's ``new_fit`` as upstream
hands them to NewFit, and the cases that need them are expected failures on those steps. From
step 14 (``ARGS_STEP``) the step's ``new_fit`` takes its own NodeResourcesFitArgs, built from the
case's, and validates them: the MostAllocated, RequestedToCapacityRatio and weight-validation
cases pass there. The tables of most_allocated_test.go, requested_to_capacity_ratio_test.go and
validation_pluginargs_test.go are in tests/test_upstream_fit_args.py.

Upstream tests of these files not ported: none left out. v1.23 has no TestEventsToRegister and
no TestRestartableInitContainers in fit_test.go (both came in later releases).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest
from kubernetes import client

from tests.conftest import built_steps, step_module

STEPS = [s for s in built_steps(10) if s == 10 or s >= 12]
step_param = pytest.mark.parametrize("step", STEPS, ids=lambda n: f"step{n}")
# The step whose NodeResourcesFit reads its args: its strategies and its validation.
ARGS_STEP = 14

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0

# The expected failures, by the mark in steps/ that explains them.
EXTENDED = pytest.mark.xfail(
    strict=True,
    reason="Not implemented: extended resources (ScalarResources) and hugepages "
    "(steps/step10/framework.py Resource; steps/step10/plugins/noderesources.py)",
)
MOST_ALLOCATED = pytest.mark.xfail(
    strict=True,
    reason="Not implemented: the MostAllocated and RequestedToCapacityRatio strategies "
    "(steps/step10/plugins/noderesources.py)",
)
RTC_RATIO = MOST_ALLOCATED
ARGS_VALIDATION = pytest.mark.xfail(
    strict=True,
    reason="Not implemented: any plugin args: the weights are fixed, so nothing validates "
    "them (steps/step10/plugins/noderesources.py docstring)",
)
# The marks step 14 lifts: its Fit reads its args.
BEFORE_ARGS_STEP = (MOST_ALLOCATED, ARGS_VALIDATION)


def on_each_step(cases: list[Any]) -> list[Any]:
    """Each case on each of STEPS, as ``@step_param`` would run it (the same ids), but with
    the marks of BEFORE_ARGS_STEP on the steps before ARGS_STEP only."""
    lifted = [b.mark for b in BEFORE_ARGS_STEP]
    params = []
    for case in cases:
        for step in STEPS:
            marks = [m for m in case.marks if step < ARGS_STEP or m.mark not in lifted]
            params.append(pytest.param(step, *case.values, marks=marks, id=f"{case.id}-step{step}"))
    return params


FEATURE_GATES = pytest.mark.xfail(
    strict=True,
    reason="Simplified: the LocalStorageCapacityIsolation feature gate is always on "
    "(steps/step10/plugins/noderesources.py docstring)",
)

# --- upstream's NodeResourcesFitArgs, as the test hands it to the plugin factory -------------


@dataclass(frozen=True)
class ResourceSpec:
    """Upstream: config.ResourceSpec."""

    name: str
    weight: int


@dataclass(frozen=True)
class ScoringStrategy:
    """Upstream: config.ScoringStrategy; ``shape`` is RequestedToCapacityRatio.Shape as
    (utilization, score) pairs."""

    type: str = "LeastAllocated"
    resources: tuple[ResourceSpec, ...] | None = None
    shape: tuple[tuple[int, int], ...] | None = None


@dataclass(frozen=True)
class FitArgs:
    """Upstream: config.NodeResourcesFitArgs."""

    scoring_strategy: ScoringStrategy | None = None
    ignored_resources: tuple[str, ...] = ()
    ignored_resource_groups: tuple[str, ...] = ()


DEFAULT_RESOURCES = (ResourceSpec("cpu", 1), ResourceSpec("memory", 1))
# Upstream: defaultScoringStrategy.
DEFAULT_SCORING_STRATEGY = ScoringStrategy("LeastAllocated", DEFAULT_RESOURCES)


def step_args(step: int, args: FitArgs) -> Any:
    """The case's args as the step's own NodeResourcesFitArgs (from ARGS_STEP)."""
    nr = step_module(step, "plugins.noderesources")
    strategy = args.scoring_strategy
    step_strategy = None
    if strategy is not None:
        step_strategy = nr.ScoringStrategy(
            strategy.type,
            tuple(nr.ResourceSpec(r.name, r.weight) for r in strategy.resources or ()),
            None
            if strategy.shape is None
            else nr.RequestedToCapacityRatioParam(
                tuple(nr.UtilizationShapePoint(u, sc) for u, sc in strategy.shape)
            ),
        )
    return nr.NodeResourcesFitArgs(
        args.ignored_resources, args.ignored_resource_groups, step_strategy
    )


def new_fit(step: int, args: FitArgs, handle: Any = None) -> Any:
    """Upstream: NewFit(&args, handle, plfeature.Features{EnablePodOverhead: true})."""
    if args.scoring_strategy is None:
        args = FitArgs(
            DEFAULT_SCORING_STRATEGY, args.ignored_resources, args.ignored_resource_groups
        )
    if step >= ARGS_STEP:
        return step_module(step, "plugins.noderesources").new_fit(step_args(step, args), handle)
    fit = step_module(step, "plugins.noderesources").new_fit(args, handle)
    # Upstream: resourcesToWeightMap(args.ScoringStrategy.Resources), the scorer's weights.
    fit.resource_to_weight = {r.name: r.weight for r in args.scoring_strategy.resources or ()}
    return fit


# --- upstream's helpers of fit_test.go ---------------------------------------------------------

EXTENDED_RESOURCE_A = "example.com/aaa"
EXTENDED_RESOURCE_B = "example.com/bbb"
KUBERNETES_IO_RESOURCE_A = "kubernetes.io/something"
KUBERNETES_IO_RESOURCE_B = "subdomain.kubernetes.io/something"
HUGE_PAGE_RESOURCE_A = "hugepages-2Mi"

_names = itertools.count(1)


@dataclass(frozen=True)
class Res:
    """Upstream: a framework.Resource literal, as the tables write one."""

    milli_cpu: int = 0
    memory: int = 0
    ephemeral_storage: int = 0
    allowed_pod_number: int = 0
    scalar: dict[str, int] = field(default_factory=dict)


def make_resources(
    milli_cpu: int, memory: int, pods: int, extended_a: int, storage: int, huge_page_a: int
) -> dict[str, str]:
    """Upstream: makeResources(...).Capacity and makeAllocatableResources."""
    return {
        "cpu": f"{milli_cpu}m",
        "memory": str(memory),
        "pods": str(pods),
        EXTENDED_RESOURCE_A: str(extended_a),
        "ephemeral-storage": str(storage),
        HUGE_PAGE_RESOURCE_A: str(huge_page_a),
    }


def pod_with(containers: list[client.V1Container], node_name: str | None = None) -> client.V1Pod:
    name = f"pod{next(_names)}"
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name, namespace="default", uid=f"uid-{name}"),
        spec=client.V1PodSpec(containers=containers, node_name=node_name),
    )


def empty_pod() -> client.V1Pod:
    """Upstream: &v1.Pod{}, no containers at all."""
    return pod_with([])


def new_resource_pod(*usage: Res) -> client.V1Pod:
    """Upstream: newResourcePod; each container asks for cpu, memory, pods and
    ephemeral-storage (explicitly, zeros too) and for its scalar resources."""
    containers = []
    for i, req in enumerate(usage):
        requests = {
            "cpu": f"{req.milli_cpu}m",
            "memory": str(req.memory),
            "pods": str(req.allowed_pod_number),
            "ephemeral-storage": str(req.ephemeral_storage),
        }
        requests.update({name: str(q) for name, q in req.scalar.items()})
        containers.append(
            client.V1Container(
                name=f"c{i}", resources=client.V1ResourceRequirements(requests=requests)
            )
        )
    return pod_with(containers)


def new_resource_init_pod(pod: client.V1Pod, *usage: Res) -> client.V1Pod:
    """Upstream: newResourceInitPod."""
    pod.spec.init_containers = new_resource_pod(*usage).spec.containers
    return pod


def new_resource_overhead_pod(pod: client.V1Pod, overhead: dict[str, str]) -> client.V1Pod:
    """Upstream: newResourceOverheadPod."""
    pod.spec.overhead = overhead
    return pod


def get_err_reason(resource: str) -> str:
    """Upstream: getErrReason."""
    return f"Insufficient {resource}"


@dataclass(frozen=True)
class Insufficient:
    """Upstream: InsufficientResource{ResourceName, Reason, Requested, Used, Capacity}."""

    resource_name: str
    reason: str
    requested: int
    used: int
    capacity: int


def node_info_of(step: int, node: client.V1Node, *pods: client.V1Pod) -> Any:
    """Upstream: framework.NewNodeInfo(pods...) and SetNode."""
    info = step_module(step, "framework").NodeInfo(*pods)
    info.set_node(node)
    return info


def node_with(capacity: dict[str, str] | None, allocatable: dict[str, str] | None) -> client.V1Node:
    return client.V1Node(
        metadata=client.V1ObjectMeta(name=""),
        status=client.V1NodeStatus(capacity=capacity, allocatable=allocatable),
    )


def status_of(status: Any) -> tuple[str, list[str]]:
    return status.code.name, list(status.reasons)


SUCCESS: tuple[str, list[str]] = ("SUCCESS", [])


def unschedulable(*reasons: str) -> tuple[str, list[str]]:
    """Upstream: framework.NewStatus(framework.Unschedulable, reasons...)."""
    return "UNSCHEDULABLE", list(reasons)


def run_pre_filter_and_filter(
    step: int, fit: Any, pod: client.V1Pod, info: Any
) -> tuple[str, list[str]]:
    """PreFilter, which must succeed, then Filter: Filter's status."""
    state = step_module(step, "cycle_state").CycleState()
    assert fit.pre_filter(state, pod).is_success()
    return status_of(fit.filter(state, pod, info))


# --- TestEnoughRequests ------------------------------------------------------------------------


def _insuff(name: str, requested: int, used: int, capacity: int) -> Insufficient:
    return Insufficient(name, get_err_reason(name), requested, used, capacity)


ENOUGH_REQUESTS = [
    pytest.param(
        empty_pod(),
        [new_resource_pod(Res(10, 20))],
        FitArgs(),
        SUCCESS,
        [],
        id="TestEnoughRequests/no resources requested always fits",
    ),
    pytest.param(
        new_resource_pod(Res(1, 1)),
        [new_resource_pod(Res(10, 20))],
        FitArgs(),
        unschedulable(get_err_reason("cpu"), get_err_reason("memory")),
        [_insuff("cpu", 1, 10, 10), _insuff("memory", 1, 20, 20)],
        id="TestEnoughRequests/too many resources fails",
    ),
    pytest.param(
        new_resource_init_pod(new_resource_pod(Res(1, 1)), Res(3, 1)),
        [new_resource_pod(Res(8, 19))],
        FitArgs(),
        unschedulable(get_err_reason("cpu")),
        [_insuff("cpu", 3, 8, 10)],
        id="TestEnoughRequests/too many resources fails due to init container cpu",
    ),
    pytest.param(
        new_resource_init_pod(new_resource_pod(Res(1, 1)), Res(3, 1), Res(2, 1)),
        [new_resource_pod(Res(8, 19))],
        FitArgs(),
        unschedulable(get_err_reason("cpu")),
        [_insuff("cpu", 3, 8, 10)],
        id="TestEnoughRequests/too many resources fails due to highest init container cpu",
    ),
    pytest.param(
        new_resource_init_pod(new_resource_pod(Res(1, 1)), Res(1, 3)),
        [new_resource_pod(Res(9, 19))],
        FitArgs(),
        unschedulable(get_err_reason("memory")),
        [_insuff("memory", 3, 19, 20)],
        id="TestEnoughRequests/too many resources fails due to init container memory",
    ),
    pytest.param(
        new_resource_init_pod(new_resource_pod(Res(1, 1)), Res(1, 3), Res(1, 2)),
        [new_resource_pod(Res(9, 19))],
        FitArgs(),
        unschedulable(get_err_reason("memory")),
        [_insuff("memory", 3, 19, 20)],
        id="TestEnoughRequests/too many resources fails due to highest init container memory",
    ),
    pytest.param(
        new_resource_init_pod(new_resource_pod(Res(1, 1)), Res(1, 1)),
        [new_resource_pod(Res(9, 19))],
        FitArgs(),
        SUCCESS,
        [],
        id="TestEnoughRequests/init container fits because it's the max, not sum, "
        "of containers and init containers",
    ),
    pytest.param(
        new_resource_init_pod(new_resource_pod(Res(1, 1)), Res(1, 1), Res(1, 1)),
        [new_resource_pod(Res(9, 19))],
        FitArgs(),
        SUCCESS,
        [],
        id="TestEnoughRequests/multiple init containers fit because it's the max, not sum, "
        "of containers and init containers",
    ),
    pytest.param(
        new_resource_pod(Res(1, 1)),
        [new_resource_pod(Res(5, 5))],
        FitArgs(),
        SUCCESS,
        [],
        id="TestEnoughRequests/both resources fit",
    ),
    pytest.param(
        new_resource_pod(Res(2, 1)),
        [new_resource_pod(Res(9, 5))],
        FitArgs(),
        unschedulable(get_err_reason("cpu")),
        [_insuff("cpu", 2, 9, 10)],
        id="TestEnoughRequests/one resource memory fits",
    ),
    pytest.param(
        new_resource_pod(Res(1, 2)),
        [new_resource_pod(Res(5, 19))],
        FitArgs(),
        unschedulable(get_err_reason("memory")),
        [_insuff("memory", 2, 19, 20)],
        id="TestEnoughRequests/one resource cpu fits",
    ),
    pytest.param(
        new_resource_pod(Res(5, 1)),
        [new_resource_pod(Res(5, 19))],
        FitArgs(),
        SUCCESS,
        [],
        id="TestEnoughRequests/equal edge case",
    ),
    pytest.param(
        new_resource_init_pod(new_resource_pod(Res(4, 1)), Res(5, 1)),
        [new_resource_pod(Res(5, 19))],
        FitArgs(),
        SUCCESS,
        [],
        id="TestEnoughRequests/equal edge case for init container",
    ),
    # The steps count no extended resource: the pods of the next two cases ask for nothing
    # else, so they fit here as they do upstream.
    pytest.param(
        new_resource_pod(Res(scalar={EXTENDED_RESOURCE_A: 1})),
        [new_resource_pod(Res())],
        FitArgs(),
        SUCCESS,
        [],
        id="TestEnoughRequests/extended resource fits",
    ),
    pytest.param(
        new_resource_init_pod(new_resource_pod(Res()), Res(scalar={EXTENDED_RESOURCE_A: 1})),
        [new_resource_pod(Res())],
        FitArgs(),
        SUCCESS,
        [],
        id="TestEnoughRequests/extended resource fits for init container",
    ),
    pytest.param(
        new_resource_pod(Res(1, 1, scalar={EXTENDED_RESOURCE_A: 10})),
        [new_resource_pod(Res(0, 0, scalar={EXTENDED_RESOURCE_A: 0}))],
        FitArgs(),
        unschedulable(get_err_reason(EXTENDED_RESOURCE_A)),
        [_insuff(EXTENDED_RESOURCE_A, 10, 0, 5)],
        marks=EXTENDED,
        id="TestEnoughRequests/extended resource capacity enforced",
    ),
    pytest.param(
        new_resource_init_pod(new_resource_pod(Res()), Res(1, 1, scalar={EXTENDED_RESOURCE_A: 10})),
        [new_resource_pod(Res(0, 0, scalar={EXTENDED_RESOURCE_A: 0}))],
        FitArgs(),
        unschedulable(get_err_reason(EXTENDED_RESOURCE_A)),
        [_insuff(EXTENDED_RESOURCE_A, 10, 0, 5)],
        marks=EXTENDED,
        id="TestEnoughRequests/extended resource capacity enforced for init container",
    ),
    pytest.param(
        new_resource_pod(Res(1, 1, scalar={EXTENDED_RESOURCE_A: 1})),
        [new_resource_pod(Res(0, 0, scalar={EXTENDED_RESOURCE_A: 5}))],
        FitArgs(),
        unschedulable(get_err_reason(EXTENDED_RESOURCE_A)),
        [_insuff(EXTENDED_RESOURCE_A, 1, 5, 5)],
        marks=EXTENDED,
        id="TestEnoughRequests/extended resource allocatable enforced",
    ),
    pytest.param(
        new_resource_init_pod(new_resource_pod(Res()), Res(1, 1, scalar={EXTENDED_RESOURCE_A: 1})),
        [new_resource_pod(Res(0, 0, scalar={EXTENDED_RESOURCE_A: 5}))],
        FitArgs(),
        unschedulable(get_err_reason(EXTENDED_RESOURCE_A)),
        [_insuff(EXTENDED_RESOURCE_A, 1, 5, 5)],
        marks=EXTENDED,
        id="TestEnoughRequests/extended resource allocatable enforced for init container",
    ),
    pytest.param(
        new_resource_pod(
            Res(1, 1, scalar={EXTENDED_RESOURCE_A: 3}), Res(1, 1, scalar={EXTENDED_RESOURCE_A: 3})
        ),
        [new_resource_pod(Res(0, 0, scalar={EXTENDED_RESOURCE_A: 2}))],
        FitArgs(),
        unschedulable(get_err_reason(EXTENDED_RESOURCE_A)),
        [_insuff(EXTENDED_RESOURCE_A, 6, 2, 5)],
        marks=EXTENDED,
        id="TestEnoughRequests/extended resource allocatable enforced for multiple containers",
    ),
    pytest.param(
        new_resource_init_pod(
            new_resource_pod(Res()),
            Res(1, 1, scalar={EXTENDED_RESOURCE_A: 3}),
            Res(1, 1, scalar={EXTENDED_RESOURCE_A: 3}),
        ),
        [new_resource_pod(Res(0, 0, scalar={EXTENDED_RESOURCE_A: 2}))],
        FitArgs(),
        SUCCESS,
        [],
        id="TestEnoughRequests/extended resource allocatable admits multiple init containers",
    ),
    pytest.param(
        new_resource_init_pod(
            new_resource_pod(Res()),
            Res(1, 1, scalar={EXTENDED_RESOURCE_A: 6}),
            Res(1, 1, scalar={EXTENDED_RESOURCE_A: 3}),
        ),
        [new_resource_pod(Res(0, 0, scalar={EXTENDED_RESOURCE_A: 2}))],
        FitArgs(),
        unschedulable(get_err_reason(EXTENDED_RESOURCE_A)),
        [_insuff(EXTENDED_RESOURCE_A, 6, 2, 5)],
        marks=EXTENDED,
        id="TestEnoughRequests/extended resource allocatable enforced for multiple init containers",
    ),
    pytest.param(
        new_resource_pod(Res(1, 1, scalar={EXTENDED_RESOURCE_B: 1})),
        [new_resource_pod(Res(0, 0))],
        FitArgs(),
        unschedulable(get_err_reason(EXTENDED_RESOURCE_B)),
        [_insuff(EXTENDED_RESOURCE_B, 1, 0, 0)],
        marks=EXTENDED,
        id="TestEnoughRequests/extended resource allocatable enforced for unknown resource",
    ),
    pytest.param(
        new_resource_init_pod(new_resource_pod(Res()), Res(1, 1, scalar={EXTENDED_RESOURCE_B: 1})),
        [new_resource_pod(Res(0, 0))],
        FitArgs(),
        unschedulable(get_err_reason(EXTENDED_RESOURCE_B)),
        [_insuff(EXTENDED_RESOURCE_B, 1, 0, 0)],
        marks=EXTENDED,
        id="TestEnoughRequests/extended resource allocatable enforced for unknown resource "
        "for init container",
    ),
    pytest.param(
        new_resource_pod(Res(1, 1, scalar={KUBERNETES_IO_RESOURCE_A: 10})),
        [new_resource_pod(Res(0, 0))],
        FitArgs(),
        unschedulable(get_err_reason(KUBERNETES_IO_RESOURCE_A)),
        [_insuff(KUBERNETES_IO_RESOURCE_A, 10, 0, 0)],
        marks=EXTENDED,
        id="TestEnoughRequests/kubernetes.io resource capacity enforced",
    ),
    pytest.param(
        new_resource_init_pod(
            new_resource_pod(Res()), Res(1, 1, scalar={KUBERNETES_IO_RESOURCE_B: 10})
        ),
        [new_resource_pod(Res(0, 0))],
        FitArgs(),
        unschedulable(get_err_reason(KUBERNETES_IO_RESOURCE_B)),
        [_insuff(KUBERNETES_IO_RESOURCE_B, 10, 0, 0)],
        marks=EXTENDED,
        id="TestEnoughRequests/kubernetes.io resource capacity enforced for init container",
    ),
    pytest.param(
        new_resource_pod(Res(1, 1, scalar={HUGE_PAGE_RESOURCE_A: 10})),
        [new_resource_pod(Res(0, 0, scalar={HUGE_PAGE_RESOURCE_A: 0}))],
        FitArgs(),
        unschedulable(get_err_reason(HUGE_PAGE_RESOURCE_A)),
        [_insuff(HUGE_PAGE_RESOURCE_A, 10, 0, 5)],
        marks=EXTENDED,
        id="TestEnoughRequests/hugepages resource capacity enforced",
    ),
    pytest.param(
        new_resource_init_pod(
            new_resource_pod(Res()), Res(1, 1, scalar={HUGE_PAGE_RESOURCE_A: 10})
        ),
        [new_resource_pod(Res(0, 0, scalar={HUGE_PAGE_RESOURCE_A: 0}))],
        FitArgs(),
        unschedulable(get_err_reason(HUGE_PAGE_RESOURCE_A)),
        [_insuff(HUGE_PAGE_RESOURCE_A, 10, 0, 5)],
        marks=EXTENDED,
        id="TestEnoughRequests/hugepages resource capacity enforced for init container",
    ),
    pytest.param(
        new_resource_pod(
            Res(1, 1, scalar={HUGE_PAGE_RESOURCE_A: 3}), Res(1, 1, scalar={HUGE_PAGE_RESOURCE_A: 3})
        ),
        [new_resource_pod(Res(0, 0, scalar={HUGE_PAGE_RESOURCE_A: 2}))],
        FitArgs(),
        unschedulable(get_err_reason(HUGE_PAGE_RESOURCE_A)),
        [_insuff(HUGE_PAGE_RESOURCE_A, 6, 2, 5)],
        marks=EXTENDED,
        id="TestEnoughRequests/hugepages resource allocatable enforced for multiple containers",
    ),
    # Fits here only because the steps count no extended resource at all, ignored or not.
    pytest.param(
        new_resource_pod(Res(1, 1, scalar={EXTENDED_RESOURCE_B: 1})),
        [new_resource_pod(Res(0, 0))],
        FitArgs(ignored_resources=("example.com/bbb",)),
        SUCCESS,
        [],
        id="TestEnoughRequests/skip checking ignored extended resource",
    ),
    pytest.param(
        new_resource_overhead_pod(new_resource_pod(Res(1, 1)), {"cpu": "3m", "memory": "13"}),
        [new_resource_pod(Res(5, 5))],
        FitArgs(),
        SUCCESS,
        [],
        id="TestEnoughRequests/resources + pod overhead fits",
    ),
    pytest.param(
        new_resource_overhead_pod(new_resource_pod(Res(1, 1)), {"cpu": "1m", "memory": "15"}),
        [new_resource_pod(Res(5, 5))],
        FitArgs(),
        unschedulable(get_err_reason("memory")),
        [_insuff("memory", 16, 5, 20)],
        id="TestEnoughRequests/requests + overhead does not fit for memory",
    ),
    pytest.param(
        new_resource_pod(
            Res(1, 1, scalar={EXTENDED_RESOURCE_B: 1, KUBERNETES_IO_RESOURCE_A: 1}),
        ),
        [new_resource_pod(Res(0, 0))],
        FitArgs(ignored_resource_groups=("example.com",)),
        unschedulable(f"Insufficient {KUBERNETES_IO_RESOURCE_A}"),
        [_insuff(KUBERNETES_IO_RESOURCE_A, 1, 0, 0)],
        marks=EXTENDED,
        id="TestEnoughRequests/skip checking ignored extended resource via resource groups",
    ),
]


@step_param
@pytest.mark.parametrize(
    ("pod", "existing", "args", "want_status", "want_insufficient"), ENOUGH_REQUESTS
)
def test_enough_requests(
    step: int,
    pod: client.V1Pod,
    existing: list[client.V1Pod],
    args: FitArgs,
    want_status: tuple[str, list[str]],
    want_insufficient: list[Insufficient],
) -> None:
    nr = step_module(step, "plugins.noderesources")
    resources = make_resources(10, 20, 32, 5, 20, 5)
    info = node_info_of(step, node_with(resources, resources), *existing)
    fit = new_fit(step, args)
    assert run_pre_filter_and_filter(step, fit, pod, info) == want_status
    got = nr.fits_request(nr.compute_pod_resource_request(pod).resource, info)
    assert [
        Insufficient(r.resource_name, r.reason, r.requested, r.used, r.capacity) for r in got
    ] == want_insufficient


# --- TestPreFilterDisabled ---------------------------------------------------------------------


@step_param
def test_pre_filter_disabled(step: int) -> None:
    """TestPreFilterDisabled: Filter without PreFilter in the cycle is an error."""
    info = node_info_of(step, client.V1Node())
    fit = new_fit(step, FitArgs(DEFAULT_SCORING_STRATEGY))
    state = step_module(step, "cycle_state").CycleState()
    got = fit.filter(state, empty_pod(), info)
    assert status_of(got) == (
        "ERROR",
        ['error reading "PreFilterNodeResourcesFit" from cycleState: not found'],
    )


# --- TestNotEnoughRequests ---------------------------------------------------------------------

NOT_ENOUGH_REQUESTS = [
    pytest.param(
        empty_pod(),
        new_resource_pod(Res(10, 20)),
        unschedulable("Too many pods"),
        id="TestNotEnoughRequests/even without specified resources predicate fails when "
        "there's no space for additional pod",
    ),
    pytest.param(
        new_resource_pod(Res(1, 1)),
        new_resource_pod(Res(5, 5)),
        unschedulable("Too many pods"),
        id="TestNotEnoughRequests/even if both resources fit predicate fails when there's no "
        "space for additional pod",
    ),
    pytest.param(
        new_resource_pod(Res(5, 1)),
        new_resource_pod(Res(5, 19)),
        unschedulable("Too many pods"),
        id="TestNotEnoughRequests/even for equal edge case predicate fails when there's no "
        "space for additional pod",
    ),
    pytest.param(
        new_resource_init_pod(new_resource_pod(Res(5, 1)), Res(5, 1)),
        new_resource_pod(Res(5, 19)),
        unschedulable("Too many pods"),
        id="TestNotEnoughRequests/even for equal edge case predicate fails when there's no "
        "space for additional pod due to init container",
    ),
]


@step_param
@pytest.mark.parametrize(("pod", "existing", "want_status"), NOT_ENOUGH_REQUESTS)
def test_not_enough_requests(
    step: int, pod: client.V1Pod, existing: client.V1Pod, want_status: tuple[str, list[str]]
) -> None:
    # A node with room for one pod, which it already runs.
    info = node_info_of(step, node_with({}, make_resources(10, 20, 1, 0, 0, 0)), existing)
    fit = new_fit(step, FitArgs(DEFAULT_SCORING_STRATEGY))
    assert run_pre_filter_and_filter(step, fit, pod, info) == want_status


# --- TestStorageRequests -----------------------------------------------------------------------

STORAGE_REQUESTS = [
    pytest.param(
        new_resource_pod(Res(1, 1)),
        new_resource_pod(Res(10, 10)),
        unschedulable(get_err_reason("cpu")),
        id="TestStorageRequests/due to container scratch disk",
    ),
    pytest.param(
        new_resource_pod(Res(1, 1)),
        new_resource_pod(Res(2, 10)),
        SUCCESS,
        id="TestStorageRequests/pod fit",
    ),
    pytest.param(
        new_resource_pod(Res(ephemeral_storage=25)),
        new_resource_pod(Res(2, 2)),
        unschedulable(get_err_reason("ephemeral-storage")),
        id="TestStorageRequests/storage ephemeral local storage request exceeds allocatable",
    ),
    # Upstream turns the LocalStorageCapacityIsolation gate off for this case.
    pytest.param(
        new_resource_init_pod(
            new_resource_pod(Res(ephemeral_storage=25)), Res(ephemeral_storage=25)
        ),
        new_resource_pod(Res(2, 2)),
        SUCCESS,
        marks=FEATURE_GATES,
        id="TestStorageRequests/ephemeral local storage request is ignored due to disabled "
        "feature gate",
    ),
    pytest.param(
        new_resource_pod(Res(ephemeral_storage=10)),
        new_resource_pod(Res(2, 2)),
        SUCCESS,
        id="TestStorageRequests/pod fits",
    ),
]


@step_param
@pytest.mark.parametrize(("pod", "existing", "want_status"), STORAGE_REQUESTS)
def test_storage_requests(
    step: int, pod: client.V1Pod, existing: client.V1Pod, want_status: tuple[str, list[str]]
) -> None:
    resources = make_resources(10, 20, 32, 5, 20, 5)
    info = node_info_of(step, node_with(resources, resources), existing)
    fit = new_fit(step, FitArgs(DEFAULT_SCORING_STRATEGY))
    assert run_pre_filter_and_filter(step, fit, pod, info) == want_status


# --- the scoring tables: upstream's st.MakePod / st.MakeNode and cache.NewSnapshot -------------


def st_pod(*requests: dict[str, str], node: str | None = None) -> client.V1Pod:
    """Upstream: st.MakePod().Node(node).Req(r1).Req(r2)...Obj(): a container per Req."""
    containers = [
        client.V1Container(name=f"c{i}", resources=client.V1ResourceRequirements(requests=r))
        for i, r in enumerate(requests)
    ]
    return pod_with(containers, node_name=node)


def st_node(name: str, capacity: dict[str, str] | None = None) -> client.V1Node:
    """Upstream: st.MakeNode().Name(name).Capacity(capacity).Obj(): Capacity sets the
    allocatable too."""
    return client.V1Node(
        metadata=client.V1ObjectMeta(name=name),
        status=client.V1NodeStatus(capacity=capacity, allocatable=capacity),
    )


def new_snapshot(step: int, pods: list[client.V1Pod], nodes: list[client.V1Node]) -> Any:
    """Upstream: cache.NewSnapshot(pods, nodes)."""
    snapshot = step_module(step, "snapshot").Snapshot()
    for node in nodes:
        info = node_info_of(step, node)
        snapshot.node_info_map[node.metadata.name] = info
        snapshot.node_info_list.append(info)
    for pod in pods:
        snapshot.node_info_map[pod.spec.node_name].add_pod(pod)
    return snapshot


def scores(
    step: int,
    args: FitArgs,
    pod: client.V1Pod,
    nodes: list[client.V1Node],
    existing: list[client.V1Pod],
) -> list[tuple[str, int]]:
    """Score the pod on every node, as upstream's loops do: a fresh CycleState, a framework
    handle on the snapshot, and every Score a success."""
    snapshot = new_snapshot(step, existing, nodes)
    handle = SimpleNamespace(snapshot_shared_lister=lambda: snapshot)
    fit = new_fit(step, args, handle)
    state = step_module(step, "cycle_state").CycleState()
    got = []
    for node in nodes:
        score, status = fit.score(state, pod, node.metadata.name)
        assert status.is_success(), status
        got.append((node.metadata.name, score))
    return got


# --- TestFitScore ------------------------------------------------------------------------------


def _fit_score_case(
    name: str,
    pod_request: dict[str, str],
    expected: list[tuple[str, int]],
    strategy: ScoringStrategy,
    marks: Any = (),
) -> Any:
    # Every case of the table has the same nodes and existing pods.
    return pytest.param(
        st_pod(pod_request),
        [
            st_node("node1", {"cpu": "4000", "memory": "10000"}),
            st_node("node2", {"cpu": "6000", "memory": "10000"}),
        ],
        [
            st_pod({"cpu": "2000", "memory": "4000"}, node="node1"),
            st_pod({"cpu": "1000", "memory": "2000"}, node="node2"),
        ],
        expected,
        FitArgs(strategy),
        marks=marks,
        id=f"TestFitScore/{name}",
    )


FIT_SCORE = [
    _fit_score_case(
        "test case for ScoringStrategy RequestedToCapacityRatio case1",
        {"cpu": "3000", "memory": "5000"},
        [("node1", 10), ("node2", 32)],
        ScoringStrategy("RequestedToCapacityRatio", DEFAULT_RESOURCES, ((0, 10), (100, 0))),
        marks=RTC_RATIO,
    ),
    _fit_score_case(
        "test case for ScoringStrategy RequestedToCapacityRatio case2",
        {"cpu": "3000", "memory": "5000"},
        [("node1", 95), ("node2", 68)],
        ScoringStrategy("RequestedToCapacityRatio", DEFAULT_RESOURCES, ((0, 0), (100, 10))),
        marks=RTC_RATIO,
    ),
    _fit_score_case(
        "test case for ScoringStrategy MostAllocated",
        {"cpu": "1000", "memory": "2000"},
        [("node1", 67), ("node2", 36)],
        ScoringStrategy("MostAllocated", DEFAULT_RESOURCES),
        marks=MOST_ALLOCATED,
    ),
    _fit_score_case(
        "test case for ScoringStrategy LeastAllocated",
        {"cpu": "1000", "memory": "2000"},
        [("node1", 32), ("node2", 63)],
        ScoringStrategy("LeastAllocated", DEFAULT_RESOURCES),
    ),
]


@pytest.mark.parametrize(
    ("step", "pod", "nodes", "existing", "expected", "args"), on_each_step(FIT_SCORE)
)
def test_fit_score(
    step: int,
    pod: client.V1Pod,
    nodes: list[client.V1Node],
    existing: list[client.V1Pod],
    expected: list[tuple[str, int]],
    args: FitArgs,
) -> None:
    assert scores(step, args, pod, nodes, existing) == expected


# --- TestLeastAllocatedScoringStrategy ---------------------------------------------------------

EXTENDED_RES = "abc.com/xyz"
EXTENDED_RESOURCE_LEAST_ALLOCATED_SET = (*DEFAULT_RESOURCES, ResourceSpec(EXTENDED_RES, 1))
# The pod most cases score: two containers, 3000 cpu and 5000 memory in all.
TWO_CONTAINERS = ({"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"})


def _least_case(
    name: str,
    pod: client.V1Pod,
    nodes: list[client.V1Node],
    existing: list[client.V1Pod],
    expected: list[tuple[str, int]],
    resources: tuple[ResourceSpec, ...] | None,
    want_err: str | None = None,
    marks: Any = (),
) -> Any:
    return pytest.param(
        pod,
        nodes,
        existing,
        expected,
        resources,
        want_err,
        marks=marks,
        id=f"TestLeastAllocatedScoringStrategy/{name}",
    )


def _nodes(*specs: tuple[str, str, str]) -> list[client.V1Node]:
    return [st_node(n, {"cpu": cpu, "memory": mem}) for n, cpu, mem in specs]


LEAST_ALLOCATED = [
    # cpu and memory 100 on both nodes.
    _least_case(
        "nothing scheduled, nothing requested",
        st_pod(),
        _nodes(("node1", "4000", "10000"), ("node2", "4000", "10000")),
        [],
        [("node1", MAX_NODE_SCORE), ("node2", MAX_NODE_SCORE)],
        DEFAULT_RESOURCES,
    ),
    # node1: cpu (4000-3000)*100/4000 = 25, memory (10000-5000)*100/10000 = 50, (25+50)/2 = 37;
    # node2: cpu 50, memory 50, 50.
    _least_case(
        "nothing scheduled, resources requested, differently sized machines",
        st_pod(*TWO_CONTAINERS),
        _nodes(("node1", "4000", "10000"), ("node2", "6000", "10000")),
        [],
        [("node1", 37), ("node2", 50)],
        DEFAULT_RESOURCES,
    ),
    _least_case(
        "Resources not set, nothing scheduled, resources requested, differently sized machines",
        st_pod(*TWO_CONTAINERS),
        _nodes(("node1", "4000", "10000"), ("node2", "6000", "10000")),
        [],
        [("node1", MIN_NODE_SCORE), ("node2", MIN_NODE_SCORE)],
        None,
    ),
    _least_case(
        "no resources requested, pods scheduled",
        st_pod(),
        _nodes(("node1", "4000", "10000"), ("node2", "4000", "10000")),
        [st_pod(node="node1"), st_pod(node="node1"), st_pod(node="node2"), st_pod(node="node2")],
        [("node1", MAX_NODE_SCORE), ("node2", MAX_NODE_SCORE)],
        DEFAULT_RESOURCES,
    ),
    # node1: cpu (10000-6000)*100/10000 = 40, memory 100, 70; node2: cpu 40, memory 75, 57.
    _least_case(
        "no resources requested, pods scheduled with resources",
        st_pod(),
        _nodes(("node1", "10000", "20000"), ("node2", "10000", "20000")),
        [
            st_pod({"cpu": "3000", "memory": "0"}, node="node1"),
            st_pod({"cpu": "3000", "memory": "0"}, node="node1"),
            st_pod({"cpu": "3000", "memory": "0"}, node="node2"),
            st_pod({"cpu": "3000", "memory": "5000"}, node="node2"),
        ],
        [("node1", 70), ("node2", 57)],
        DEFAULT_RESOURCES,
    ),
    # node1: cpu 40, memory 75, 57; node2: cpu 40, memory 50, 45.
    _least_case(
        "resources requested, pods scheduled with resources",
        st_pod(*TWO_CONTAINERS),
        _nodes(("node1", "10000", "20000"), ("node2", "10000", "20000")),
        [
            st_pod({"cpu": "3000", "memory": "0"}, node="node1"),
            st_pod({"cpu": "3000", "memory": "5000"}, node="node2"),
        ],
        [("node1", 57), ("node2", 45)],
        DEFAULT_RESOURCES,
    ),
    # node1: cpu 40, memory 75, 57; node2: cpu 40, memory (50000-10000)*100/50000 = 80, 60.
    _least_case(
        "resources requested, pods scheduled with resources, differently sized machines",
        st_pod(*TWO_CONTAINERS),
        _nodes(("node1", "10000", "20000"), ("node2", "10000", "50000")),
        [
            st_pod({"cpu": "3000", "memory": "0"}, node="node1"),
            st_pod({"cpu": "3000", "memory": "5000"}, node="node2"),
        ],
        [("node1", 57), ("node2", 60)],
        DEFAULT_RESOURCES,
    ),
    # cpu 6000 of 4000: 0 on both; memory 100 on node1, 50 on node2.
    _least_case(
        "requested resources exceed node capacity",
        st_pod({"cpu": "3000", "memory": "0"}),
        _nodes(("node1", "4000", "10000"), ("node2", "4000", "10000")),
        [
            st_pod({"cpu": "3000", "memory": "0"}, node="node1"),
            st_pod({"cpu": "3000", "memory": "5000"}, node="node2"),
        ],
        [("node1", 50), ("node2", 25)],
        DEFAULT_RESOURCES,
    ),
    _least_case(
        "zero node resources, pods scheduled with resources",
        st_pod(),
        [st_node("node1"), st_node("node2")],
        [
            st_pod({"cpu": "3000", "memory": "0"}, node="node1"),
            st_pod({"cpu": "3000", "memory": "5000"}, node="node2"),
        ],
        [("node1", MIN_NODE_SCORE), ("node2", MIN_NODE_SCORE)],
        DEFAULT_RESOURCES,
    ),
    # node1: (25*1 + 50*2) / 3 = 41; node2: (50*1 + 50*2) / 3 = 50.
    _least_case(
        "nothing scheduled, resources requested with different weight on CPU and memory, "
        "differently sized machines",
        st_pod(*TWO_CONTAINERS, node="node1"),
        _nodes(("node1", "4000", "10000"), ("node2", "6000", "10000")),
        [],
        [("node1", 41), ("node2", 50)],
        (ResourceSpec("memory", 2), ResourceSpec("cpu", 1)),
    ),
    _least_case(
        "resource with negative weight",
        st_pod(*TWO_CONTAINERS, node="node1"),
        _nodes(("node1", "4000", "10000")),
        [],
        [],
        (ResourceSpec("memory", -1), ResourceSpec("cpu", 1)),
        want_err="resources[0].weight",
        marks=ARGS_VALIDATION,
    ),
    _least_case(
        "resource with zero weight",
        st_pod(*TWO_CONTAINERS, node="node1"),
        _nodes(("node1", "4000", "10000")),
        [],
        [("node1", 41), ("node2", 50)],
        (ResourceSpec("memory", 1), ResourceSpec("cpu", 0)),
        want_err="resources[1].weight",
        marks=ARGS_VALIDATION,
    ),
    _least_case(
        "resource weight larger than MaxNodeScore",
        st_pod(*TWO_CONTAINERS, node="node1"),
        _nodes(("node1", "4000", "10000")),
        [],
        [],
        (ResourceSpec("memory", 1), ResourceSpec("cpu", 101)),
        want_err="resources[1].weight",
        marks=ARGS_VALIDATION,
    ),
    # The pod asks for no abc.com/xyz, so its weight is left out: (50 + 50) / 2 on both nodes.
    # The steps leave it out too, but because they count no extended resource at all.
    _least_case(
        "bypass extended resource if the pod does not request",
        st_pod(*TWO_CONTAINERS, node="node1"),
        [
            st_node("node1", {"cpu": "6000", "memory": "10000"}),
            st_node("node2", {"cpu": "6000", "memory": "10000", EXTENDED_RES: "4"}),
        ],
        [],
        [("node1", 50), ("node2", 50)],
        EXTENDED_RESOURCE_LEAST_ALLOCATED_SET,
    ),
    # cpu and memory 50 on both; abc.com/xyz 2 of 4 on node1 (50), 2 of 10 on node2 (80):
    # node1 (50+50+50)/3 = 50, node2 (50+50+80)/3 = 60.
    _least_case(
        "honor extended resource if the pod requests",
        st_pod({"cpu": "3000", "memory": "5000", EXTENDED_RES: "2"}, node="node1"),
        [
            st_node("node1", {"cpu": "6000", "memory": "10000", EXTENDED_RES: "4"}),
            st_node("node2", {"cpu": "6000", "memory": "10000", EXTENDED_RES: "10"}),
        ],
        [],
        [("node1", 50), ("node2", 60)],
        EXTENDED_RESOURCE_LEAST_ALLOCATED_SET,
        marks=EXTENDED,
    ),
]


@pytest.mark.parametrize(
    ("step", "pod", "nodes", "existing", "expected", "resources", "want_err"),
    on_each_step(LEAST_ALLOCATED),
)
def test_least_allocated_scoring_strategy(
    step: int,
    pod: client.V1Pod,
    nodes: list[client.V1Node],
    existing: list[client.V1Pod],
    expected: list[tuple[str, int]],
    resources: tuple[ResourceSpec, ...] | None,
    want_err: str | None,
) -> None:
    args = FitArgs(ScoringStrategy("LeastAllocated", resources))
    if want_err is not None:
        # Upstream: NewFit validates the args and returns the field's error.
        nr = step_module(step, "plugins.noderesources")
        with pytest.raises(Exception, match=re.escape(want_err)):
            nr.new_fit(step_args(step, args) if step >= ARGS_STEP else args, None)
        return
    assert scores(step, args, pod, nodes, existing) == expected
