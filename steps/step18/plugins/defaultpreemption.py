"""DefaultPreemption: the PostFilter plugin that evicts lower-priority pods to make room.

Upstream: pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go
(DefaultPreemption, New, PostFilter, calculateNumCandidates, GetOffsetAndNumCandidates,
CandidatesToVictimsMap, PodEligibleToPreemptOthers, SelectVictimsOnNode,
filterPodsWithPDBViolation), pkg/scheduler/apis/config/types_pluginargs.go
(DefaultPreemptionArgs), pkg/scheduler/apis/config/v1beta3/defaults.go (the args' defaults) and
pkg/scheduler/apis/config/validation/validation_pluginargs.go (ValidateDefaultPreemptionArgs)
at v1.23. The algorithm itself is the Evaluator's (``preemption.py``); this plugin supplies its
parts.

Its args (a profile's pluginConfig in the configuration file) say how many candidate nodes
the dry run looks for: ``minCandidateNodesPercentage`` of the nodes, at least
``minCandidateNodesAbsolute``, at most every node.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubernetes.client import V1Pod

from minisched.apimachinery import Aggregate, FieldError, child_path, invalid, to_aggregate

from .. import preemption
from ..cycle_state import CycleState
from ..framework import (
    Code,
    Handle,
    NodeInfo,
    NodeToStatusMap,
    PostFilterResult,
    Status,
)
from .prioritysort import pod_priority

NAME = "DefaultPreemption"


@dataclass(frozen=True)
class DefaultPreemptionArgs:
    """How many nodes the dry run must try, at least: a percentage of the potential nodes,
    and an absolute number (upstream: DefaultPreemptionArgs, defaults 10 % and 100)."""

    min_candidate_nodes_percentage: int = 10
    min_candidate_nodes_absolute: int = 100


def validate_default_preemption_args(
    path: str | None, args: DefaultPreemptionArgs
) -> Aggregate | None:
    """Every field error of the args, as one Aggregate (a ValueError), or None (upstream:
    ValidateDefaultPreemptionArgs): the percentage in [0, 100], the absolute number at least
    0, and not both 0 (the dry run would look for no candidate), which is reported on both
    fields."""
    errs: list[FieldError] = []
    percentage_path = child_path(path, "minCandidateNodesPercentage")
    absolute_path = child_path(path, "minCandidateNodesAbsolute")
    percentage = args.min_candidate_nodes_percentage
    absolute = args.min_candidate_nodes_absolute
    if not 0 <= percentage <= 100:
        errs.append(invalid(percentage_path, percentage, "not in valid range [0, 100]"))
    if absolute < 0:
        errs.append(invalid(absolute_path, absolute, "not in valid range [0, inf)"))
    if percentage == 0 and absolute == 0:
        errs.append(
            invalid(
                percentage_path,
                percentage,
                "cannot be zero at the same time as minCandidateNodesAbsolute",
            )
        )
        errs.append(
            invalid(
                absolute_path,
                absolute,
                "cannot be zero at the same time as minCandidateNodesPercentage",
            )
        )
    return to_aggregate(errs)


class DefaultPreemption:
    """Upstream: DefaultPreemption, which implements preemption.Interface."""

    def __init__(self, args: DefaultPreemptionArgs, handle: Handle) -> None:
        self.args = args
        self.fh = handle

    def name(self) -> str:
        return NAME

    # --- PostFilter ---------------------------------------------------------------------------

    def post_filter(
        self,
        state: CycleState,
        pod: V1Pod,
        filtered_node_status_map: NodeToStatusMap,
    ) -> tuple[PostFilterResult | None, Status]:
        pe = preemption.Evaluator(NAME, self.fh, state, self)
        return pe.preempt(pod, filtered_node_status_map)

    # --- preemption.Interface -----------------------------------------------------------------

    def calculate_num_candidates(self, num_nodes: int) -> int:
        """How many candidates the dry run looks for: the percentage of the nodes (rounded
        down), at least the absolute number, at most every node (upstream:
        calculateNumCandidates). With the defaults, every node up to 1000 nodes."""
        n = num_nodes * self.args.min_candidate_nodes_percentage // 100
        n = max(n, self.args.min_candidate_nodes_absolute)
        return min(n, num_nodes)

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        """A random node to start the dry run at, so that successive preemptions do not all
        try the same nodes first, and how many candidates to find (upstream:
        GetOffsetAndNumCandidates, with rand.Int31n; here the scheduler's seeded source)."""
        return self.fh.rng.randrange(num_nodes), self.calculate_num_candidates(num_nodes)

    def candidates_to_victims_map(
        self, candidates: list[preemption.Candidate]
    ) -> dict[str, preemption.Victims]:
        """Upstream: CandidatesToVictimsMap."""
        return {c.name: c.victims for c in candidates}

    def pod_eligible_to_preempt_others(
        self, pod: V1Pod, nominated_node_status: Status | None
    ) -> tuple[bool, str]:
        """Whether the pod may preempt, and why not (upstream: PodEligibleToPreemptOthers).

        Not a pod whose preemptionPolicy is Never; not a pod nominated to a node where a
        lower-priority pod is still terminating: it already preempted there, and must wait
        for its victims to go, unless that node is now UnschedulableAndUnresolvable for it.

        Differs from upstream: v1.23 returns the bool only; the reason (for the report) is
        later releases' message.
        """
        if pod.spec.preemption_policy == "Never":
            return False, "not eligible due to preemptionPolicy=Never."
        nom_node_name = (pod.status and pod.status.nominated_node_name) or ""
        if nom_node_name:
            # The nominated node no longer fits at all: preempting elsewhere may help.
            if (
                nominated_node_status is not None
                and nominated_node_status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
            ):
                return True, ""
            try:
                node_info = self.fh.snapshot_shared_lister().node_infos().get(nom_node_name)
            except Exception:
                node_info = None
            if node_info is not None:
                priority = pod_priority(pod)
                for p in node_info.pods:
                    if p.metadata.deletion_timestamp and pod_priority(p) < priority:
                        # There is a terminating pod on the nominated node.
                        return False, (
                            "not eligible due to a terminating pod on the nominated node "
                            f"({p.metadata.name} on {nom_node_name})."
                        )
        return True, ""

    def select_victims_on_node(
        self,
        state: CycleState,
        pod: V1Pod,
        node_info: NodeInfo,
        pdbs: list[Any],
    ) -> tuple[list[V1Pod], int, Status]:
        """The fewest pods to evict from the node for the pod to fit, and how many of them
        violate a PDB (upstream: SelectVictimsOnNode). ``state`` and ``node_info`` are copies.

        1. Remove every pod of lower priority (through the PreFilter extensions too): if the
           pod does not fit even then, the node is no candidate.
        2. Reprieve as many as possible: put each back, from the most important down (the
           PDB-violating ones first), and keep it if the pod still fits; the others are the
           victims.

        The fit is Filter with the nominated pods (``run_filter_plugins_with_nominated_pods``):
        room kept for a pod of equal or higher priority is not room.
        """
        fh = self.fh

        def remove_pod(rp: V1Pod) -> None:
            node_info.remove_pod(rp)
            status = fh.run_pre_filter_extension_remove_pod(state, pod, rp, node_info)
            if not status.is_success():
                raise status.as_error() or Exception(status.message())

        def add_pod(ap: V1Pod) -> None:
            node_info.add_pod(ap)
            status = fh.run_pre_filter_extension_add_pod(state, pod, ap, node_info)
            if not status.is_success():
                raise status.as_error() or Exception(status.message())

        # As the first step, remove all the lower priority pods from the node and check if
        # the given pod can be scheduled.
        potential_victims: list[V1Pod] = []
        priority = pod_priority(pod)
        try:
            for p in list(node_info.pods):
                if pod_priority(p) < priority:
                    potential_victims.append(p)
                    remove_pod(p)
        except Exception as err:
            return [], 0, Status(Code.ERROR, [str(err)], err=err)

        # No potential victims: the node's state did not change, no need to filter again.
        if not potential_victims:
            message = (
                f"No victims found on node {node_info.node().metadata.name} "
                f"for preemptor pod {pod.metadata.name}"
            )
            return [], 0, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [message])

        # If the pod does not fit with every lower-priority pod gone, this node is no
        # candidate. (Upstream does not try whether it fails for pod affinity to a victim.)
        status = fh.run_filter_plugins_with_nominated_pods(state, pod, node_info)
        if not status.is_success():
            return [], 0, status

        victims: list[V1Pod] = []
        num_violating_victim = 0
        potential_victims.sort(key=preemption.importance)
        violating_victims, non_violating_victims = filter_pods_with_pdb_violation(
            potential_victims, pdbs
        )

        def reprieve_pod(p: V1Pod) -> bool:
            add_pod(p)
            fits = fh.run_filter_plugins_with_nominated_pods(state, pod, node_info).is_success()
            if not fits:
                remove_pod(p)
                victims.append(p)
            return fits

        try:
            for p in violating_victims:
                if not reprieve_pod(p):
                    num_violating_victim += 1
            # Now we try to reprieve non-violating victims.
            for p in non_violating_victims:
                reprieve_pod(p)
        except Exception as err:
            return [], 0, Status(Code.ERROR, [str(err)], err=err)
        return victims, num_violating_victim, Status()


