"""NodeUnschedulable: a node marked unschedulable (``kubectl cordon``) takes no new pods,
except pods that tolerate the ``node.kubernetes.io/unschedulable:NoSchedule`` taint.

Upstream: pkg/scheduler/framework/plugins/nodeunschedulable/node_unschedulable.go
(NodeUnschedulable.Filter) at v1.23, with the toleration matching TaintToleration uses too
(corev1.py: TolerationsTolerateTaint, Toleration.ToleratesTaint).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from kubernetes.client import V1Pod, V1Taint

from ..corev1 import tolerations_tolerate_taint
from ..cycle_state import CycleState
from ..framework import GVK, ActionType, ClusterEvent, Code, Handle, NodeInfo, Status
from ..nodearrays import NodeArrays

NAME = "NodeUnschedulable"

ERR_REASON_UNKNOWN_CONDITION = "node(s) had unknown conditions"
ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"

# The taint a cordoned node stands for (upstream: v1.TaintNodeUnschedulable).
TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"


class NodeUnschedulable:
    """Filters out nodes with ``spec.unschedulable``."""

    def name(self) -> str:
        return NAME

    def events_to_register(self) -> list[ClusterEvent]:
        """A new node, or a node whose taints changed: being uncordoned counts as a taint
        change (upstream: NodeSpecUnschedulableChange is an UpdateNodeTaint event)."""
        return [
            ClusterEvent(GVK.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
        ]

    def filter(
        self,
        state: CycleState,
        pod: V1Pod,
        node_info: NodeInfo,
    ) -> Status:
        node = node_info.node() if node_info is not None else None
        if node is None:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [ERR_REASON_UNKNOWN_CONDITION])
        if not (node.spec and node.spec.unschedulable):
            return Status()
        # A pod that tolerates the unschedulable taint also tolerates spec.unschedulable.
        taint = V1Taint(key=TAINT_NODE_UNSCHEDULABLE, effect="NoSchedule")
        if tolerations_tolerate_taint(pod.spec.tolerations or [], taint):
            return Status()
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [ERR_REASON_UNSCHEDULABLE])

    def filter_nodes(
        self, state: CycleState, pod: V1Pod, nodes: NodeArrays, rows: np.ndarray
    ) -> np.ndarray:
        """Filter for the nodes at ``rows`` at once."""
        taint = V1Taint(key=TAINT_NODE_UNSCHEDULABLE, effect="NoSchedule")
        if tolerations_tolerate_taint(pod.spec.tolerations or [], taint):
            return np.ones(len(rows), bool)
        return ~nodes.unschedulable[rows]


def new(args: Any, handle: Handle) -> NodeUnschedulable:
    """The plugin factory (upstream: New)."""
    return NodeUnschedulable()
