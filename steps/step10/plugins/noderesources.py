"""NodeResourcesFit: a pod goes only where its requests fit, and preferably where most is free.

Upstream: pkg/scheduler/framework/plugins/noderesources/fit.go (Fit, computePodResourceRequest,
fitsRequest), least_allocated.go (leastResourceScorer, leastRequestedScore) and
resource_allocation.go (resourceAllocationScorer, calculateResourceAllocatableRequest,
calculatePodResourceRequest) at v1.23, with the default args (scoringStrategy LeastAllocated,
cpu and memory weighing 1 each).

- PreFilter computes the pod's request once per cycle and writes it into the CycleState.
- Filter compares it with what the node has left: allocatable minus the requests of the pods
  the NodeInfo holds, bound or assumed.
- Score gives the node ``(allocatable - requested) * 100 / allocatable`` per resource, where
  requested counts the node's pods and this one with the non-zero defaults, and averages them
  by weight.

Not implemented: extended resources (and the ignoredResources args), the MostAllocated and
RequestedToCapacityRatio strategies, and any plugin args: the weights are fixed, so nothing
validates them. Simplified: the LocalStorageCapacityIsolation feature gate is always on (as
it is by default in v1.23): ephemeral-storage requests are always checked.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from kubernetes.client import V1Pod
from kubernetes.utils import parse_quantity

from ..cycle_state import CycleState, NotFoundError
from ..framework import (
    GVK,
    MAX_NODE_SCORE,
    ActionType,
    ClusterEvent,
    Code,
    Handle,
    NodeInfo,
    Resource,
    Status,
    as_status,
    get_non_zero_requests,
)

NAME = "NodeResourcesFit"

# The CycleState key of the pod's request (upstream: preFilterStateKey).
PRE_FILTER_STATE_KEY = "PreFilter" + NAME

# The resources Score weighs, and their weights (upstream: defaultResourceSpec).
DEFAULT_RESOURCE_SPEC: dict[str, int] = {
    "cpu": 1,
    "memory": 1,
}


@dataclass(frozen=True)
class PreFilterState:
    """The pod's request, as PreFilter computed it (upstream: preFilterState)."""

    resource: Resource

    def clone(self) -> PreFilterState:
        return self  # never changed once written: sharing it is a copy


@dataclass(frozen=True)
class InsufficientResource:
    """A resource the node lacks for the pod (upstream: InsufficientResource)."""

    resource_name: str
    reason: str
    requested: int
    used: int
    capacity: int


def compute_pod_resource_request(pod: V1Pod) -> PreFilterState:
    """The pod's request in each resource (upstream: computePodResourceRequest).

    Containers run side by side, so their requests add up; init containers run one after the
    other before them, so the pod needs the largest of them if that is more; the overhead of
    the pod's runtime class comes on top.
    """
    result = Resource()
    for c in pod.spec.containers or []:
        result.add(Resource.from_resource_list(c.resources and c.resources.requests))
    for c in pod.spec.init_containers or []:
        result.set_max(Resource.from_resource_list(c.resources and c.resources.requests))
    if pod.spec.overhead:
        result.add(Resource.from_resource_list(pod.spec.overhead))
    return PreFilterState(result)


def fits_request(pod_request: Resource, node_info: NodeInfo) -> list[InsufficientResource]:
    """Every resource the node lacks for the pod, in upstream's order (upstream: fitsRequest)."""
    insufficient: list[InsufficientResource] = []
    allowed_pod_number = node_info.allocatable.allowed_pod_number
    if len(node_info.pods) + 1 > allowed_pod_number:
        insufficient.append(
            InsufficientResource(
                "pods", "Too many pods", 1, len(node_info.pods), allowed_pod_number
            )
        )
    if (
        pod_request.milli_cpu == 0
        and pod_request.memory == 0
        and pod_request.ephemeral_storage == 0
    ):
        return insufficient
    allocatable = node_info.allocatable
    requested = node_info.requested
    if allocatable.milli_cpu < pod_request.milli_cpu + requested.milli_cpu:
        insufficient.append(
            InsufficientResource(
                "cpu",
                "Insufficient cpu",
                pod_request.milli_cpu,
                requested.milli_cpu,
                allocatable.milli_cpu,
            )
        )
    if allocatable.memory < pod_request.memory + requested.memory:
        insufficient.append(
            InsufficientResource(
                "memory",
                "Insufficient memory",
                pod_request.memory,
                requested.memory,
                allocatable.memory,
            )
        )
    if allocatable.ephemeral_storage < pod_request.ephemeral_storage + requested.ephemeral_storage:
        insufficient.append(
            InsufficientResource(
                "ephemeral-storage",
                "Insufficient ephemeral-storage",
                pod_request.ephemeral_storage,
                requested.ephemeral_storage,
                allocatable.ephemeral_storage,
            )
        )
    return insufficient


