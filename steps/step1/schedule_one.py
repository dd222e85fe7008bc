"""One scheduling attempt for one pod: pick a node and bind the pod to it.

Upstream: pkg/scheduler/schedule_one.go (scheduleOne, bind); in v1.23 these lived in
pkg/scheduler/scheduler.go and generic_scheduler.go (Schedule), and binding in the
DefaultBinder plugin (pkg/scheduler/framework/plugins/defaultbinder).
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING

from kubernetes import client

from minisched.cluster import connection_error_reason
from minisched.informer import meta_namespace_key

if TYPE_CHECKING:
    from .scheduler import Scheduler

log = logging.getLogger(__name__)


def schedule_one(sched: Scheduler) -> None:
    """Pop one pod, choose a node at random, bind."""
    pod = sched.scheduling_queue.pop()
    if pod is None:
        return  # the queue was closed: the scheduler is stopping
    key = meta_namespace_key(pod)
    if pod.metadata.deletion_timestamp:
        # Upstream (skipPodSchedule) also tells the pod's events why it was never tried.
        message = f"skip schedule deleting pod: {key}"
        sched.event_recorder.eventf(pod, "Warning", "FailedScheduling", "Scheduling", message)
        log.info('Skip schedule deleting pod pod="%s"', key)
        return
    # Upstream logs this at V(3) and only the binding at V(2): one line per pod unless -vv.
    log.debug('Attempting to schedule pod pod="%s"', key)
    sched.recorder.record("attempt", pod=key)

    nodes = sched.node_lister.list()
    if not nodes:
        # Not implemented: re-queueing. The pod is dropped until something re-adds it.
        log.warning('Error scheduling pod: no nodes available to schedule pods pod="%s"', key)
        sched.recorder.record("error", pod=key, message="no nodes available to schedule pods")
        return

    # Simplified: no filtering and no scoring yet; every node is as good as any other.
    node_name = nodes[sched.rng.randrange(len(nodes))].metadata.name
    sched.recorder.record("selected", pod=key, node=node_name, among=len(nodes))

    err = bind(sched, pod, node_name)
    if err == POD_NOT_FOUND:
        # The pod was deleted before its binding (upstream: the error func's IsNotFound case,
        # logged at V(2)). Differs from upstream, which records the failure all the same (a
        # FailedScheduling event, a status update that finds no pod): here it just ends.
        log.info('Pod was deleted before it was bound pod="%s"', key)
        sched.recorder.record("queue", pod=key, queue="none", event="deleted before binding")
        return
    if err:
        # Not implemented: re-queueing. The pod is dropped until something re-adds it.
        log.warning('Failed to bind pod pod="%s" node="%s": %s', key, node_name, err)
        sched.recorder.record("error", pod=key, message=f"binding rejected: {err}")
        return
    log.info('Successfully bound pod to node pod="%s" node="%s"', key, node_name)
    sched.recorder.record("bound", pod=key, node=node_name)
    sched.event_recorder.eventf(
        pod, "Normal", "Scheduled", "Binding", f"Successfully assigned {key} to {node_name}"
    )


# What bind returns when the API server no longer has the pod: no failure to report.
POD_NOT_FOUND = "pod not found"


def bind(sched: Scheduler, pod: client.V1Pod, node_name: str) -> str | None:
    """Create the pods/binding subresource, as DefaultBinder does; an error message or None.

    The message is upstream's: the framework's wrapping of the Bind plugin's error, whose text
    is the message of the Status the API server answered with.

    The API server answers 201 with a Status, which the official client cannot read as a
    V1Binding: ask for the raw response and read it, so the connection goes back to the pool.
    """
    binding = client.V1Binding(
        metadata=client.V1ObjectMeta(
            name=pod.metadata.name, namespace=pod.metadata.namespace, uid=pod.metadata.uid
        ),
        target=client.V1ObjectReference(kind="Node", api_version="v1", name=node_name),
    )
    try:
        response = sched.client.create_namespaced_pod_binding(
            pod.metadata.name, pod.metadata.namespace, binding, _preload_content=False
        )
        response.data  # noqa: B018 -- reading the body releases the connection
    except client.ApiException as e:
        if e.status == 404:
            return POD_NOT_FOUND
        return f'running Bind plugin "DefaultBinder": {status_message(e)}'
    except Exception as e:  # the connection failed: say why, not urllib3's nested reprs
        return f'running Bind plugin "DefaultBinder": {connection_error_reason(e)}'
    return None


def status_message(e: client.ApiException) -> str:
    """The ``message`` of the Status the API server refused with, which is all client-go's
    StatusError prints; the status line when the body is not a Status."""
    try:
        message = json.loads(e.body or "").get("message")
    except (ValueError, AttributeError):
        message = None
    return message or f"{e.status} {e.reason}"
