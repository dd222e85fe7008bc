"""NodeAffinity: a pod goes only to the nodes its nodeSelector and required node affinity
accept, and preferably to the nodes its preferred node affinity terms match.

Upstream: pkg/scheduler/framework/plugins/nodeaffinity/node_affinity.go at v1.23.10, with
ValidateNodeAffinityArgs (pkg/scheduler/apis/config/validation/validation_pluginargs.go) and
NodeAffinityArgs (pkg/scheduler/apis/config/types_pluginargs.go). The matching itself is
component-helpers' nodeaffinity package, ported in ``..corev1``.

- PreFilter parses the pod's nodeSelector and requiredDuringSchedulingIgnoredDuringExecution
  once per cycle and writes them into the CycleState.
- Filter rejects, as UnschedulableAndUnresolvable (preemption cannot change a node's labels),
  a node that misses a nodeSelector label or matches none of the required terms. A term that
  fails to parse (a bad key, a Gt with a word) matches nothing; it is not an error.
- PreScore parses the preferred terms; Score gives a node the sum of the weights of the
  preferred terms it matches; NormalizeScore scales the sums so the best node gets 100.
- The args' addedAffinity applies to every pod the profile schedules: its required terms
  filter (with their own reason), its preferred terms add to every node's score.

Simplified: ``new`` takes None for the default args (no addedAffinity); upstream's framework
always hands New a defaulted NodeAffinityArgs, and New rejects anything else.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from kubernetes.client import V1Node, V1NodeAffinity, V1Pod

from minisched.apimachinery import Aggregate, flatten, new_aggregate

from ..corev1 import (
    NodeSelector,
    PreferredSchedulingTerms,
    RequiredNodeAffinity,
    get_required_node_affinity,
    new_node_selector,
    new_preferred_scheduling_terms,
)
from ..cycle_state import CycleState, NotFoundError
from ..framework import (
    GVK,
    MAX_NODE_SCORE,
    ActionType,
    ClusterEvent,
    Code,
    Handle,
    NodeInfo,
    NodeScore,
    Status,
    as_status,
)
from ..nodearrays import NodeArrays
from .helper import default_normalize_score, default_normalize_scores

NAME = "NodeAffinity"

# The CycleState keys of what PreFilter and PreScore compute (upstream: preFilterStateKey,
# preScoreStateKey).
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME

# Why Filter rejects a node: the pod's own nodeSelector or affinity (upstream: ErrReasonPod),
# or the profile's addedAffinity (upstream: errReasonEnforced).
ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"


@dataclass(frozen=True)
class NodeAffinityArgs:
    """The plugin's arguments (upstream: config.NodeAffinityArgs).

    ``added_affinity`` is node affinity every pod of the profile gets on top of its own
    (a pod cannot opt out): its requiredDuringSchedulingIgnoredDuringExecution filters, its
    preferredDuringSchedulingIgnoredDuringExecution scores.
    """

    added_affinity: V1NodeAffinity | None = None


def validate_node_affinity_args(path: str | None, args: NodeAffinityArgs) -> Aggregate | None:
    """Every parse error of the added affinity's terms, or None (upstream:
    ValidateNodeAffinityArgs). The errors' fields start with ``addedAffinity.``, under
    ``path`` if given."""
    affinity = args.added_affinity
    if affinity is None:
        return None
    added_path = f"{path}.addedAffinity" if path else "addedAffinity"
    errs: list[BaseException] = []
    ns = affinity.required_during_scheduling_ignored_during_execution
    if ns is not None:
        try:
            new_node_selector(ns, f"{added_path}.requiredDuringSchedulingIgnoredDuringExecution")
        except Aggregate as e:
            errs.append(e)
    terms = affinity.preferred_during_scheduling_ignored_during_execution
    if terms:
        try:
            new_preferred_scheduling_terms(
                terms, f"{added_path}.preferredDuringSchedulingIgnoredDuringExecution"
            )
        except Aggregate as e:
            errs.append(e)
    return flatten(new_aggregate(errs))


@dataclass(frozen=True)
class PreFilterState:
    """The pod's parsed nodeSelector and required affinity (upstream: preFilterState)."""

    required_node_selector_and_affinity: RequiredNodeAffinity

    def clone(self) -> PreFilterState:
        return self  # never changed once written, and no pod on a node changes it


