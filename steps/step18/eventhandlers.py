"""The informers' event handlers: what the scheduler does when pods and nodes change.

Upstream: pkg/scheduler/eventhandlers.go (addAllEventHandlers and the handlers it installs,
nodeSchedulingPropertiesChange, preCheckForNode) at v1.23.

- Unassigned pods for our schedulerName are the queue's: added, updated, deleted there.
- Assigned pods (any scheduler's) are the cluster's state: they go to the cache, where the add
  of a pod this scheduler bound confirms the pod it assumed; and adding, changing or deleting
  one may make a waiting pod schedulable, so the queue hears about it.
- Nodes go to the cache; a new node, or a change to what scheduling looks at (unschedulable,
  allocatable, labels, taints, conditions), moves the pods whose rejecting plugins registered
  that event and that could fit the node at all (``pre_check_for_node``).
- Custom resources a plugin registered events for are watched too, each change a cluster
  event for the pods that plugin rejected (``build_evt_res_handler``).

The cache refuses impossible transitions (a pod added twice, an unknown pod removed); as
upstream, the handlers log that and go on.
"""

from __future__ import annotations

import logging
from functools import partial
from typing import TYPE_CHECKING, Any

from kubernetes import client

from minisched.informer import (
    DeletedFinalStateUnknown,
    FilteringResourceEventHandler,
    Informer,
    ResourceEventHandler,
    Unstructured,
    meta_namespace_key,
)

from .corev1 import find_matching_untolerated_taint, get_required_node_affinity
from .framework import GVK, ActionType, ClusterEvent, NodeInfo
from .plugins.noderesources import compute_pod_resource_request, fits_request
from .scheduling_queue import (
    ASSIGNED_POD_DELETE,
    NODE_ADD,
    NODE_ALLOCATABLE_CHANGE,
    NODE_CONDITION_CHANGE,
    NODE_LABEL_CHANGE,
    NODE_SPEC_UNSCHEDULABLE_CHANGE,
    NODE_TAINT_CHANGE,
    PreEnqueueCheck,
)

if TYPE_CHECKING:
    from .scheduler import Scheduler

log = logging.getLogger(__name__)


def add_all_event_handlers(sched: Scheduler) -> None:
    """Connect the informers to the queue (upstream: addAllEventHandlers).

    client-go's filtering handler turns "stopped matching" into a delete and "started
    matching" into an add: when a pod is bound, the unassigned-pod handler sees it deleted
    and the assigned-pod handler sees it added.
    """
    # Assigned pods: what is running where.
    sched.pod_informer.add_event_handler(
        FilteringResourceEventHandler(
            assigned_pod,
            ResourceEventHandler(
                on_add=lambda pod: add_pod_to_cache(sched, pod),
                on_update=lambda old, new: update_pod_in_cache(sched, old, new),
                on_delete=lambda pod: delete_pod_from_cache(sched, pod),
            ),
        )
    )
    # Unassigned pods for our scheduler: the queue.
    sched.pod_informer.add_event_handler(
        FilteringResourceEventHandler(
            lambda pod: not assigned_pod(pod) and sched.responsible_for_pod(pod),
            ResourceEventHandler(
                on_add=lambda pod: add_pod_to_scheduling_queue(sched, pod),
                on_update=lambda old, new: update_pod_in_scheduling_queue(sched, old, new),
                on_delete=lambda pod: delete_pod_from_scheduling_queue(sched, pod),
            ),
        )
    )
    # Nodes.
    sched.node_informer.add_event_handler(
        ResourceEventHandler(
            on_add=lambda node: add_node_to_cache(sched, node),
            on_update=lambda old, new: update_node_in_cache(sched, old, new),
            on_delete=lambda node: delete_node_from_cache(sched, node),
        )
    )
    # Custom resources a plugin registered events for (Coscheduling: the PodGroups): one
    # informer each, whose changes move the pods that plugin rejected (upstream: the dynamic
    # informers of addAllEventHandlers' default case).
    gvk_map: dict[str, ActionType] = {}
    for event in sched.cluster_event_map:
        if event.resource not in (GVK.POD, GVK.NODE, GVK.WILDCARD):
            gvk_map[event.resource] = gvk_map.get(event.resource, ActionType(0)) | event.action_type
    for gvk, action_type in gvk_map.items():
        # "<resource>.<version>.<group>" (upstream: schema.ParseResourceArg).
        resource, version, group = str(gvk).split(".", 2)
        custom = client.CustomObjectsApi(sched.client.api_client)
        informer = Informer(
            partial(custom.list_cluster_custom_object, group, version, resource), Unstructured
        )
        informer.add_event_handler(build_evt_res_handler(sched, action_type, gvk, resource.title()))
        sched.dynamic_informers.append(informer)


