"""NodeResourcesFit and NodeResourcesBalancedAllocation: a pod goes only where its requests
fit, preferably where most is free, and where the node's resources end up used evenly.

Upstream: pkg/scheduler/framework/plugins/noderesources/fit.go (Fit, computePodResourceRequest,
fitsRequest), least_allocated.go (leastResourceScorer, leastRequestedScore),
balanced_allocation.go (BalancedAllocation, NewBalancedAllocation, balancedResourceScorer) and
resource_allocation.go (resourceAllocationScorer, calculateResourceAllocatableRequest,
calculatePodResourceRequest) at v1.23.10; pkg/scheduler/util/pod_resources.go
(GetRequestForResource); pkg/scheduler/apis/config/validation/validation_pluginargs.go
(ValidateNodeResourcesBalancedAllocationArgs).
Fit runs with the default args (scoringStrategy LeastAllocated, cpu and memory weighing 1 each).

- PreFilter computes the pod's request once per cycle and writes it into the CycleState.
- Filter compares it with what the node has left: allocatable minus the requests of the pods
  the NodeInfo holds, bound or assumed.
- Fit's Score gives the node ``(allocatable - requested) * 100 / allocatable`` per resource,
  where requested counts the node's pods and this one with the non-zero defaults, and averages
  them by weight.
- BalancedAllocation's Score takes each resource's fraction ``requested / allocatable`` (at
  most 1) and gives ``(1 - std) * 100``, std being the fractions' standard deviation (for two
  resources ``|cpu - memory| / 2``): the closer the fractions, the better. In v1.23 it counts
  the requests as they are (upstream: ``useRequested: true``): the node's ``requested``, not
  ``non_zero_requested``, and the pod's requests without the non-zero defaults, so a pod
  without requests adds nothing, where Fit's Score counts it as 100m cpu and 200Mi memory.

Not implemented: extended resources (and Fit's ignoredResources args): a BalancedAllocation
resource that is not cpu, memory or ephemeral-storage is left out of the score, as v1.23
leaves out a resource the node does not offer. Not implemented: the MostAllocated and
RequestedToCapacityRatio strategies, and Fit's args: its weights are fixed, so nothing
validates them. Simplified: the LocalStorageCapacityIsolation feature gate is always on (as
it is by default in v1.23): ephemeral-storage requests are always checked and counted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from kubernetes.client import V1Pod
from kubernetes.utils import parse_quantity

from minisched.apimachinery import (
    ERROR_TYPE_DUPLICATE,
    ERROR_TYPE_INVALID,
    Aggregate,
    FieldError,
    child_path,
    index_path,
    to_aggregate,
)

from ..cycle_state import CycleState, NotFoundError
from ..framework import (
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
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


def get_request_for_resource(resource: str, requests: dict[str, str] | None, non_zero: bool) -> int:
    """A container's request of the resource, cpu in millicores, rounded up as Quantity's
    MilliValue/Value do (upstream: GetRequestForResource).

    With ``non_zero``, an absent cpu or memory request counts as the default (100m, 200Mi),
    so that pods without requests still spread when nodes are scored; an explicit 0 stays 0.
    """
    requests = requests or {}
    if resource == "cpu":
        if "cpu" not in requests:
            return DEFAULT_MILLI_CPU_REQUEST if non_zero else 0
        return math.ceil(parse_quantity(requests["cpu"]) * 1000)
    if resource == "memory":
        if "memory" not in requests:
            return DEFAULT_MEMORY_REQUEST if non_zero else 0
        return math.ceil(parse_quantity(requests["memory"]))
    # ephemeral-storage (the LocalStorageCapacityIsolation gate is always on) and any other
    # resource: the request as it is, 0 when absent.
    if resource not in requests:
        return 0
    return math.ceil(parse_quantity(requests[resource]))


def calculate_pod_resource_request(pod: V1Pod, resource: str, use_requested: bool = False) -> int:
    """The pod's request in the resource (cpu in millicores): its containers' sum, or its
    largest init container's if that is more, plus its overhead (upstream:
    resourceAllocationScorer.calculatePodResourceRequest).

    ``use_requested`` is the scorer's useRequested: False (NodeResourcesFit) counts an absent
    cpu or memory request with the non-zero defaults; True (NodeResourcesBalancedAllocation)
    counts it as 0.

    The overhead is added as v1.23 adds it, with Quantity.Value(): in whole units, rounded up,
    so a cpu overhead of 250m adds 1 (millicore) here, where Filter counts 250. A pod with a
    cpu overhead scores as in v1.23, not as its request would suggest.
    """
    non_zero = not use_requested
    pod_request = 0
    for c in pod.spec.containers or []:
        requests = c.resources and c.resources.requests
        pod_request += get_request_for_resource(resource, requests, non_zero)
    for c in pod.spec.init_containers or []:
        requests = c.resources and c.resources.requests
        pod_request = max(pod_request, get_request_for_resource(resource, requests, non_zero))
    if pod.spec.overhead and resource in pod.spec.overhead:
        pod_request += math.ceil(parse_quantity(pod.spec.overhead[resource]))
    return pod_request


def calculate_resource_allocatable_request(
    node_info: NodeInfo, pod: V1Pod, resource: str, use_requested: bool = False
) -> tuple[int, int]:
    """What the node offers of the resource, and what it would hold with the pod on it
    (upstream: resourceAllocationScorer.calculateResourceAllocatableRequest).

    cpu and memory are counted with the non-zero defaults (``non_zero_requested``), or as
    requested with ``use_requested``; ephemeral-storage always as requested. Any other resource
    is (0, 0), which the scorers leave out: v1.23 does so for a resource the node does not
    offer, and here the node offers no extended resource (Not implemented: extended resources).
    """
    requested = node_info.requested if use_requested else node_info.non_zero_requested
    pod_request = calculate_pod_resource_request(pod, resource, use_requested)
    allocatable = node_info.allocatable
    if resource == "cpu":
        return allocatable.milli_cpu, requested.milli_cpu + pod_request
    if resource == "memory":
        return allocatable.memory, requested.memory + pod_request
    if resource == "ephemeral-storage":
        return (
            allocatable.ephemeral_storage,
            node_info.requested.ephemeral_storage + pod_request,
        )
    return 0, 0


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


# --- NodeResourcesBalancedAllocation -----------------------------------------------------------

BALANCED_ALLOCATION_NAME = "NodeResourcesBalancedAllocation"


@dataclass(frozen=True)
class ResourceSpec:
    """A resource to score and its weight (upstream: config.ResourceSpec)."""

    name: str
    weight: int = 1


# The resources BalancedAllocation scores by default (upstream: the v1beta3 defaults of
# NodeResourcesBalancedAllocationArgs, and of v1beta2).
DEFAULT_BALANCED_ALLOCATION_RESOURCES: tuple[ResourceSpec, ...] = (
    ResourceSpec("cpu", 1),
    ResourceSpec("memory", 1),
)


@dataclass(frozen=True)
class NodeResourcesBalancedAllocationArgs:
    """Upstream: config.NodeResourcesBalancedAllocationArgs. Every weight must be 1: the
    scorer does not read the weights."""

    resources: tuple[ResourceSpec, ...] = DEFAULT_BALANCED_ALLOCATION_RESOURCES


def validate_node_resources_balanced_allocation_args(
    path: str | None, args: NodeResourcesBalancedAllocationArgs
) -> Aggregate | None:
    """Every field error of the args, as one Aggregate (a ValueError), or None (upstream:
    ValidateNodeResourcesBalancedAllocationArgs): a resource named twice, or a weight other
    than 1. Upstream's factory passes no path, so the fields start at ``resources``."""
    base = child_path(path, "resources")
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, resource in enumerate(args.resources):
        p = index_path(base, i)
        if resource.name in seen:
            errs.append(FieldError(ERROR_TYPE_DUPLICATE, child_path(p, "name"), resource.name, ""))
        else:
            seen.add(resource.name)
        if resource.weight != 1:
            errs.append(
                FieldError(
                    ERROR_TYPE_INVALID, child_path(p, "weight"), resource.weight, "must be 1"
                )
            )
    return to_aggregate(errs)