@dataclass(frozen=True)
class PreScoreState:
    """The pod's parsed preferred terms, or None if it has none (upstream: preScoreState)."""

    preferred_node_affinity: PreferredSchedulingTerms | None

    def clone(self) -> PreScoreState:
        return self  # never changed once written


def get_pod_preferred_node_affinity(pod: V1Pod) -> PreferredSchedulingTerms | None:
    """The pod's preferredDuringSchedulingIgnoredDuringExecution, parsed; raises an Aggregate
    if a term of non-zero weight does not parse (upstream: getPodPreferredNodeAffinity)."""
    affinity = pod.spec.affinity if pod.spec is not None else None
    if (
        affinity is not None
        and affinity.node_affinity is not None
        and affinity.node_affinity.preferred_during_scheduling_ignored_during_execution is not None
    ):
        return new_preferred_scheduling_terms(
            affinity.node_affinity.preferred_during_scheduling_ignored_during_execution
        )
    return None


class NodeAffinity:
    """Upstream: NodeAffinity, with the added affinity parsed once, at construction."""

    def __init__(
        self,
        handle: Handle,
        added_node_selector: NodeSelector | None = None,
        added_pref_sched_terms: PreferredSchedulingTerms | None = None,
    ) -> None:
        self.handle = handle
        self.added_node_selector = added_node_selector
        self.added_pref_sched_terms = added_pref_sched_terms

    def name(self) -> str:
        return NAME

    def events_to_register(self) -> list[ClusterEvent]:
        """A new node, or a node whose labels changed, may now match (upstream: Node
        Add|Update; this plugin only reads labels and the name, but v1.23 registers every
        node update)."""
        return [
            ClusterEvent(GVK.NODE, ActionType.ADD | ActionType.UPDATE),
        ]

    # --- PreFilter ----------------------------------------------------------------------------

    def pre_filter(
        self,
        state: CycleState,
        pod: V1Pod,
    ) -> Status:
        state.write(PRE_FILTER_STATE_KEY, PreFilterState(get_required_node_affinity(pod)))
        return Status()

    def pre_filter_extensions(self) -> None:
        """None: the pod's node affinity does not depend on the pods already on a node."""
        return None

    # --- Filter -------------------------------------------------------------------------------

    def filter(
        self,
        state: CycleState,
        pod: V1Pod,
        node_info: NodeInfo,
    ) -> Status:
        node = node_info.node()
        if node is None:
            return Status(Code.ERROR, ["node not found"])
        if self.added_node_selector is not None and not self.added_node_selector.match(node):
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [ERR_REASON_ENFORCED])
        try:
            data = state.read(PRE_FILTER_STATE_KEY)
        except NotFoundError:
            data = None
        if not isinstance(data, PreFilterState):
            # PreFilter did not run (a profile may disable it): parse here, as upstream does.
            data = PreFilterState(get_required_node_affinity(pod))
        # Parse errors are ignored, for backwards compatibility: a bad term matches nothing.
        matched, _ = data.required_node_selector_and_affinity.match(node)
        if not matched:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [ERR_REASON_POD])
        return Status()

    def filter_nodes(
        self, state: CycleState, pod: V1Pod, nodes: NodeArrays, rows: np.ndarray
    ) -> np.ndarray | None:
        """Filter for the nodes at ``rows`` at once, for a pod without nodeSelector or
        required terms (every node passes); None otherwise (Filter then runs node by node)."""
        if self.added_node_selector is not None:
            return None
        try:
            data = state.read(PRE_FILTER_STATE_KEY)
        except NotFoundError:
            return None
        if not isinstance(data, PreFilterState):
            return None
        required = data.required_node_selector_and_affinity
        if required.label_selector is not None or required.node_selector is not None:
            return None
        return np.ones(len(rows), bool)

    # --- PreScore -----------------------------------------------------------------------------

    def pre_score(
        self,
        state: CycleState,
        pod: V1Pod,
        nodes: list[V1Node],
    ) -> Status:
        """Parse the pod's preferred terms once for every node's Score. Nothing to score,
        nothing written; a preferred term that does not parse is an error (upstream returns
        it as an Error status)."""
        if not nodes:
            return Status()
        try:
            preferred = get_pod_preferred_node_affinity(pod)
        except Aggregate as e:
            return as_status(e)
        state.write(PRE_SCORE_STATE_KEY, PreScoreState(preferred))
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
        node = node_info.node()
        count = 0
        if self.added_pref_sched_terms is not None:
            count += self.added_pref_sched_terms.score(node)
        try:
            data = state.read(PRE_SCORE_STATE_KEY)
        except NotFoundError:
            data = None
        if not isinstance(data, PreScoreState):
            # PreScore did not run: parse here, as upstream does.
            try:
                data = PreScoreState(get_pod_preferred_node_affinity(pod))
            except Aggregate as e:
                return 0, as_status(e)
        if data.preferred_node_affinity is not None:
            count += data.preferred_node_affinity.score(node)
        return count, Status()

    def score_nodes(
        self, state: CycleState, pod: V1Pod, nodes: NodeArrays, rows: np.ndarray
    ) -> np.ndarray | None:
        """Score for the nodes at ``rows`` at once, for a pod without preferred terms (all
        0); None otherwise (Score then runs node by node)."""
        if self.added_pref_sched_terms is not None:
            return None
        try:
            data = state.read(PRE_SCORE_STATE_KEY)
        except NotFoundError:
            return None
        if not isinstance(data, PreScoreState) or data.preferred_node_affinity is not None:
            return None
        return np.zeros(len(rows), np.int64)

    def score_extensions(self) -> NodeAffinity:
        return self

    def normalize_score(
        self,
        state: CycleState,
        pod: V1Pod,
        scores: list[NodeScore],
    ) -> Status:
        """The best sum becomes MAX_NODE_SCORE, the others in proportion; all zeros stay
        zeros (upstream: DefaultNormalizeScore, not reversed)."""
        return default_normalize_score(MAX_NODE_SCORE, False, scores)

    def normalize_scores(self, state: CycleState, pod: V1Pod, scores: np.ndarray) -> np.ndarray:
        """normalize_score over an array."""
        return default_normalize_scores(MAX_NODE_SCORE, False, scores)


