"""One scheduling attempt for one pod: find the node for it, and bind the pod there.

Upstream, at v1.23 (later releases moved most of it to pkg/scheduler/schedule_one.go):

- pkg/scheduler/scheduler.go: scheduleOne, recordSchedulingFailure, updatePod;
- pkg/scheduler/generic_scheduler.go: Schedule, findNodesThatFitPod, prioritizeNodes, selectHost;
- pkg/scheduler/factory.go: MakeDefaultErrorFunc;
- pkg/scheduler/framework/plugins/defaultbinder: DefaultBinder.Bind.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING

from kubernetes import client

from minisched.cluster import connection_error_reason
from minisched.informer import meta_namespace_key
from minisched.rand import intn

from . import framework
from .framework import Code
from .runtime import Framework

if TYPE_CHECKING:
    from .scheduler import Scheduler

log = logging.getLogger(__name__)

# The PodScheduled condition's reasons (upstream: v1.PodReasonUnschedulable, SchedulerError).
REASON_UNSCHEDULABLE = "Unschedulable"
REASON_SCHEDULER_ERROR = "SchedulerError"


class NoNodesAvailableError(Exception):
    """The cluster has no nodes (upstream: ErrNoNodesAvailable)."""

    def __init__(self) -> None:
        super().__init__("no nodes available to schedule pods")


def schedule_one(sched: Scheduler) -> None:
    """Pop one pod, find the node for it, bind."""
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
    fwk = sched.framework

    try:
        node_name = schedule_pod(sched, fwk, pod)
    except Exception as err:
        # Every failure of Schedule, even a plugin's error, is reported as Unschedulable.
        record_scheduling_failure(sched, pod, err, REASON_UNSCHEDULABLE)
        return
    sched.recorder.record("selected", pod=key, node=node_name)

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
        # Simplified: no FailedScheduling event or PodScheduled condition either (upstream
        # records them for every failure): here the condition's update would queue it again.
        log.warning('Failed to bind pod pod="%s" node="%s": %s', key, node_name, err)
        sched.recorder.record("error", pod=key, message=f"binding rejected: {err}")
        return
    log.info('Successfully bound pod to node pod="%s" node="%s"', key, node_name)
    sched.recorder.record("bound", pod=key, node=node_name)
    sched.event_recorder.eventf(
        pod, "Normal", "Scheduled", "Binding", f"Successfully assigned {key} to {node_name}"
    )


def schedule_pod(
    sched: Scheduler,
    fwk: Framework,
    pod: client.V1Pod,
) -> str:
    """The name of the node for the pod; raises FitError when no node fits.

    Upstream: genericScheduler.Schedule.
    """
    nodes = sched.node_lister.list()
    if not nodes:
        raise NoNodesAvailableError()

    feasible_nodes, diagnosis = find_nodes_that_fit_pod(sched, fwk, pod, nodes)
    if not feasible_nodes:
        raise framework.FitError(pod, len(nodes), diagnosis)
    # When only one node passed the filters, it is the one: no need to score it.
    if len(feasible_nodes) == 1:
        return feasible_nodes[0].metadata.name

    priority_list = prioritize_nodes(sched, fwk, pod, feasible_nodes)
    return select_host(sched, priority_list)


def find_nodes_that_fit_pod(
    sched: Scheduler,
    fwk: Framework,
    pod: client.V1Pod,
    nodes: list[client.V1Node],
) -> tuple[list[client.V1Node], framework.Diagnosis]:
    """Run the Filter plugins on every node: the nodes that pass, and why the others failed.

    Upstream: findNodesThatFitPod and findNodesThatPassFilters. Simplified: every node is
    checked, one after the other; upstream checks nodes in parallel (16 goroutines) and stops
    once it has found numFeasibleNodesToFind of them (all nodes below 100 nodes, then a
    shrinking percentage).
    """
    key = meta_namespace_key(pod)
    diagnosis = framework.Diagnosis()
    feasible_nodes: list[client.V1Node] = []
    for node in nodes:
        status = fwk.run_filter_plugins(pod, node).merge()
        if status.code == Code.ERROR:
            raise status.as_error() or Exception(status.message())
        if status.is_success():
            feasible_nodes.append(node)
            continue
        name = node.metadata.name
        diagnosis.node_to_status_map[name] = status
        diagnosis.unschedulable_plugins.add(status.failed_plugin)
        sched.recorder.record(
            "filter", pod=key, node=name, plugin=status.failed_plugin, reason=status.message()
        )
    sched.recorder.record("feasible", pod=key, passed=len(feasible_nodes), nodes=len(nodes))
    return feasible_nodes, diagnosis


def prioritize_nodes(
    sched: Scheduler,
    fwk: Framework,
    pod: client.V1Pod,
    nodes: list[client.V1Node],
) -> list[framework.NodeScore]:
    """Each node's total score: the sum of every Score plugin's final score.

    Upstream: prioritizeNodes. Simplified: no extenders.
    """
    # With no Score plugins every node scores 1.
    if not fwk.has_score_plugins():
        return [framework.NodeScore(node.metadata.name, 1) for node in nodes]

    scores_map, status = fwk.run_score_plugins(pod, nodes)
    if not status.is_success():
        raise status.as_error() or Exception(status.message())

    key = meta_namespace_key(pod)
    # As upstream (klog.V(10).Enabled()), ask once per cycle, not once per node, whether each
    # node's score is wanted: in the log, or in the report (the scheduler alone shows none).
    verbose = log.isEnabledFor(logging.DEBUG)
    if verbose or sched.recorder.wants_detail(key):
        for plugin, node_score_list in scores_map.items():
            for node_score in node_score_list:
                if verbose:
                    log.debug(
                        'Plugin scored node for pod pod="%s" plugin="%s" node="%s" score=%d',
                        key,
                        plugin,
                        node_score.name,
                        node_score.score,
                    )
                sched.recorder.record(
                    "score", pod=key, node=node_score.name, plugin=plugin, score=node_score.score
                )

    # Summarize all scores.
    result = [framework.NodeScore(node.metadata.name, 0) for node in nodes]
    for node_score_list in scores_map.values():
        for total, node_score in zip(result, node_score_list, strict=True):
            total.score += node_score.score
    return result


def select_host(sched: Scheduler, node_score_list: list[framework.NodeScore]) -> str:
    """The node with the highest score; ties are broken at random with ``sched.rng``.

    Upstream: genericScheduler.selectHost. It walks the list once, keeping the best node so
    far; the n-th node to tie with the best replaces it with probability 1/n (reservoir
    sampling), so every top-scoring node is equally likely.
    """
    if not node_score_list:
        raise Exception("empty priorityList")
    max_score = node_score_list[0].score
    selected = node_score_list[0].name
    cnt_of_max_score = 1
    for ns in node_score_list[1:]:
        if ns.score > max_score:
            max_score = ns.score
            selected = ns.name
            cnt_of_max_score = 1
        elif ns.score == max_score:
            cnt_of_max_score += 1
            # Go's rand.Intn(cntOfMaxScore), on the seeded rng (minisched/rand.py).
            if intn(sched.rng, cnt_of_max_score) == 0:
                # Replace the candidate with probability 1/cnt_of_max_score.
                selected = ns.name
    return selected


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


# --- failures ----------------------------------------------------------------------------------


def record_scheduling_failure(
    sched: Scheduler, pod: client.V1Pod, err: BaseException, reason: str
) -> None:
    """Tell everyone the pod was not scheduled: the logs and the report (``error_func``), a
    FailedScheduling event, and the pod's PodScheduled condition.

    Upstream: Scheduler.recordSchedulingFailure.
    """
    error_func(sched, pod, err)
    message = str(err)
    sched.event_recorder.eventf(pod, "Warning", "FailedScheduling", "Scheduling", message)
    condition = {
        "type": "PodScheduled",
        "status": "False",
        "reason": reason,
        "message": message,
    }
    update_pod(sched, pod, condition)


def error_func(sched: Scheduler, pod: client.V1Pod, err: BaseException) -> None:
    """Log why the pod was not scheduled (upstream: MakeDefaultErrorFunc, the sched.Error func).

    Not implemented: re-queueing. Upstream puts the pod back in the queue here; this scheduler
    leaves it pending until something re-adds it.
    """
    key = meta_namespace_key(pod)
    if isinstance(err, NoNodesAvailableError):
        log.info(
            'Unable to schedule pod; no nodes are registered to the cluster; waiting pod="%s"',
            key,
        )
        sched.recorder.record("unschedulable", pod=key, message=str(err))
    elif isinstance(err, framework.FitError):
        log.info('Unable to schedule pod; no fit; waiting pod="%s" err="%s"', key, err)
        sched.recorder.record("unschedulable", pod=key, message=str(err))
    else:
        log.error('Error scheduling pod pod="%s" err="%s"', key, err)
        sched.recorder.record("error", pod=key, message=str(err))


def update_pod(sched: Scheduler, pod: client.V1Pod, condition: dict[str, str]) -> None:
    """Set a condition on the pod through its status subresource (upstream: updatePod).

    As upstream, nothing is sent when the pod already has that condition, and a failure is
    logged, never raised: the scheduler goes on either way.
    Simplified: no lastTransitionTime, and no nominatedNodeName (no preemption here).
    """
    for c in (pod.status and pod.status.conditions) or []:
        if c.type == condition["type"] and (c.status, c.reason, c.message) == (
            condition["status"],
            condition["reason"],
            condition["message"],
        ):
            return
    try:
        sched.client.patch_namespaced_pod_status(
            pod.metadata.name,
            pod.metadata.namespace,
            {"status": {"conditions": [condition]}},
            _content_type="application/strategic-merge-patch+json",
        )
    except client.ApiException as e:  # its str() carries every header: say what matters
        if e.status == 404:
            # Differs from upstream (an error line): the pod was deleted meanwhile, which is
            # no error of the scheduler's.
            log.info(
                'Pod was deleted before its status was updated pod="%s"', meta_namespace_key(pod)
            )
            return
        log.error('Error updating pod pod="%s": %s %s', meta_namespace_key(pod), e.status, e.reason)
    except Exception as e:
        log.error(
            'Error updating pod pod="%s": %s', meta_namespace_key(pod), connection_error_reason(e)
        )