def calculate_pod_resource_request(pod: V1Pod, resource: str) -> int:
    """The pod's request in the resource (cpu in millicores), with the non-zero defaults:
    its containers' sum, or its largest init container's if that is more, plus its overhead
    (upstream: calculatePodResourceRequest).

    The overhead is added as v1.23 adds it, with Quantity.Value(): in whole units, rounded up,
    so a cpu overhead of 250m adds 1 (millicore) here, where Filter counts 250. A pod with a
    cpu overhead scores as in v1.23, not as its request would suggest.
    """
    index = 0 if resource == "cpu" else 1
    pod_request = 0
    for c in pod.spec.containers or []:
        pod_request += get_non_zero_requests(c.resources and c.resources.requests)[index]
    for c in pod.spec.init_containers or []:
        value = get_non_zero_requests(c.resources and c.resources.requests)[index]
        pod_request = max(pod_request, value)
    if pod.spec.overhead and resource in pod.spec.overhead:
        pod_request += math.ceil(parse_quantity(pod.spec.overhead[resource]))
    return pod_request


def calculate_resource_allocatable_request(
    node_info: NodeInfo, pod: V1Pod, resource: str
) -> tuple[int, int]:
    """What the node offers of the resource, and what it would hold with the pod on it, both
    counted with the non-zero defaults (upstream: calculateResourceAllocatableRequest)."""
    pod_request = calculate_pod_resource_request(pod, resource)
    if resource == "cpu":
        return node_info.allocatable.milli_cpu, node_info.non_zero_requested.milli_cpu + pod_request
    return node_info.allocatable.memory, node_info.non_zero_requested.memory + pod_request


def least_requested_score(requested: int, capacity: int) -> int:
    """The share of the resource left free, 0..100 (upstream: leastRequestedScore)."""
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


def least_resource_scorer(
    resource_to_weight: dict[str, int],
    requested: dict[str, int],
    allocatable: dict[str, int],
) -> int:
    """The weighted integer mean of the resources' scores (upstream: leastResourceScorer)."""
    node_score = weight_sum = 0
    for resource in requested:
        weight = resource_to_weight[resource]
        node_score += least_requested_score(requested[resource], allocatable[resource]) * weight
        weight_sum += weight
    if weight_sum == 0:
        return 0
    return node_score // weight_sum


class Fit:
    """Upstream: Fit, with its resourceAllocationScorer (``resource_to_weight``)."""

    def __init__(self, handle: Handle) -> None:
        self.handle = handle
        self.resource_to_weight = dict(DEFAULT_RESOURCE_SPEC)

    def name(self) -> str:
        return NAME

    def events_to_register(self) -> list[ClusterEvent]:
        """A pod leaving a node frees its requests; a new node, or a node with more
        allocatable, offers more."""
        return [
            ClusterEvent(GVK.POD, ActionType.DELETE),
            ClusterEvent(GVK.NODE, ActionType.ADD | ActionType.UPDATE),
        ]

    # --- PreFilter ----------------------------------------------------------------------------

    def pre_filter(
        self,
        state: CycleState,
        pod: V1Pod,
    ) -> Status:
        state.write(PRE_FILTER_STATE_KEY, compute_pod_resource_request(pod))
        return Status()

    def pre_filter_extensions(self) -> None:
        """None: the pod's request does not depend on the pods already on a node."""
        return None

    # --- Filter -------------------------------------------------------------------------------

    def filter(
        self,
        state: CycleState,
        pod: V1Pod,
        node_info: NodeInfo,
    ) -> Status:
        try:
            data = state.read(PRE_FILTER_STATE_KEY)
        except NotFoundError as e:
            # PreFilter did not run in this cycle.
            return Status(
                Code.ERROR, [f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState: {e}']
            )
        if not isinstance(data, PreFilterState):
            return Status(
                Code.ERROR, [f"{data!r}  convert to NodeResourcesFit.preFilterState error"]
            )
        insufficient = fits_request(data.resource, node_info)
        if insufficient:
            # Every reason is kept: the FitError counts each of them.
            return Status(Code.UNSCHEDULABLE, [r.reason for r in insufficient])
        return Status()

    # --- Score --------------------------------------------------------------------------------

    def score(
        self,
        state: CycleState,
        pod: V1Pod,
        node_name: str,
    ) -> tuple[int, Status]:
        try:
            node_info = self.handle.snapshot_shared_lister().node_infos().get(node_name)
        except Exception as e:
            return 0, as_status(Exception(f'getting node "{node_name}" from Snapshot: {e}'))
        if node_info.node() is None:
            return 0, Status(Code.ERROR, ["node not found"])
        requested: dict[str, int] = {}
        allocatable: dict[str, int] = {}
        for resource in self.resource_to_weight:
            alloc, req = calculate_resource_allocatable_request(node_info, pod, resource)
            # A resource the node does not offer is left out of the mean.
            if alloc != 0:
                allocatable[resource], requested[resource] = alloc, req
        return least_resource_scorer(self.resource_to_weight, requested, allocatable), Status()

    def score_extensions(self) -> None:
        """None: the scores are already 0..100."""
        return None


def new_fit(args: Any, handle: Handle) -> Fit:
    """The plugin factory (upstream: NewFit)."""
    return Fit(handle)
