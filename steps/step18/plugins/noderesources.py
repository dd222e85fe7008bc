"""NodeResourcesFit and NodeResourcesBalancedAllocation: a pod goes only where its requests
fit, preferably where most is free, and where the node's resources end up used evenly.

Upstream: pkg/scheduler/framework/plugins/noderesources/fit.go (Fit, NewFit,
nodeResourceStrategyTypeMap, computePodResourceRequest, fitsRequest), least_allocated.go
(leastResourceScorer, leastRequestedScore), most_allocated.go (mostResourceScorer,
mostRequestedScore), requested_to_capacity_ratio.go (requestedToCapacityRatioScorer,
buildRequestedToCapacityRatioScorerFunction), balanced_allocation.go (BalancedAllocation,
NewBalancedAllocation, balancedResourceScorer) and resource_allocation.go
(resourceAllocationScorer, calculateResourceAllocatableRequest, calculatePodResourceRequest,
resourcesToWeightMap) at v1.23.10; pkg/scheduler/framework/plugins/helper/shape_score.go
(BuildBrokenLinearFunction); pkg/scheduler/util/pod_resources.go (GetRequestForResource);
pkg/scheduler/apis/config/types_pluginargs.go (the args) and
pkg/scheduler/apis/config/validation/validation_pluginargs.go (ValidateNodeResourcesFitArgs,
ValidateNodeResourcesBalancedAllocationArgs).
Fit's args (a profile's pluginConfig in the configuration file) choose its scoring strategy
and the resources it weighs; without args it runs with the defaults (LeastAllocated, cpu and
memory weighing 1 each).

- PreFilter computes the pod's request once per cycle and writes it into the CycleState.
- Filter compares it with what the node has left: allocatable minus the requests of the pods
  the NodeInfo holds, bound or assumed.
- Fit's Score gives each weighed resource a score from ``requested`` and ``allocatable``,
  where requested counts the node's pods and this one with the non-zero defaults, and averages
  them by weight. The strategy says how: LeastAllocated gives ``(allocatable - requested) *
  100 / allocatable`` (spread the pods), MostAllocated ``requested * 100 / allocatable`` (pack
  them), RequestedToCapacityRatio the value at ``requested * 100 / allocatable`` of a
  piecewise-linear function the args draw (its scores 0..10 stretched to 0..100); the last
  leaves the resources that score 0 out of the mean and rounds it, where the others truncate.
- BalancedAllocation's Score takes each resource's fraction ``requested / allocatable`` (at
  most 1) and gives ``(1 - std) * 100``, std being the fractions' standard deviation (for two
  resources ``|cpu - memory| / 2``): the closer the fractions, the better. In v1.23 it counts
  the requests as they are (upstream: ``useRequested: true``): the node's ``requested``, not
  ``non_zero_requested``, and the pod's requests without the non-zero defaults, so a pod
  without requests adds nothing, where Fit's Score counts it as 100m cpu and 200Mi memory.

Not implemented: extended resources: a resource to score that is not cpu, memory or
ephemeral-storage is left out of the score, as v1.23 leaves out a resource the node does not
offer. Not implemented: Fit's ignoredResources and ignoredResourceGroups are validated and kept,
but they only exempt extended resources from Filter, which counts none here: they change
nothing. Simplified: the LocalStorageCapacityIsolation feature gate is always on (as it is by
default in v1.23): ephemeral-storage requests are always checked and counted.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from kubernetes.client import V1Node, V1Pod

from minisched.apimachinery import (
    ERROR_TYPE_DUPLICATE,
    ERROR_TYPE_INVALID,
    Aggregate,
    FieldError,
    child_path,
    index_path,
    invalid,
    required,
    to_aggregate,
    validate_label_name,
)
from minisched.quantity import parse_quantity

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
from ..nodearrays import NodeArrays

NAME = "NodeResourcesFit"
# Where each scorer's PreScore leaves the pod's requests (upstream: preScoreStateKey).
PRE_SCORE_STATE_KEY = "PreScore" + NAME

# The CycleState key of the pod's request (upstream: preFilterStateKey).
PRE_FILTER_STATE_KEY = "PreFilter" + NAME


# --- NodeResourcesFitArgs (upstream: config.NodeResourcesFitArgs, types_pluginargs.go) --------

# The scoring strategies (upstream: config.ScoringStrategyType).
LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"

# The highest score of a RequestedToCapacityRatio shape point (upstream:
# config.MaxCustomPriorityScore); the scorer stretches it to MAX_NODE_SCORE.
MAX_CUSTOM_PRIORITY_SCORE = 10
# Utilization is a percentage: a full node is at 100 (upstream: maxUtilization).
MAX_UTILIZATION = 100


@dataclass(frozen=True)
class ResourceSpec:
    """A resource to score and its weight (upstream: config.ResourceSpec)."""

    name: str
    weight: int = 1


@dataclass(frozen=True)
class UtilizationShapePoint:
    """A point of the RequestedToCapacityRatio function: at ``utilization`` percent (0..100)
    used, the resource scores ``score`` (0..10) (upstream: config.UtilizationShapePoint)."""

    utilization: int
    score: int


@dataclass(frozen=True)
class RequestedToCapacityRatioParam:
    """The RequestedToCapacityRatio strategy's function, as points in increasing utilization
    (upstream: config.RequestedToCapacityRatioParam)."""

    shape: tuple[UtilizationShapePoint, ...] = ()


@dataclass(frozen=True)
class ScoringStrategy:
    """How Fit scores a node, and which resources it weighs (upstream: config.ScoringStrategy).
    ``requested_to_capacity_ratio`` is read by the RequestedToCapacityRatio type only."""

    type: str = LEAST_ALLOCATED
    resources: tuple[ResourceSpec, ...] = ()
    requested_to_capacity_ratio: RequestedToCapacityRatioParam | None = None


@dataclass(frozen=True)
class NodeResourcesFitArgs:
    """Upstream: config.NodeResourcesFitArgs, the internal type: what a profile's pluginConfig
    gives NodeResourcesFit once decoded and defaulted (the defaulting fills
    ``scoring_strategy``; NewFit refuses args without one)."""

    ignored_resources: tuple[str, ...] = ()
    ignored_resource_groups: tuple[str, ...] = ()
    scoring_strategy: ScoringStrategy | None = None


# The resources Score weighs by default, and their weights (upstream: defaultResourceSpec).
DEFAULT_RESOURCE_SPEC: tuple[ResourceSpec, ...] = (
    ResourceSpec("cpu", 1),
    ResourceSpec("memory", 1),
)
# The args Fit runs with when it is given none (upstream: the v1beta3 defaults,
# SetDefaults_NodeResourcesFitArgs).
DEFAULT_FIT_ARGS = NodeResourcesFitArgs(
    scoring_strategy=ScoringStrategy(LEAST_ALLOCATED, DEFAULT_RESOURCE_SPEC)
)


def _validate_function_shape(
    shape: tuple[UtilizationShapePoint, ...], path: str
) -> list[FieldError]:
    """Upstream: validateFunctionShape. At least one point; utilizations strictly increasing
    (only the first offence is reported), each in [0, 100]; scores in [0, 10]."""
    if not shape:
        return [required(path, "at least one point must be specified")]
    errs: list[FieldError] = []
    for i in range(1, len(shape)):
        if shape[i - 1].utilization >= shape[i].utilization:
            errs.append(
                invalid(
                    child_path(index_path(path, i), "utilization"),
                    shape[i].utilization,
                    "utilization values must be sorted in increasing order",
                )
            )
            break
    for i, point in enumerate(shape):
        if not 0 <= point.utilization <= MAX_UTILIZATION:
            errs.append(
                invalid(
                    child_path(index_path(path, i), "utilization"),
                    point.utilization,
                    f"not in valid range [0, {MAX_UTILIZATION}]",
                )
            )
        if not 0 <= point.score <= MAX_CUSTOM_PRIORITY_SCORE:
            errs.append(
                invalid(
                    child_path(index_path(path, i), "score"),
                    point.score,
                    f"not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]",
                )
            )
    return errs


def _validate_resources(resources: tuple[ResourceSpec, ...], path: str) -> list[FieldError]:
    """Upstream: validateResources. Every weight in (0, 100]; names are not checked (a
    resource named twice keeps its last weight)."""
    return [
        invalid(
            child_path(index_path(path, i), "weight"),
            resource.weight,
            f"resource weight of {resource.name} not in valid range (0, 100]",
        )
        for i, resource in enumerate(resources)
        if not 0 < resource.weight <= 100
    ]


def validate_node_resources_fit_args(
    path: str | None, args: NodeResourcesFitArgs
) -> Aggregate | None:
    """Every field error of the args, as one Aggregate (a ValueError), or None (upstream:
    ValidateNodeResourcesFitArgs):

    - each ignored resource must be a label key (``[prefix/]name``);
    - each ignored resource group too, and without a "/";
    - each weight in (0, 100]; a RequestedToCapacityRatio shape (when given) as
      ``_validate_function_shape`` wants it.

    As in v1.23, the weights and the shape are reported at ``resources`` and ``shape``, next to
    the args' own fields, though they sit in ``scoringStrategy`` (and the shape in its
    ``requestedToCapacityRatio``). Neither the strategy's type nor its presence is checked:
    NewFit (``new_fit``) refuses those.
    """
    errs: list[FieldError] = []
    resources_path = child_path(path, "ignoredResources")
    for i, resource in enumerate(args.ignored_resources):
        errs.extend(validate_label_name(resource, index_path(resources_path, i)))
    groups_path = child_path(path, "ignoredResourceGroups")
    for i, group in enumerate(args.ignored_resource_groups):
        p = index_path(groups_path, i)
        if "/" in group:
            errs.append(invalid(p, group, "resource group name can't contain '/'"))
        errs.extend(validate_label_name(group, p))
    strategy = args.scoring_strategy
    if strategy is not None:
        errs.extend(_validate_resources(strategy.resources, child_path(path, "resources")))
        if strategy.requested_to_capacity_ratio is not None:
            errs.extend(
                _validate_function_shape(
                    strategy.requested_to_capacity_ratio.shape, child_path(path, "shape")
                )
            )
    return to_aggregate(errs)


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
    pod_request = calculate_pod_resource_request(pod, resource, use_requested)
    return allocatable_request(node_info, pod_request, resource, use_requested)


def allocatable_request(
    node_info: NodeInfo, pod_request: int, resource: str, use_requested: bool = False
) -> tuple[int, int]:
    """calculate_resource_allocatable_request with the pod's request already worked out: the
    part that depends on the node."""
    requested = node_info.requested if use_requested else node_info.non_zero_requested
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


@dataclass(frozen=True)
class PreScoreState:
    """The pod's request of each resource a scorer weighs, worked out once per cycle in
    PreScore instead of once per node in Score (upstream: preScoreState, NodeResourcesFit's
    since v1.27, kubernetes#115655; later releases gave BalancedAllocation the same)."""

    pod_requests: dict[str, int]

    def clone(self) -> PreScoreState:
        return self  # immutable: sharing it is a copy


def calculate_pod_resource_request_list(
    pod: V1Pod, resources: dict[str, int], use_requested: bool
) -> dict[str, int]:
    """The pod's request of each resource (upstream: calculatePodResourceRequestList)."""
    return {r: calculate_pod_resource_request(pod, r, use_requested) for r in resources}


def pod_requests(
    state: CycleState | None, key: str, pod: V1Pod, resources: dict[str, int], use_requested: bool
) -> dict[str, int]:
    """What PreScore wrote under ``key``; worked out here when PreScore did not run (a profile
    may enable Score alone; v1.23's tables score with no CycleState at all), as upstream's
    Score does."""
    if state is None:
        return calculate_pod_resource_request_list(pod, resources, use_requested)
    try:
        data = state.read(key)
    except NotFoundError:
        return calculate_pod_resource_request_list(pod, resources, use_requested)
    assert isinstance(data, PreScoreState)
    return data.pod_requests


# A strategy's scorer: the node's score, 0..100, from what the pod and the node's pods
# request of each resource and what the node offers (upstream: resourceAllocationScorer.scorer).
Scorer = Callable[[dict[str, int], dict[str, int]], int]


def least_requested_score(requested: int, capacity: int) -> int:
    """The share of the resource left free, 0..100 (upstream: leastRequestedScore)."""
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


def _weighted_mean(
    resource_to_weight: dict[str, int],
    requested: dict[str, int],
    allocatable: dict[str, int],
    resource_score: Callable[[int, int], int],
) -> int:
    """The weighted integer mean of the resources' scores, 0 with no resource (the loop of
    leastResourceScorer and mostResourceScorer). The weights are positive (validated), so the
    division is Go's too."""
    node_score = weight_sum = 0
    for resource in requested:
        weight = resource_to_weight[resource]
        node_score += resource_score(requested[resource], allocatable[resource]) * weight
        weight_sum += weight
    if weight_sum == 0:
        return 0
    return node_score // weight_sum


def least_resource_scorer(resource_to_weight: dict[str, int]) -> Scorer:
    """Favour the node with the most left free (upstream: leastResourceScorer)."""

    def score(requested: dict[str, int], allocatable: dict[str, int]) -> int:
        return _weighted_mean(resource_to_weight, requested, allocatable, least_requested_score)

    return score


def most_requested_score(requested: int, capacity: int) -> int:
    """The share of the resource used, 0..100 (upstream: mostRequestedScore). More than the
    capacity counts as full: the non-zero defaults of pods without requests can overshoot it."""
    if capacity == 0:
        return 0
    return min(requested, capacity) * MAX_NODE_SCORE // capacity


def most_resource_scorer(resource_to_weight: dict[str, int]) -> Scorer:
    """Favour the node with the most already used, to pack pods onto few nodes (upstream:
    mostResourceScorer)."""

    def score(requested: dict[str, int], allocatable: dict[str, int]) -> int:
        return _weighted_mean(resource_to_weight, requested, allocatable, most_requested_score)

    return score


# Larger numbers times MAX_NODE_SCORE would overflow int64 (Python's int never does): such a
# node is scored node by node.
_INT64_SAFE = 2**56


def _least_requested_scores(requested: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """least_requested_score for many nodes."""
    free = (capacity - requested) * MAX_NODE_SCORE // np.maximum(capacity, 1)
    return np.where((capacity == 0) | (requested > capacity), 0, free)


def _most_requested_scores(requested: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """most_requested_score for many nodes."""
    used = np.minimum(requested, capacity) * MAX_NODE_SCORE // np.maximum(capacity, 1)
    return np.where(capacity == 0, 0, used)


_RESOURCE_SCORE_ARRAYS = {
    LEAST_ALLOCATED: _least_requested_scores,
    MOST_ALLOCATED: _most_requested_scores,
}


def _weighted_mean_arrays(
    resource_to_weight: dict[str, int],
    requests: dict[str, int],
    nodes: NodeArrays,
    rows: np.ndarray,
    use_requested: bool,
    resource_score: Callable[[np.ndarray, np.ndarray], np.ndarray],
) -> np.ndarray | None:
    """_weighted_mean for the nodes at ``rows``: a resource a node does not offer adds no
    weight for that node. None when a number is too large for int64."""
    node_score = np.zeros(len(rows), np.int64)
    weight_sum = np.zeros(len(rows), np.int64)
    for resource, weight in resource_to_weight.items():
        columns = nodes.allocatable_request(rows, requests[resource], resource, use_requested)
        if columns is None:
            continue  # no node offers it: left out of every node's mean
        allocatable, requested = columns
        if len(rows) and max(int(allocatable.max()), int(requested.max())) > _INT64_SAFE:
            return None
        has = allocatable != 0
        node_score += np.where(has, resource_score(requested, allocatable) * weight, 0)
        weight_sum += np.where(has, weight, 0)
    return np.where(weight_sum == 0, 0, node_score // np.maximum(weight_sum, 1))


def _go_div(a: int, b: int) -> int:
    """Go's integer division, which truncates toward zero (Python's // floors): -7 / 2 is -3."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _go_round(x: float) -> int:
    """Go's math.Round: to the nearest integer, halves away from zero (Python's round() takes
    halves to the even neighbour: round(2.5) is 2, math.Round(2.5) is 3)."""
    whole = math.floor(abs(x))
    if abs(x) - whole >= 0.5:
        whole += 1
    return int(math.copysign(whole, x))


def build_broken_linear_function(shape: tuple[UtilizationShapePoint, ...]) -> Callable[[int], int]:
    """The piecewise-linear function through the shape's points, flat before the first and
    after the last (upstream: helper.BuildBrokenLinearFunction, in plugins/helper/
    shape_score.go; kept here, next to its only user).

    Between two points the value is interpolated in integers, the division truncated toward
    zero as Go's: on a falling segment that rounds up, on a rising one down. The shape must
    have a point (the validation sees to it; upstream indexes an empty one and panics).
    """

    def f(p: int) -> int:
        for i, point in enumerate(shape):
            if p <= point.utilization:
                if i == 0:
                    return shape[0].score
                prev = shape[i - 1]
                return prev.score + _go_div(
                    (point.score - prev.score) * (p - prev.utilization),
                    point.utilization - prev.utilization,
                )
        return shape[-1].score

    return f


def requested_to_capacity_ratio_scorer(
    resource_to_weight: dict[str, int], shape: tuple[UtilizationShapePoint, ...]
) -> Scorer:
    """Score each resource by the shape at its utilization, ``requested * 100 / allocatable``
    (a full node, or one that does not offer the resource, at 100), and take the weighted mean
    of the scores above 0, rounded (upstream: requestedToCapacityRatioScorer and
    buildRequestedToCapacityRatioScorerFunction).

    The shape's scores (0..10) are multiplied by MAX_NODE_SCORE / MAX_CUSTOM_PRIORITY_SCORE (10)
    first, so the function gives 0..100. A resource that scores 0 weighs nothing: with the shape
    (0, 10), (100, 0), a full resource does not drag the mean down.
    """
    raw = build_broken_linear_function(
        tuple(
            UtilizationShapePoint(
                p.utilization, p.score * (MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE)
            )
            for p in shape
        )
    )

    def resource_score(requested: int, capacity: int) -> int:
        if capacity == 0 or requested > capacity:
            return raw(MAX_UTILIZATION)
        return raw(requested * MAX_UTILIZATION // capacity)

    def score(requested: dict[str, int], allocatable: dict[str, int]) -> int:
        node_score = weight_sum = 0
        for resource in requested:
            weight = resource_to_weight[resource]
            value = resource_score(requested[resource], allocatable[resource])
            if value > 0:
                node_score += value * weight
                weight_sum += weight
        if weight_sum == 0:
            return 0
        return _go_round(node_score / weight_sum)

    return score


@dataclass(frozen=True)
class ResourceAllocationScorer:
    """Fit's scoring part (upstream: resourceAllocationScorer, useRequested false): the
    strategy's name, its scorer, and the resources it weighs."""

    name: str
    scorer: Scorer
    resource_to_weight: dict[str, int]


def resources_to_weight_map(resources: tuple[ResourceSpec, ...]) -> dict[str, int]:
    """Upstream: resourcesToWeightMap. A resource named twice keeps its last weight."""
    return {r.name: r.weight for r in resources}


def _least_allocated(args: NodeResourcesFitArgs) -> ResourceAllocationScorer:
    assert args.scoring_strategy is not None  # new_fit checked
    weights = resources_to_weight_map(args.scoring_strategy.resources)
    return ResourceAllocationScorer(LEAST_ALLOCATED, least_resource_scorer(weights), weights)


def _most_allocated(args: NodeResourcesFitArgs) -> ResourceAllocationScorer:
    assert args.scoring_strategy is not None  # new_fit checked
    weights = resources_to_weight_map(args.scoring_strategy.resources)
    return ResourceAllocationScorer(MOST_ALLOCATED, most_resource_scorer(weights), weights)


def _requested_to_capacity_ratio(args: NodeResourcesFitArgs) -> ResourceAllocationScorer:
    strategy = args.scoring_strategy
    assert strategy is not None  # new_fit checked
    if strategy.requested_to_capacity_ratio is None:
        # Differs from upstream: v1.23 reads the missing parameter through a nil pointer and
        # panics (nothing defaults or validates it); here the factory's error says what is
        # missing, and the scheduler does not start either way.
        raise ValueError(
            f"scoring strategy {REQUESTED_TO_CAPACITY_RATIO} needs requestedToCapacityRatio"
        )
    weights = resources_to_weight_map(strategy.resources)
    scorer = requested_to_capacity_ratio_scorer(weights, strategy.requested_to_capacity_ratio.shape)
    return ResourceAllocationScorer(REQUESTED_TO_CAPACITY_RATIO, scorer, weights)


# The scorer each strategy builds (upstream: nodeResourceStrategyTypeMap).
NODE_RESOURCE_STRATEGY_TYPE_MAP: dict[
    str, Callable[[NodeResourcesFitArgs], ResourceAllocationScorer]
] = {
    LEAST_ALLOCATED: _least_allocated,
    MOST_ALLOCATED: _most_allocated,
    REQUESTED_TO_CAPACITY_RATIO: _requested_to_capacity_ratio,
}


class Fit:
    """Upstream: Fit, with its resourceAllocationScorer (``scorer``: the strategy's name,
    ``scorer.scorer`` and ``resource_to_weight``)."""

    def __init__(
        self,
        handle: Handle,
        scorer: ResourceAllocationScorer,
        ignored_resources: frozenset[str] = frozenset(),
        ignored_resource_groups: frozenset[str] = frozenset(),
    ) -> None:
        self.handle = handle
        self.scorer = scorer
        self.resource_to_weight = scorer.resource_to_weight
        # Not implemented: read by nothing. Upstream's Filter skips an extended resource named
        # here, or whose prefix (before "/") is one of the groups; the steps' Filter counts no
        # extended resource at all.
        self.ignored_resources = ignored_resources
        self.ignored_resource_groups = ignored_resource_groups

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

    def filter_nodes(
        self, state: CycleState, pod: V1Pod, nodes: NodeArrays, rows: np.ndarray
    ) -> np.ndarray | None:
        """Filter for the nodes at ``rows`` at once: whether each has room (fits_request's
        tests); None when PreFilter wrote nothing usable (Filter then says why, node by node)."""
        try:
            data = state.read(PRE_FILTER_STATE_KEY)
        except NotFoundError:
            return None
        if not isinstance(data, PreFilterState):
            return None
        request = data.resource
        fits: np.ndarray = nodes.num_pods[rows] + 1 <= nodes.allowed_pod_number[rows]
        if request.milli_cpu == 0 and request.memory == 0 and request.ephemeral_storage == 0:
            return fits
        for resource, amount in (
            ("cpu", request.milli_cpu),
            ("memory", request.memory),
            ("ephemeral-storage", request.ephemeral_storage),
        ):
            fits &= nodes.allocatable[resource][rows] >= nodes.requested[resource][rows] + amount
        return fits

    # --- PreScore -----------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: V1Pod, nodes: list[V1Node]) -> Status:
        """The pod's requests, once for every node's Score."""
        requests = calculate_pod_resource_request_list(pod, self.resource_to_weight, False)
        state.write(PRE_SCORE_STATE_KEY, PreScoreState(requests))
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
        requests = pod_requests(state, PRE_SCORE_STATE_KEY, pod, self.resource_to_weight, False)
        requested: dict[str, int] = {}
        allocatable: dict[str, int] = {}
        for resource in self.resource_to_weight:
            alloc, req = allocatable_request(node_info, requests[resource], resource)
            # A resource the node does not offer is left out of the mean.
            if alloc != 0:
                allocatable[resource], requested[resource] = alloc, req
        return self.scorer.scorer(requested, allocatable), Status()

    def score_nodes(
        self, state: CycleState, pod: V1Pod, nodes: NodeArrays, rows: np.ndarray
    ) -> np.ndarray | None:
        """Score for the nodes at ``rows`` at once, with LeastAllocated or MostAllocated;
        None for RequestedToCapacityRatio (Score then runs node by node)."""
        resource_score = _RESOURCE_SCORE_ARRAYS.get(self.scorer.name)
        if resource_score is None:
            return None
        requests = pod_requests(state, PRE_SCORE_STATE_KEY, pod, self.resource_to_weight, False)
        return _weighted_mean_arrays(
            self.resource_to_weight, requests, nodes, rows, False, resource_score
        )

    def score_extensions(self) -> None:
        """None: the scores are already 0..100."""
        return None


def new_fit(args: NodeResourcesFitArgs | None, handle: Handle) -> Fit:
    """The plugin factory (upstream: NewFit). None stands for the default args (LeastAllocated,
    cpu and memory weighing 1).

    Raises TypeError for args of another type, the Aggregate of
    ``validate_node_resources_fit_args`` (a ValueError) for invalid args, and ValueError for a
    missing scoring strategy or one of an unknown type: v1.23's validation checks neither.
    """
    if args is None:
        args = DEFAULT_FIT_ARGS
    if not isinstance(args, NodeResourcesFitArgs):
        raise TypeError(f"want args to be of type NodeResourcesFitArgs, got {type(args).__name__}")
    err = validate_node_resources_fit_args(None, args)
    if err is not None:
        raise err
    if args.scoring_strategy is None:
        raise ValueError("scoring strategy not specified")
    strategy = args.scoring_strategy.type
    build = NODE_RESOURCE_STRATEGY_TYPE_MAP.get(strategy)
    if build is None:
        raise ValueError(f"scoring strategy {strategy} is not supported")
    return Fit(
        handle,
        build(args),
        frozenset(args.ignored_resources),
        frozenset(args.ignored_resource_groups),
    )


# --- NodeResourcesBalancedAllocation -----------------------------------------------------------

BALANCED_ALLOCATION_NAME = "NodeResourcesBalancedAllocation"
BALANCED_ALLOCATION_PRE_SCORE_STATE_KEY = "PreScore" + BALANCED_ALLOCATION_NAME


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

    def pre_score(self, state: CycleState, pod: V1Pod, nodes: list[V1Node]) -> Status:
        """The pod's requests (as requested: no non-zero defaults), once for every node."""
        requests = calculate_pod_resource_request_list(pod, self.resource_to_weight, True)
        state.write(BALANCED_ALLOCATION_PRE_SCORE_STATE_KEY, PreScoreState(requests))
        return Status()

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
        requests = pod_requests(
            state, BALANCED_ALLOCATION_PRE_SCORE_STATE_KEY, pod, self.resource_to_weight, True
        )
        requested: dict[str, int] = {}
        allocatable: dict[str, int] = {}
        for resource in self.resource_to_weight:
            alloc, req = allocatable_request(node_info, requests[resource], resource, True)
            # A resource the node does not offer is left out of the deviation.
            if alloc != 0:
                allocatable[resource], requested[resource] = alloc, req
        return balanced_resource_scorer(requested, allocatable), Status()

    def score_nodes(
        self, state: CycleState, pod: V1Pod, nodes: NodeArrays, rows: np.ndarray
    ) -> np.ndarray | None:
        """Score for the nodes at ``rows`` at once: balanced_resource_scorer's arithmetic, in
        the same float64 operations; None for more than two resources (Score then runs node
        by node)."""
        if len(self.resource_to_weight) > 2:
            return None
        requests = pod_requests(
            state, BALANCED_ALLOCATION_PRE_SCORE_STATE_KEY, pod, self.resource_to_weight, True
        )
        fractions: list[np.ndarray] = []
        offered: list[np.ndarray] = []
        for resource in self.resource_to_weight:
            columns = nodes.allocatable_request(rows, requests[resource], resource, True)
            if columns is None:
                continue  # no node offers it: left out everywhere
            allocatable, requested = columns
            has = allocatable != 0
            divisor = np.where(has, allocatable, 1).astype(np.float64)
            fractions.append(np.minimum(requested.astype(np.float64) / divisor, 1.0))
            offered.append(has)
        std = np.zeros(len(rows), np.float64)
        if len(fractions) == 2:
            # A node that offers only one of the two has one fraction: std 0.
            both = offered[0] & offered[1]
            std = np.where(both, np.abs((fractions[0] - fractions[1]) / 2), 0.0)
        return ((1 - std) * float(MAX_NODE_SCORE)).astype(np.int64)

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
