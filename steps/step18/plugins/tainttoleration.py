"""TaintToleration: a pod goes only where it tolerates the NoSchedule and NoExecute taints, and
preferably where it tolerates the PreferNoSchedule ones.

Upstream: pkg/scheduler/framework/plugins/tainttoleration/taint_toleration.go at v1.23.10
(TaintToleration, Filter, PreScore, getAllTolerationPreferNoSchedule, getPreScoreState,
countIntolerableTaintsPreferNoSchedule, Score, NormalizeScore, New), with the toleration
matching of ``corev1.py`` (k8s.io/component-helpers' FindMatchingUntoleratedTaint and
TolerationsTolerateTaint, k8s.io/api's Toleration.ToleratesTaint).

- Filter rejects a node with a NoSchedule or NoExecute taint no toleration of the pod matches,
  as UnschedulableAndUnresolvable (preemption cannot remove a taint), naming the first such
  taint: ``node(s) had taint {key: value}, that the pod didn't tolerate``. PreferNoSchedule
  taints never filter.
- PreScore keeps the pod's tolerations that can match a PreferNoSchedule taint: those with that
  effect, or with none (an empty effect matches every effect).
- Score counts the node's PreferNoSchedule taints none of them tolerates, and NormalizeScore
  turns the counts around: the node with the most gets 0, a node with none MAX_NODE_SCORE.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from kubernetes.client import V1Node, V1Pod, V1Taint, V1Toleration

from ..corev1 import find_matching_untolerated_taint, tolerations_tolerate_taint
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

NAME = "TaintToleration"

# Where PreScore leaves the pod's PreferNoSchedule tolerations for Score (upstream:
# preScoreStateKey).
PRE_SCORE_STATE_KEY = "PreScore" + NAME

# Upstream's ErrReasonNotMatch. v1.23's Filter does not use it (its reason names the taint); it
# is kept because upstream exports it.
ERR_REASON_NOT_MATCH = "node(s) had taints that the pod didn't tolerate"

TAINT_EFFECT_NO_SCHEDULE = "NoSchedule"
TAINT_EFFECT_PREFER_NO_SCHEDULE = "PreferNoSchedule"
TAINT_EFFECT_NO_EXECUTE = "NoExecute"


@dataclass(frozen=True)
class PreScoreState:
    """The pod's tolerations that matter to Score (upstream: preScoreState)."""

    tolerations_prefer_no_schedule: tuple[V1Toleration, ...]

    def clone(self) -> PreScoreState:
        return self  # never changed once written: sharing it is a copy


def _filter_predicate(taint: V1Taint) -> bool:
    """Filter looks only at the taints that keep pods off a node: NoSchedule and NoExecute."""
    return taint.effect in (TAINT_EFFECT_NO_SCHEDULE, TAINT_EFFECT_NO_EXECUTE)


def get_all_toleration_prefer_no_schedule(
    tolerations: list[V1Toleration] | None,
) -> tuple[V1Toleration, ...]:
    """The tolerations with effect PreferNoSchedule or no effect (upstream:
    getAllTolerationPreferNoSchedule): an empty effect matches every effect, PreferNoSchedule
    included, so it must be kept too."""
    return tuple(
        t for t in tolerations or [] if not t.effect or t.effect == TAINT_EFFECT_PREFER_NO_SCHEDULE
    )


def count_intolerable_taints_prefer_no_schedule(
    taints: list[V1Taint] | None, tolerations: tuple[V1Toleration, ...] | list[V1Toleration]
) -> int:
    """How many of the PreferNoSchedule taints no toleration tolerates (upstream:
    countIntolerableTaintsPreferNoSchedule)."""
    return sum(
        1
        for taint in taints or []
        if taint.effect == TAINT_EFFECT_PREFER_NO_SCHEDULE
        and not tolerations_tolerate_taint(list(tolerations), taint)
    )


def get_pre_score_state(state: CycleState) -> PreScoreState:
    """What PreScore wrote; raises when it wrote nothing usable (upstream: getPreScoreState)."""
    try:
        data = state.read(PRE_SCORE_STATE_KEY)
    except NotFoundError as e:
        raise Exception(f'failed to read "{PRE_SCORE_STATE_KEY}" from cycleState: {e}') from e
    if not isinstance(data, PreScoreState):
        raise Exception(f"{data!r} convert to tainttoleration.preScoreState error")
    return data