def build_evt_res_handler(
    sched: Scheduler, action_type: ActionType, gvk: str, short_gvk: str
) -> ResourceEventHandler:
    """Handlers that move the pods waiting for this resource's events, labelled
    ``<Resource>Add``, ``<Resource>Update`` and ``<Resource>Delete`` (upstream:
    buildEvtResHandler)."""
    queue = sched.scheduling_queue

    def on(action: ActionType, label: str) -> Any:
        if not action_type & action:
            return None
        event = ClusterEvent(gvk, action, short_gvk + label)
        return lambda *_: queue.move_all_to_active_or_backoff_queue(event)

    return ResourceEventHandler(
        on_add=on(ActionType.ADD, "Add"),
        on_update=on(ActionType.UPDATE, "Update"),
        on_delete=on(ActionType.DELETE, "Delete"),
    )


def assigned_pod(pod: client.V1Pod) -> bool:
    """A pod with a node is assigned: it is no longer the queue's business."""
    return bool(pod.spec.node_name)


# --- nodes -------------------------------------------------------------------------------------


def add_node_to_cache(sched: Scheduler, node: client.V1Node) -> None:
    """A new node may fit pods that fitted nowhere (upstream: addNodeToCache)."""
    node_info = sched.cache.add_node(node)
    log.info('Add event for node node="%s"', node.metadata.name)
    sched.scheduling_queue.move_all_to_active_or_backoff_queue(
        NODE_ADD, pre_check_for_node(node_info)
    )


def update_node_in_cache(
    sched: Scheduler, old_node: client.V1Node, new_node: client.V1Node
) -> None:
    """A node changed: move pods only if it changed in a way scheduling looks at (upstream:
    updateNodeInCache)."""
    node_info = sched.cache.update_node(old_node, new_node)
    event = node_scheduling_properties_change(new_node, old_node)
    if event is not None:
        log.info('Update event for node node="%s" event="%s"', new_node.metadata.name, event.label)
        sched.scheduling_queue.move_all_to_active_or_backoff_queue(
            event, pre_check_for_node(node_info)
        )


def delete_node_from_cache(sched: Scheduler, node: Any) -> None:
    """A node went away: fewer places for pods, so no pod is moved (upstream:
    deleteNodeFromCache, which only updates the cache in v1.23)."""
    node = node.obj if isinstance(node, DeletedFinalStateUnknown) else node
    log.info('Delete event for node node="%s"', node.metadata.name)
    try:
        sched.cache.remove_node(node)
    except Exception as err:
        log.error("Scheduler cache RemoveNode failed: %s", err)


def node_scheduling_properties_change(
    new_node: client.V1Node, old_node: client.V1Node
) -> ClusterEvent | None:
    """The first change, in this order, that may make a pod fit the node; None if there is
    none (upstream: nodeSchedulingPropertiesChange)."""
    if node_spec_unschedulable_changed(new_node, old_node):
        return NODE_SPEC_UNSCHEDULABLE_CHANGE
    if node_allocatable_changed(new_node, old_node):
        return NODE_ALLOCATABLE_CHANGE
    if node_labels_changed(new_node, old_node):
        return NODE_LABEL_CHANGE
    if node_taints_changed(new_node, old_node):
        return NODE_TAINT_CHANGE
    if node_conditions_changed(new_node, old_node):
        return NODE_CONDITION_CHANGE
    return None


def node_spec_unschedulable_changed(new_node: client.V1Node, old_node: client.V1Node) -> bool:
    """Uncordoned: ``spec.unschedulable`` became false (being cordoned helps no pod)."""
    new, old = bool(new_node.spec.unschedulable), bool(old_node.spec.unschedulable)
    return new != old and not new


def node_allocatable_changed(new_node: client.V1Node, old_node: client.V1Node) -> bool:
    return _status(old_node).allocatable != _status(new_node).allocatable


def node_labels_changed(new_node: client.V1Node, old_node: client.V1Node) -> bool:
    return (old_node.metadata.labels or {}) != (new_node.metadata.labels or {})


def node_taints_changed(new_node: client.V1Node, old_node: client.V1Node) -> bool:
    return (old_node.spec.taints or []) != (new_node.spec.taints or [])


def node_conditions_changed(new_node: client.V1Node, old_node: client.V1Node) -> bool:
    """Only each condition's status counts, not its heartbeat times or messages."""

    def statuses(node: client.V1Node) -> dict[str, str]:
        return {c.type: c.status for c in _status(node).conditions or []}

    return statuses(old_node) != statuses(new_node)


def _status(node: client.V1Node) -> client.V1NodeStatus:
    return node.status or client.V1NodeStatus()


