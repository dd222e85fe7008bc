"""MaxPods: a node takes at most as many pods as its ``status.allocatable.pods``.

A teaching plugin, not an upstream one: its Filter is the one check of upstream's
NodeResourcesFit that needs nothing but the cache (pkg/scheduler/framework/plugins/noderesources
/fit.go, fitsRequest: ``len(nodeInfo.Pods)+1 > allowedPodNumber`` gives "Too many pods"). The
pods it counts come from the cycle's snapshot, so they include the pods assumed on the node and
not bound yet: without assume, two cycles in a row could both put a pod on the last place.

Its Reserve, Unreserve and PostBind show when the framework calls each: Reserve once the pod is
assumed, Unreserve when anything after fails, PostBind once the pod is bound. Between them the
plugin keeps, per node, the pods it let on whose binding is not over yet, and logs the count. A
real plugin keeps in Reserve what the cache does not count (VolumeBinding: the volumes it chose).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from kubernetes.client import V1Pod

from minisched.informer import meta_namespace_key

from ..cycle_state import CycleState
from ..framework import GVK, ActionType, ClusterEvent, Code, Handle, NodeInfo, Status

log = logging.getLogger(__name__)

NAME = "MaxPods"

ERR_REASON_TOO_MANY_PODS = "Too many pods"


class MaxPods:
    """``_lock`` guards ``in_flight``: Reserve runs on the scheduling thread, Unreserve and
    PostBind on binding threads."""

    def __init__(self, handle: Handle) -> None:
        self.handle = handle
        self._lock = threading.Lock()
        # Node name -> the UIDs of the pods reserved there and not yet bound or given back.
        self.in_flight: dict[str, set[str]] = {}

    def name(self) -> str:
        return NAME

    def events_to_register(self) -> list[ClusterEvent]:
        """A pod leaving a node frees a place; so does a new node, or more allocatable pods
        (upstream NodeResourcesFit registers the same)."""
        return [
            ClusterEvent(GVK.POD, ActionType.DELETE),
            ClusterEvent(GVK.NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE),
        ]

    # --- Filter -------------------------------------------------------------------------------

    def filter(
        self,
        state: CycleState,
        pod: V1Pod,
        node_info: NodeInfo,
    ) -> Status:
        if len(node_info.pods) + 1 > node_info.allocatable.allowed_pod_number:
            return Status(Code.UNSCHEDULABLE, [ERR_REASON_TOO_MANY_PODS])
        return Status()

    # --- Reserve, Unreserve, PostBind ---------------------------------------------------------

    def reserve(
        self,
        state: CycleState,
        pod: V1Pod,
        node_name: str,
    ) -> Status:
        with self._lock:
            pods = self.in_flight.setdefault(node_name, set())
            pods.add(pod.metadata.uid)
            count = len(pods)
        log.info(
            'Reserve: pod assumed on node pod="%s" node="%s" inFlight=%d',
            meta_namespace_key(pod),
            node_name,
            count,
        )
        return Status()

    def unreserve(
        self,
        state: CycleState,
        pod: V1Pod,
        node_name: str,
    ) -> None:
        """Idempotent, as Unreserve must be: giving back twice gives back once."""
        count = self._give_back(pod, node_name)
        log.info(
            'Unreserve: pod given back pod="%s" node="%s" inFlight=%d',
            meta_namespace_key(pod),
            node_name,
            count,
        )

    def post_bind(
        self,
        state: CycleState,
        pod: V1Pod,
        node_name: str,
    ) -> None:
        count = self._give_back(pod, node_name)
        log.info(
            'PostBind: pod bound pod="%s" node="%s" inFlight=%d',
            meta_namespace_key(pod),
            node_name,
            count,
        )

    def _give_back(self, pod: V1Pod, node_name: str) -> int:
        with self._lock:
            pods = self.in_flight.get(node_name, set())
            pods.discard(pod.metadata.uid)
            if not pods:
                # Nothing in flight: drop the node, so deleted nodes leave no trace.
                self.in_flight.pop(node_name, None)
            return len(pods)


def new(args: Any, handle: Handle) -> MaxPods:
    """The plugin factory (upstream style: New)."""
    return MaxPods(handle)