def new(args: NodeAffinityArgs | None, handle: Handle) -> NodeAffinity:
    """The plugin factory (upstream: New). Raises TypeError for args of another type, and the
    Aggregate of validate_node_affinity_args for an addedAffinity that does not parse."""
    if args is None:
        args = NodeAffinityArgs()
    if not isinstance(args, NodeAffinityArgs):
        raise TypeError(f"args are not of type NodeAffinityArgs, got {type(args).__name__}")
    err = validate_node_affinity_args(None, args)
    if err is not None:
        raise err
    pl = NodeAffinity(handle)
    affinity = args.added_affinity
    if affinity is not None:
        ns = affinity.required_during_scheduling_ignored_during_execution
        if ns is not None:
            try:
                pl.added_node_selector = new_node_selector(ns)
            except Aggregate as e:
                raise ValueError(
                    f"parsing addedAffinity.requiredDuringSchedulingIgnoredDuringExecution: {e}"
                ) from e
        terms = affinity.preferred_during_scheduling_ignored_during_execution
        if terms:
            try:
                pl.added_pref_sched_terms = new_preferred_scheduling_terms(terms)
            except Aggregate as e:
                raise ValueError(
                    f"parsing addedAffinity.preferredDuringSchedulingIgnoredDuringExecution: {e}"
                ) from e
    return pl
