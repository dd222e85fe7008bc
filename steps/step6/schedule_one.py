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
from minisched.goroutine import go
from minisched.informer import meta_namespace_key
from minisched.rand import intn

from . import framework
from .cycle_state import CycleState
from .framework import Code, QueuedPodInfo
from .runtime import Framework
from .scheduling_queue import ASSIGNED_POD_DELETE

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
    """Pop one pod, find the node for it, and start its binding cycle."""
    pod_info = sched.scheduling_queue.pop()
    if pod_info is None:
        return  # the queue was closed: the scheduler is stopping
    # The same QueuedPodInfo goes back to the queue if this attempt fails: it carries the
    # attempts (and so the backoff) and the first attempt's time across retries.
    pod = pod_info.pod
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
    # Each cycle gets its own state: what plugins compute for this pod dies with the cycle.
    state = CycleState()

    try:
        node_name = schedule_pod(sched, fwk, state, pod)
    except Exception as err:
        # Every failure of Schedule, even a plugin's error, is reported as Unschedulable.
        record_scheduling_failure(sched, pod_info, err, REASON_UNSCHEDULABLE)
        return
    sched.recorder.record("selected", pod=key, node=node_name)

    # Assume the pod: until the informer sees it bound, or its attempt fails, its updates
    # stay out of the queue (update_pod_in_scheduling_queue), as upstream's assumed pods.
    # Simplified: upstream assumes it into the cache, with its node, so that the next cycles
    # count it there; nothing here counts pods on nodes, so a set of UIDs does. Not
    # implemented: Reserve.
    sched.assumed_pods.add(pod.metadata.uid)
    permit_status = fwk.run_permit_plugins(state, pod, node_name)
    if permit_status.code != Code.WAIT and not permit_status.is_success():
        unschedulable = permit_status.is_unschedulable()
        reason = REASON_UNSCHEDULABLE if unschedulable else REASON_SCHEDULER_ERROR
        record_scheduling_failure(sched, pod_info, permit_status.as_error() or Exception(), reason)
        return
    waiting_pod = fwk.get_waiting_pod(pod.metadata.uid)
    # A plugin may already have allowed the pod (a 0 s wait): then nothing is pending.
    plugins = sorted(waiting_pod.get_pending_plugins()) if waiting_pod is not None else []
    if plugins:
        deadline = waiting_pod.get_deadline() if waiting_pod is not None else 0.0
        sched.recorder.record(
            "waiting", pod=key, node=node_name, plugins=plugins, deadline=deadline
        )

    # Bind asynchronously (upstream: go func()): the next scheduling cycle starts while this
    # pod waits on Permit and binds. On threads kept for the next binding (minisched.goroutine);
    # a stopping scheduler does not wait for them (Scheduler.stop rejects the waiting pods,
    # which ends their waits).
    go(binding_cycle, sched, fwk, pod_info, node_name, name=f"binding {key}")


def binding_cycle(
    sched: Scheduler, fwk: Framework, pod_info: QueuedPodInfo, node_name: str
) -> None:
    """Wait for Permit, then bind (upstream: the go func() at the end of scheduleOne; a
    function of its own, bindingCycle, in later releases).

    A failure here re-queues the pod like any other, after a move request: upstream makes one
    because forgetting the assumed pod frees its place on the node. Simplified: there is no
    cache to forget the pod from, but the move request matters for the pod itself, which then
    goes to podBackoffQ and is retried after its backoff instead of waiting in unschedulableQ
    for an event.
    """
    pod = pod_info.pod
    key = meta_namespace_key(pod)
    status = fwk.wait_on_permit(pod)
    if not status.is_success():
        if left_while_waiting(sched, pod):
            return
        reason = REASON_UNSCHEDULABLE if status.is_unschedulable() else REASON_SCHEDULER_ERROR
        record_scheduling_failure(sched, pod_info, status.as_error() or Exception(), reason)
        # Made after the pod is back in the queue, and not for the pod itself: a pod that was
        # rejected while it waited goes to unschedulableQ, not straight back to podBackoffQ.
        sched.scheduling_queue.move_all_to_active_or_backoff_queue(
            ASSIGNED_POD_DELETE, lambda p: p.metadata.uid != pod.metadata.uid
        )
        return

    err = bind(sched, pod, node_name)
    if err == POD_NOT_FOUND:
        # The pod was deleted before its binding (upstream: the error func's IsNotFound case,
        # logged at V(2)). Differs from upstream, which records the failure all the same (a
        # FailedScheduling event, a status update that finds no pod): here it just ends.
        log.info('Pod was deleted before it was bound pod="%s"', key)
        sched.recorder.record("queue", pod=key, queue="none", event="deleted before binding")
        return
    if err:
        log.warning('Failed to bind pod pod="%s" node="%s": %s', key, node_name, err)
        sched.scheduling_queue.move_all_to_active_or_backoff_queue(ASSIGNED_POD_DELETE)
        record_scheduling_failure(
            sched, pod_info, Exception(f"binding rejected: {err}"), REASON_SCHEDULER_ERROR
        )
        return
    log.info('Successfully bound pod to node pod="%s" node="%s"', key, node_name)
    sched.recorder.record("bound", pod=key, node=node_name)
    sched.event_recorder.eventf(
        pod, "Normal", "Scheduled", "Binding", f"Successfully assigned {key} to {node_name}"
    )