def balanced_resource_scorer(requested: dict[str, int], allocatable: dict[str, int]) -> int:
    """``(1 - std) * MAX_NODE_SCORE``, std being the standard deviation of the resources'
    fractions ``requested / allocatable``, each at most 1 (upstream: balancedResourceScorer).

    For two resources std is ``|f1 - f2| / 2``; for more, the square root of the mean squared
    distance to the mean; for one or none, 0. The same float arithmetic as upstream's, and the
    result truncated as int64() truncates. Upstream walks a Go map, in no set order; here the
    resources come in the args' order, which changes nothing but the last bits of a sum.
    """
    fractions: list[float] = []
    total_fraction = 0.0
    for name, value in requested.items():
        fraction = min(float(value) / float(allocatable[name]), 1.0)
        total_fraction += fraction
        fractions.append(fraction)
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = total_fraction / len(fractions)
        total = 0.0
        for fraction in fractions:
            total = total + (fraction - mean) * (fraction - mean)
        std = math.sqrt(total / len(fractions))
    return int((1 - std) * float(MAX_NODE_SCORE))


class BalancedAllocation:
    """Upstream: BalancedAllocation, with its resourceAllocationScorer (``resource_to_weight``,
    useRequested true)."""

    def __init__(self, handle: Handle, resource_to_weight: dict[str, int]) -> None:
        self.handle = handle
        self.resource_to_weight = resource_to_weight

    def name(self) -> str:
        return BALANCED_ALLOCATION_NAME

    def score(
        self,
        state: CycleState,
        pod: V1Pod,
        node_name: str,
    ) -> tuple[int, Status]:
        """Favour the node whose resources the pod would leave the most evenly used
        (upstream: BalancedAllocation.Score and resourceAllocationScorer.score)."""
        try:
            node_info = self.handle.snapshot_shared_lister().node_infos().get(node_name)
        except Exception as e:
            return 0, as_status(Exception(f'getting node "{node_name}" from Snapshot: {e}'))
        if node_info.node() is None:
            return 0, Status(Code.ERROR, ["node not found"])
        requested: dict[str, int] = {}
        allocatable: dict[str, int] = {}
        for resource in self.resource_to_weight:
            alloc, req = calculate_resource_allocatable_request(
                node_info, pod, resource, use_requested=True
            )
            # A resource the node does not offer is left out of the deviation.
            if alloc != 0:
                allocatable[resource], requested[resource] = alloc, req
        return balanced_resource_scorer(requested, allocatable), Status()

    def score_extensions(self) -> None:
        """None: the scores are already 0..100."""
        return None


def new_balanced_allocation(
    args: NodeResourcesBalancedAllocationArgs | None, handle: Handle
) -> BalancedAllocation:
    """The plugin factory (upstream: NewBalancedAllocation): raises ValueError for invalid
    args. None stands for the default args (cpu and memory, weight 1)."""
    if args is None:
        args = NodeResourcesBalancedAllocationArgs()
    if not isinstance(args, NodeResourcesBalancedAllocationArgs):
        raise TypeError(
            "want args to be of type NodeResourcesBalancedAllocationArgs, "
            f"got {type(args).__name__}"
        )
    err = validate_node_resources_balanced_allocation_args(None, args)
    if err is not None:
        raise err
    return BalancedAllocation(handle, {r.name: r.weight for r in args.resources})