def pre_check_for_node(node_info: NodeInfo) -> PreEnqueueCheck:
    """Whether a pod could fit this node at all: a new or changed node moves only those pods
    (upstream: preCheckForNode). The checks are fixed, whichever plugins are enabled: the
    pod's requests against what the node has left (noderesources.Fits, with the pods the
    cache counts on it), its nodeName, its required node affinity, and the node's NoSchedule
    and NoExecute taints it does not tolerate. A pod that fails them stays in
    unschedulableQ; the move request is made all the same.

    Not implemented: upstream's host ports check (nodeports.Fits): no step counts host ports.
    """
    node = node_info.node()
    assert node is not None  # the cache returns the NodeInfo of the node it was given

    def check(pod: client.V1Pod) -> bool:
        if fits_request(compute_pod_resource_request(pod).resource, node_info):
            return False
        if pod.spec.node_name and pod.spec.node_name != node.metadata.name:
            return False
        # Parse errors are ignored, as upstream ignores them: such a term matches nothing.
        matches, _ = get_required_node_affinity(pod).match(node)
        if not matches:
            return False
        _, untolerated = find_matching_untolerated_taint(
            node.spec.taints,
            pod.spec.tolerations,
            # TaintToleration's Filter only minds these two effects.
            lambda t: t.effect in ("NoSchedule", "NoExecute"),
        )
        return not untolerated

    return check


# --- assigned pods -----------------------------------------------------------------------------


def add_pod_to_cache(sched: Scheduler, pod: client.V1Pod) -> None:
    """A pod was bound, or created bound (upstream: addPodToCache)."""
    log.debug('Add event for scheduled pod pod="%s"', meta_namespace_key(pod))  # V(3) upstream
    try:
        sched.cache.add_pod(pod)
    except Exception as err:
        log.error('Scheduler cache AddPod failed pod="%s": %s', meta_namespace_key(pod), err)
    sched.scheduling_queue.assigned_pod_added(pod)


def update_pod_in_cache(sched: Scheduler, old_pod: client.V1Pod, new_pod: client.V1Pod) -> None:
    """A bound pod changed (upstream: updatePodInCache).

    A delete and a re-create under the same name can reach the informer merged into one
    update: a new UID means another pod, so it counts as the old one deleted and the new one
    added, as upstream does.
    """
    if old_pod.metadata.uid != new_pod.metadata.uid:
        delete_pod_from_cache(sched, old_pod)
        add_pod_to_cache(sched, new_pod)
        return
    try:
        sched.cache.update_pod(old_pod, new_pod)
    except Exception as err:
        log.error('Scheduler cache UpdatePod failed pod="%s": %s', meta_namespace_key(new_pod), err)
    sched.scheduling_queue.assigned_pod_updated(new_pod)


def delete_pod_from_cache(sched: Scheduler, pod: Any) -> None:
    """A bound pod went away: its place is free (upstream: deletePodFromCache)."""
    pod = pod.obj if isinstance(pod, DeletedFinalStateUnknown) else pod
    log.debug('Delete event for scheduled pod pod="%s"', meta_namespace_key(pod))  # V(3) upstream
    try:
        sched.cache.remove_pod(pod)
    except Exception as err:
        log.error('Scheduler cache RemovePod failed pod="%s": %s', meta_namespace_key(pod), err)
    sched.scheduling_queue.move_all_to_active_or_backoff_queue(ASSIGNED_POD_DELETE)


# --- unassigned pods ---------------------------------------------------------------------------


def add_pod_to_scheduling_queue(sched: Scheduler, pod: client.V1Pod) -> None:
    """A new pod to schedule (upstream: addPodToSchedulingQueue)."""
    log.debug('Add event for unscheduled pod pod="%s"', meta_namespace_key(pod))  # V(3) upstream
    sched.scheduling_queue.add(pod)


def update_pod_in_scheduling_queue(
    sched: Scheduler, old_pod: client.V1Pod, new_pod: client.V1Pod
) -> None:
    """Pass a pod's update to the queue (upstream: updatePodInSchedulingQueue).

    An update carrying the same resourceVersion (an informer's relist) is not a change: passing
    it on would queue again a pod that is being scheduled (upstream: issue 96071).
    An update of an assumed pod (one in its binding cycle) is ignored too, as upstream: queued
    again, the pod would run a second cycle while the first waits at Permit or binds.
    """
    if old_pod.metadata.resource_version == new_pod.metadata.resource_version:
        return
    if sched.cache.is_assumed_pod(new_pod):
        return
    sched.scheduling_queue.update(old_pod, new_pod)


def delete_pod_from_scheduling_queue(sched: Scheduler, pod: Any) -> None:
    """The pod was deleted, or bound (upstream: deletePodFromSchedulingQueue). A bound pod is
    not assumed any more: upstream's cache confirms it when the informer sees it.

    A pod deleted while it waits on Permit is rejected there, which ends its binding cycle;
    then, as upstream, the pods it was keeping out get their chance.
    """
    pod = pod.obj if isinstance(pod, DeletedFinalStateUnknown) else pod
    log.debug('Delete event for unscheduled pod pod="%s"', meta_namespace_key(pod))  # V(3) upstream
    sched.scheduling_queue.delete(pod)
    try:
        fwk = sched.framework_for_pod(pod)
    except KeyError as err:
        # Cannot happen: the informer hands over only the pods a profile names.
        log.error("Unable to get profile err=%s pod=%s", err, meta_namespace_key(pod))
        return
    if fwk.reject_waiting_pod(pod.metadata.uid):
        sched.scheduling_queue.move_all_to_active_or_backoff_queue(ASSIGNED_POD_DELETE)