def left_while_waiting(sched: Scheduler, pod: client.V1Pod) -> bool:
    """Whether a pod whose Permit wait failed has left this scheduler meanwhile: deleted, or
    rejected by ``Scheduler.stop``. Its binding cycle then ends here, with no error.

    Differs from upstream: upstream handles both as any other failure, and logs "Error
    scheduling pod" and a failed status update for a pod that no longer exists (a stopping
    kube-scheduler's binding goroutines just end with the process).
    """
    key = meta_namespace_key(pod)
    informer = sched.pod_informer
    if informer.has_synced() and informer.store.get_by_key(key) is None:
        log.info('Pod was deleted while it waited on Permit pod="%s"', key)
        sched.recorder.record("queue", pod=key, queue="none", event="deleted while on Permit")
        return True
    if sched.stopping():
        log.info('Scheduler stopped while pod waited on Permit; it stays pending pod="%s"', key)
        return True
    return False


def schedule_pod(
    sched: Scheduler,
    fwk: Framework,
    state: CycleState,
    pod: client.V1Pod,
) -> str:
    """The name of the node for the pod; raises FitError when no node fits.

    Upstream: genericScheduler.Schedule.
    """
    nodes = sched.node_lister.list()
    if not nodes:
        raise NoNodesAvailableError()

    feasible_nodes, diagnosis = find_nodes_that_fit_pod(sched, fwk, state, pod, nodes)
    if not feasible_nodes:
        raise framework.FitError(pod, len(nodes), diagnosis)
    # When only one node passed the filters, it is the one: no need to score it.
    if len(feasible_nodes) == 1:
        return feasible_nodes[0].metadata.name

    priority_list = prioritize_nodes(sched, fwk, state, pod, feasible_nodes)
    return select_host(sched, priority_list)


def find_nodes_that_fit_pod(
    sched: Scheduler,
    fwk: Framework,
    state: CycleState,
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
        status = fwk.run_filter_plugins(state, pod, node).merge()
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
    state: CycleState,
    pod: client.V1Pod,
    nodes: list[client.V1Node],
) -> list[framework.NodeScore]:
    """Each node's total score: the sum of every Score plugin's final score.

    Upstream: prioritizeNodes. Simplified: no extenders.
    """
    # With no Score plugins every node scores 1.
    if not fwk.has_score_plugins():
        return [framework.NodeScore(node.metadata.name, 1) for node in nodes]

    status = fwk.run_pre_score_plugins(state, pod, nodes)
    if not status.is_success():
        raise status.as_error() or Exception(status.message())

    scores_map, status = fwk.run_score_plugins(state, pod, nodes)
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
    sched: Scheduler, pod_info: QueuedPodInfo, err: BaseException, reason: str
) -> None:
    """Tell everyone the pod was not scheduled, and give it back to the queue: the queue and
    the logs (``error_func``), a FailedScheduling event, and the pod's PodScheduled condition.

    Upstream: Scheduler.recordSchedulingFailure; the pod is forgotten first (not assumed any
    more), as upstream's ForgetPod before it.
    """
    pod = pod_info.pod
    sched.assumed_pods.discard(pod.metadata.uid)
    error_func(sched, pod_info, err)
    message = str(err)
    sched.event_recorder.eventf(pod, "Warning", "FailedScheduling", "Scheduling", message)
    condition = {
        "type": "PodScheduled",
        "status": "False",
        "reason": reason,
        "message": message,
    }
    update_pod(sched, pod, condition)


def error_func(sched: Scheduler, pod_info: QueuedPodInfo, err: BaseException) -> None:
    """Log why the pod was not scheduled and put it back in the queue (upstream:
    MakeDefaultErrorFunc, the sched.Error func).

    A FitError sets the pod's rejecting plugins, every Filter plugin that rejected a node: only
    the events those plugins registered move it on. Any other failure (no nodes, an error, a
    Permit rejection or timeout, a failed bind) keeps the set of the pod's last FitError, empty
    (any event may help) if it never had one. That is v1.23; later releases record the
    rejecting Permit plugin too, and clear the set at every attempt.

    As upstream, the pod is re-read from the informer cache first: one that was deleted, or
    bound meanwhile, is not queued again.
    """
    pod = pod_info.pod
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
        pod_info.unschedulable_plugins = set(err.diagnosis.unschedulable_plugins)
    else:
        log.error('Error scheduling pod; retrying pod="%s" err="%s"', key, err)
        sched.recorder.record("error", pod=key, message=str(err))

    cached_pod = sched.pod_informer.store.get_by_key(key)
    if cached_pod is None:
        log.info('Pod doesn\'t exist in informer cache pod="%s"', key)
        return
    if cached_pod.spec.node_name:
        log.info(
            'Pod has been assigned to node. Abort adding it back to queue. pod="%s" node="%s"',
            key,
            cached_pod.spec.node_name,
        )
        return
    pod_info.update(cached_pod)
    queue = sched.scheduling_queue
    error = queue.add_unschedulable_if_not_present(pod_info, queue.scheduling_cycle)
    if error:
        log.error("Error occurred: %s", error)


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