class TaintToleration:
    """Upstream: TaintToleration."""

    def __init__(self, handle: Handle) -> None:
        self.handle = handle

    def name(self) -> str:
        return NAME

    def events_to_register(self) -> list[ClusterEvent]:
        """A new node, or any update of a node (v1.23.10 registers Add | Update, not just
        taint updates): a node whose taints were removed may now take the pod."""
        return [
            ClusterEvent(GVK.NODE, ActionType.ADD | ActionType.UPDATE),
        ]

    # --- Filter -------------------------------------------------------------------------------

    def filter(
        self,
        state: CycleState,
        pod: V1Pod,
        node_info: NodeInfo,
    ) -> Status:
        node = node_info.node() if node_info is not None else None
        if node is None:
            return as_status(Exception("invalid nodeInfo"))
        taints = node.spec.taints if node.spec else None
        taint, is_untolerated = find_matching_untolerated_taint(
            taints, pod.spec.tolerations, _filter_predicate
        )
        if not is_untolerated or taint is None:
            return Status()
        # v1.23 names the taint by key and value only, not with Taint.ToString: a taint
        # without a value reads "{key: }", and the effect is not shown.
        reason = (
            f"node(s) had taint {{{taint.key}: {taint.value or ''}}}, that the pod didn't tolerate"
        )
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [reason])

    def filter_nodes(
        self, state: CycleState, pod: V1Pod, nodes: NodeArrays, rows: np.ndarray
    ) -> np.ndarray:
        """Filter for the nodes at ``rows`` at once: asked once per distinct set of taints."""
        tolerated = [self.filter(state, pod, n).is_success() for n in nodes.taint_groups]
        return np.array(tolerated, bool)[nodes.taints[rows]]

    # --- PreScore -----------------------------------------------------------------------------

    def pre_score(
        self,
        state: CycleState,
        pod: V1Pod,
        nodes: list[V1Node],
    ) -> Status:
        """Keep the pod's PreferNoSchedule tolerations once, for every node's Score. Nothing
        is written when no node is left to score: no Score runs then."""
        if not nodes:
            return Status()
        data = PreScoreState(get_all_toleration_prefer_no_schedule(pod.spec.tolerations))
        state.write(PRE_SCORE_STATE_KEY, data)
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
        if node is None:
            # Differs from upstream: a NodeInfo without its Node scores as an Error "node not
            # found", where v1.23 dereferences the missing Node and panics. The snapshot's get
            # already raises for such a node, so the scheduler never gets here.
            return 0, Status(Code.ERROR, ["node not found"])
        try:
            data = get_pre_score_state(state)
        except Exception as e:
            return 0, as_status(e)
        taints = node.spec.taints if node.spec else None
        return count_intolerable_taints_prefer_no_schedule(
            taints, data.tolerations_prefer_no_schedule
        ), Status()

    def score_nodes(
        self, state: CycleState, pod: V1Pod, nodes: NodeArrays, rows: np.ndarray
    ) -> np.ndarray | None:
        """Score for the nodes at ``rows`` at once: counted once per distinct set of taints.
        None when PreScore wrote nothing usable (Score then says why)."""
        try:
            data = get_pre_score_state(state)
        except Exception:
            return None
        tolerations = data.tolerations_prefer_no_schedule
        counts = [
            count_intolerable_taints_prefer_no_schedule(n.node().spec.taints, tolerations)  # type: ignore[union-attr]
            for n in nodes.taint_groups
        ]
        return np.array(counts, np.int64)[nodes.taints[rows]]

    def score_extensions(self) -> TaintToleration:
        return self

    def normalize_score(
        self,
        state: CycleState,
        pod: V1Pod,
        scores: list[NodeScore],
    ) -> Status:
        """Reverse the counts onto 0..MAX_NODE_SCORE: fewer intolerable taints score more."""
        return default_normalize_score(MAX_NODE_SCORE, True, scores)

    def normalize_scores(self, state: CycleState, pod: V1Pod, scores: np.ndarray) -> np.ndarray:
        """normalize_score over an array."""
        return default_normalize_scores(MAX_NODE_SCORE, True, scores)


def new(args: Any, handle: Handle) -> TaintToleration:
    """The plugin factory (upstream: New). v1.23 has no TaintToleration args: ``args`` is
    ignored."""
    return TaintToleration(handle)