def filter_pods_with_pdb_violation(
    pods: list[V1Pod], pdbs: list[Any]
) -> tuple[list[V1Pod], list[V1Pod]]:
    """The pods whose eviction would violate a PodDisruptionBudget, and the others, each in
    the order given (upstream: filterPodsWithPDBViolation).

    Simplified: no PDB is read (``pdbs`` is always empty), so every pod is non-violating.
    Upstream counts a pod as violating when a PDB in its namespace selects it and allows no
    more disruptions (each violating pod found uses one allowed disruption up); violating
    pods are then reprieved first, and a node with fewer violations is preferred.
    """
    return [], list(pods)


def new(args: DefaultPreemptionArgs | None, handle: Handle) -> DefaultPreemption:
    """The plugin factory (upstream: New). None stands for the default args (10 %, 100).
    Raises TypeError for args of another type and the Aggregate of
    ``validate_default_preemption_args`` (a ValueError) for invalid args."""
    if args is None:
        args = DefaultPreemptionArgs()
    if not isinstance(args, DefaultPreemptionArgs):
        raise TypeError(f"got args of type {type(args).__name__}, want DefaultPreemptionArgs")
    err = validate_default_preemption_args(None, args)
    if err is not None:
        raise err
    return DefaultPreemption(args, handle)
