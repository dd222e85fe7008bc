"""PrioritySort: the QueueSort plugin that orders activeQ.

Upstream: pkg/scheduler/framework/plugins/queuesort/priority_sort.go (PrioritySort.Less) and
staging/src/k8s.io/component-helpers/scheduling/corev1/helpers.go (PodPriority) at v1.23.
"""

from __future__ import annotations

from typing import Any

from kubernetes.client import V1Pod

from ..framework import Handle, QueuedPodInfo

NAME = "PrioritySort"


def pod_priority(pod: V1Pod) -> int:
    """``spec.priority``; a pod without one counts as 0 (upstream: corev1helpers.PodPriority)."""
    return pod.spec.priority or 0


class PrioritySort:
    """Higher priority first; among equals, the pod that entered the queue first."""

    def name(self) -> str:
        return NAME

    def less(self, p_info1: QueuedPodInfo, p_info2: QueuedPodInfo) -> bool:
        """Whether ``p_info1`` should be popped before ``p_info2``.

        The timestamp is when the pod last entered the queue, so a pod that failed and came
        back queues behind pods of its priority that were waiting meanwhile.
        """
        p1, p2 = pod_priority(p_info1.pod), pod_priority(p_info2.pod)
        return p1 > p2 or (p1 == p2 and p_info1.timestamp < p_info2.timestamp)

    def sort_key(self, p_info: QueuedPodInfo) -> tuple[int, float]:
        """``less`` as a key: ``less(a, b)`` is ``sort_key(a) < sort_key(b)``, so the queue
        compares two tuples instead of calling ``less`` (scheduling_queue.Heap)."""
        return -pod_priority(p_info.pod), p_info.timestamp


def new(args: Any, handle: Handle) -> PrioritySort:
    """The plugin factory (upstream: New)."""
    return PrioritySort()
