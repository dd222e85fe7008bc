"""The informers' event handlers: what the scheduler does when pods change.

Upstream: pkg/scheduler/eventhandlers.go (addAllEventHandlers and the handlers it installs)
at v1.23.

- Unassigned pods for our schedulerName are the queue's: added, updated, deleted there.

Not implemented: upstream's handlers for assigned pods and for nodes, which tell the queue
that the cluster changed; nothing here would act on that.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kubernetes import client

from minisched.informer import (
    DeletedFinalStateUnknown,
    FilteringResourceEventHandler,
    ResourceEventHandler,
)

if TYPE_CHECKING:
    from .scheduler import Scheduler


def add_all_event_handlers(sched: Scheduler) -> None:
    """Connect the informers to the queue (upstream: addAllEventHandlers).

    client-go's filtering handler turns "stopped matching" into a delete: when a pod is bound,
    the unassigned-pod handler sees it deleted.
    """
    # Unassigned pods for our scheduler: the queue.
    sched.pod_informer.add_event_handler(
        FilteringResourceEventHandler(
            lambda pod: not assigned_pod(pod) and sched.responsible_for_pod(pod),
            ResourceEventHandler(
                on_add=sched.scheduling_queue.add,
                on_update=lambda old, new: update_pod_in_scheduling_queue(sched, old, new),
                on_delete=lambda pod: delete_pod_from_scheduling_queue(sched, pod),
            ),
        )
    )


def assigned_pod(pod: client.V1Pod) -> bool:
    """A pod with a node is assigned: it is no longer the queue's business."""
    return bool(pod.spec.node_name)


# --- unassigned pods ---------------------------------------------------------------------------


def update_pod_in_scheduling_queue(
    sched: Scheduler, old_pod: client.V1Pod, new_pod: client.V1Pod
) -> None:
    """Pass a pod's update to the queue (upstream: updatePodInSchedulingQueue).

    An update carrying the same resourceVersion (an informer's relist) is not a change: passing
    it on would queue again a pod that is being scheduled (upstream: issue 96071).
    Not implemented: upstream also ignores updates of assumed pods (pods being bound); here an
    update that arrives while the pod is being bound queues it again. If it is popped before
    the informer sees it bound, its second bind is refused (409) and reported as an error.
    """
    if old_pod.metadata.resource_version == new_pod.metadata.resource_version:
        return
    sched.scheduling_queue.update(old_pod, new_pod)


def delete_pod_from_scheduling_queue(sched: Scheduler, pod: Any) -> None:
    """The pod was deleted, or bound (upstream: deletePodFromSchedulingQueue)."""
    pod = pod.obj if isinstance(pod, DeletedFinalStateUnknown) else pod
    sched.scheduling_queue.delete(pod)
