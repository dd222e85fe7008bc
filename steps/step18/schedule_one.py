"""One scheduling attempt for one pod: find the node for it, and bind the pod there.

Upstream, at v1.23 (later releases moved most of it to pkg/scheduler/schedule_one.go):

- pkg/scheduler/scheduler.go: scheduleOne, skipPodSchedule, assume, bind, extendersBinding,
  finishBinding, recordSchedulingFailure, updatePod;
- pkg/scheduler/generic_scheduler.go: Schedule, findNodesThatFitPod, evaluateNominatedNode,
  numFeasibleNodesToFind, findNodesThatPassFilters, findNodesThatPassExtenders,
  prioritizeNodes, selectHost;
- pkg/scheduler/factory.go: MakeDefaultErrorFunc.

The scheduler's extenders (``sched.extenders``, extender.py) are called at three places here:
after the Filter plugins (one after the other, each on the nodes the one before kept), after
the Score plugins (all at once, each on its own thread) and before the Bind plugins (the first
extender that binds the pod replaces them). Preemption calls them too (preemption.py). Each
call's duration is recorded (the ``extender`` event), in seconds: the time an extender adds to
every scheduling cycle.
"""

from __future__ import annotations

import copy
import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

import numpy as np
from kubernetes import client

from minisched.cluster import connection_error_reason
from minisched.goroutine import go
from minisched.informer import meta_namespace_key
from minisched.rand import intn
from minisched.recorder import NullRecorder, Recorder

from . import framework
from .cycle_state import CycleState, NotFoundError
from .framework import Code, NominatingInfo, NominatingMode, QueuedPodInfo, mode_of
from .nodearrays import FeasibleNodes, NodeArrays
from .runtime import Framework
from .scheduling_queue import ASSIGNED_POD_DELETE, nominated_node_name

if TYPE_CHECKING:
    from .scheduler import Scheduler

log = logging.getLogger(__name__)

# The PodScheduled condition's reasons (upstream: v1.PodReasonUnschedulable, SchedulerError).
REASON_UNSCHEDULABLE = "Unschedulable"
REASON_SCHEDULER_ERROR = "SchedulerError"

# What every failure but a FitError does to the pod's nomination: clears it (upstream:
# clearNominatedNode).
CLEAR_NOMINATED_NODE = NominatingInfo("", NominatingMode.OVERRIDE)


class NoNodesAvailableError(Exception):
    """The cluster has no nodes (upstream: ErrNoNodesAvailable)."""

    def __init__(self) -> None:
        super().__init__("no nodes available to schedule pods")


def schedule_one(sched: Scheduler) -> None:
    """Pop one pod, find the node for it, and start its binding cycle."""
    sched.bindings_in_flight.wait_for_room(sched.stopping)
    pod_info = sched.scheduling_queue.pop()
    if pod_info is None:
        return  # the queue was closed: the scheduler is stopping
    # The same QueuedPodInfo goes back to the queue if this attempt fails: it carries the
    # attempts (and so the backoff) and the first attempt's time across retries.
    pod = pod_info.pod
    key = meta_namespace_key(pod)
    try:
        fwk = sched.framework_for_pod(pod)
    except KeyError as err:
        # Cannot happen: only the pods a profile names are queued (responsible_for_pod).
        log.error("Error occurred err=%s", err)
        return
    if pod.metadata.deletion_timestamp:
        # Upstream (skipPodSchedule) also tells the pod's events why it was never tried.
        message = f"skip schedule deleting pod: {key}"
        sched.event_recorder.eventf(pod, "Warning", "FailedScheduling", "Scheduling", message)
        log.info('Skip schedule deleting pod pod="%s"', key)
        return
    # An update that came during the pod's last scheduling cycle, before it was assumed,
    # queued it again: it is being bound, so skip it (upstream: skipPodSchedule).
    if sched.cache.is_assumed_pod(pod):
        return
    # Upstream logs this at V(3) and only the binding at V(2): one line per pod unless -vv.
    log.debug('Attempting to schedule pod pod="%s"', key)
    sched.recorder.record("attempt", pod=key, profile=fwk.profile_name)
    # Each cycle gets its own state: what plugins compute for this pod dies with the cycle.
    state = CycleState()
    # An empty PodsToActivate, which plugins may fill (Coscheduling's Permit: the siblings).
    pods_to_activate = framework.PodsToActivate()
    state.write(framework.PODS_TO_ACTIVATE_KEY, pods_to_activate)

    # How long the scheduling algorithm takes, extenders included (upstream: the
    # scheduling_algorithm_duration_seconds metric): the report shows what a webhook costs.
    algorithm_start = time.perf_counter()
    try:
        node_name = schedule_pod(sched, fwk, state, pod)
    except Exception as err:
        # The pod may fit no node: PostFilter (preemption) may make room for it, so that it
        # fits in a later cycle; another pod may take that room meanwhile, which is harmless.
        nominating_info: NominatingInfo | None = CLEAR_NOMINATED_NODE
        if isinstance(err, framework.FitError):
            nominating_info = None
            if not fwk.has_post_filter_plugins():
                log.debug(
                    "No PostFilter plugins are registered, so no preemption will be performed"
                )
            else:
                result, status = fwk.run_post_filter_plugins(
                    state, pod, err.diagnosis.node_to_status_map
                )
                level = logging.ERROR if status.code == Code.ERROR else logging.DEBUG
                log.log(
                    level,
                    'Status after running PostFilter plugins for pod pod="%s" status="%s"',
                    key,
                    status.message() or status.code,
                )
                if result is not None:
                    nominating_info = result.nominating_info
        # Every failure of Schedule, even a plugin's error, is reported as Unschedulable.
        record_scheduling_failure(sched, pod_info, err, REASON_UNSCHEDULABLE, nominating_info)
        return
    seconds = time.perf_counter() - algorithm_start
    sched.recorder.record("selected", pod=key, node=node_name, seconds=seconds)

    # Tell the cache the pod now runs on the node, though it is not bound yet: the next cycle
    # counts it there while this pod waits and binds.
    try:
        assumed_pod = assume(sched, pod, node_name)
    except Exception as err:
        # Most probably a bug in the retry logic: report it, so the pod is tried again.
        record_scheduling_failure(sched, pod_info, err, REASON_SCHEDULER_ERROR)
        return
    sched.recorder.record("assumed", pod=key, node=node_name)

    reserve_status = fwk.run_reserve_plugins_reserve(state, assumed_pod, node_name)
    if not reserve_status.is_success():
        # Every Reserve plugin is given back its share, then the cache forgets the pod.
        fwk.run_reserve_plugins_unreserve(state, assumed_pod, node_name)
        forget(sched, assumed_pod)
        err = reserve_status.as_error() or Exception()
        record_scheduling_failure(sched, pod_info, err, REASON_SCHEDULER_ERROR)
        return

    permit_status = fwk.run_permit_plugins(state, assumed_pod, node_name)
    if permit_status.code != Code.WAIT and not permit_status.is_success():
        unschedulable = permit_status.is_unschedulable()
        reason = REASON_UNSCHEDULABLE if unschedulable else REASON_SCHEDULER_ERROR
        fwk.run_reserve_plugins_unreserve(state, assumed_pod, node_name)
        forget(sched, assumed_pod)
        err = permit_status.as_error() or Exception()
        record_scheduling_failure(sched, pod_info, err, reason)
        return
    waiting_pod = fwk.get_waiting_pod(pod.metadata.uid)
    # A plugin may already have allowed the pod (a 0 s wait): then nothing is pending.
    plugins = sorted(waiting_pod.get_pending_plugins()) if waiting_pod is not None else []
    if plugins:
        deadline = waiting_pod.get_deadline() if waiting_pod is not None else 0.0
        sched.recorder.record(
            "waiting", pod=key, node=node_name, plugins=plugins, deadline=deadline
        )

    # At the end of a successful scheduling cycle, move the stashed pods up, and forget them.
    with pods_to_activate.lock:
        to_activate, pods_to_activate.map = pods_to_activate.map, {}
    if to_activate:
        sched.scheduling_queue.activate(to_activate)

    # Bind asynchronously (upstream: go func()): the next scheduling cycle starts while this
    # pod waits on Permit and binds. On threads kept for the next binding (minisched.goroutine);
    # a stopping scheduler does not wait for them (Scheduler.stop rejects the waiting pods,
    # which ends their waits).
    # A pod that waits on Permit does not count: its siblings must still be scheduled.
    counted = not plugins
    if counted:
        sched.bindings_in_flight.add()
    go(
        counted_binding_cycle,
        sched,
        fwk,
        state,
        pod_info,
        assumed_pod,
        node_name,
        counted,
        name=f"binding {key}",
    )


# How many pods may be binding at once (not waiting on Permit, their binding not yet done)
# before the next scheduling cycle waits for one of them.
MAX_BINDINGS_IN_FLIGHT = 16


class BindingsInFlight:
    """The pods being bound, counted, so that the scheduling thread waits while there are
    MAX_BINDINGS_IN_FLIGHT of them.

    Differs from upstream: kube-scheduler starts a goroutine per binding and never waits for
    them; its POSTs share one HTTP/2 connection. Here each binding is a thread with a
    connection of its own, and the scheduling thread, which needs the GIL for every cycle, can
    start them faster than they end: hundreds of threads then wait for the GIL, and for
    connections the client's pool has no room to keep (each one a new TLS handshake). Measured
    with nox -s bench (500 nodes): up to 175 binding threads at once, and 300 connections
    opened and thrown away, without this limit.
    """

    def __init__(self, limit: int = MAX_BINDINGS_IN_FLIGHT) -> None:
        self.limit = limit
        self._count = 0
        self._changed = threading.Condition()

    def add(self) -> None:
        with self._changed:
            self._count += 1

    def done(self) -> None:
        with self._changed:
            self._count -= 1
            self._changed.notify_all()

    def wait_for_room(self, stopping: Callable[[], bool]) -> None:
        """Return once fewer than ``limit`` pods are being bound, or the scheduler stops."""
        with self._changed:
            while self._count >= self.limit and not stopping():
                self._changed.wait(0.1)


def counted_binding_cycle(
    sched: Scheduler,
    fwk: Framework,
    state: CycleState,
    pod_info: QueuedPodInfo,
    assumed_pod: client.V1Pod,
    node_name: str,
    counted: bool,
) -> None:
    """binding_cycle, counted in ``sched.bindings_in_flight`` while it runs if ``counted``."""
    try:
        binding_cycle(sched, fwk, state, pod_info, assumed_pod, node_name)
    finally:
        if counted:
            sched.bindings_in_flight.done()


def binding_cycle(
    sched: Scheduler,
    fwk: Framework,
    state: CycleState,
    pod_info: QueuedPodInfo,
    assumed_pod: client.V1Pod,
    node_name: str,
) -> None:
    """Wait for Permit, run PreBind, bind, run PostBind (upstream: the go func() at the end of
    scheduleOne; a function of its own, bindingCycle, in later releases).

    Every failure runs Unreserve and forgets the assumed pod, then re-queues the pod. Once it
    is forgotten, its place on the node is free: that counts as an assigned pod deleted, so the
    pods that wait for room are moved (and a pod re-queued after the move goes to podBackoffQ).
    """
    pod = pod_info.pod
    key = meta_namespace_key(pod)
    status = fwk.wait_on_permit(assumed_pod)
    if not status.is_success():
        if left_while_waiting(sched, pod):
            return
        reason = REASON_UNSCHEDULABLE if status.is_unschedulable() else REASON_SCHEDULER_ERROR
        fwk.run_reserve_plugins_unreserve(state, assumed_pod, node_name)
        forgotten = forget(sched, assumed_pod)
        err = status.as_error() or Exception()
        record_scheduling_failure(sched, pod_info, err, reason)
        # Made after the pod is back in the queue, and not for the pod itself: a pod that was
        # rejected while it waited goes to unschedulableQ, not straight back to podBackoffQ.
        if forgotten:
            sched.scheduling_queue.move_all_to_active_or_backoff_queue(
                ASSIGNED_POD_DELETE, lambda p: p.metadata.uid != pod.metadata.uid
            )
        return

    status = fwk.run_pre_bind_plugins(state, assumed_pod, node_name)
    if not status.is_success():
        fwk.run_reserve_plugins_unreserve(state, assumed_pod, node_name)
        if forget(sched, assumed_pod):
            sched.scheduling_queue.move_all_to_active_or_backoff_queue(ASSIGNED_POD_DELETE)
        err = status.as_error() or Exception()
        record_scheduling_failure(sched, pod_info, err, REASON_SCHEDULER_ERROR)
        return

    err = bind(sched, fwk, state, assumed_pod, node_name)
    if err is not None:
        # A pod deleted before its binding (NotFound) fails the same way: the error func
        # tells it apart, as upstream's does, and does not queue a pod the informer lost.
        if not framework.is_not_found(err):
            log.warning('Failed to bind pod pod="%s" node="%s": %s', key, node_name, err)
        fwk.run_reserve_plugins_unreserve(state, assumed_pod, node_name)
        if forget(sched, assumed_pod):
            sched.scheduling_queue.move_all_to_active_or_backoff_queue(ASSIGNED_POD_DELETE)
        rejected = Exception(f"binding rejected: {err}")
        rejected.__cause__ = err  # Go's %w: IsNotFound still sees the API server's 404
        record_scheduling_failure(sched, pod_info, rejected, REASON_SCHEDULER_ERROR)
        return
    log.info('Successfully bound pod to node pod="%s" node="%s"', key, node_name)
    sched.recorder.record("bound", pod=key, node=node_name)
    fwk.run_post_bind_plugins(state, assumed_pod, node_name)
    # At the end of a successful binding cycle, move up the pods stashed since.
    try:
        pods_to_activate = state.read(framework.PODS_TO_ACTIVATE_KEY)
    except NotFoundError:
        return
    if isinstance(pods_to_activate, framework.PodsToActivate) and pods_to_activate.map:
        with pods_to_activate.lock:
            to_activate = dict(pods_to_activate.map)
        sched.scheduling_queue.activate(to_activate)


def assume(sched: Scheduler, pod: client.V1Pod, node_name: str) -> client.V1Pod:
    """The pod as assumed on the node: a copy with ``spec.node_name`` set, now in the cache
    (upstream: assume). Raises when the cache refuses it.

    Simplified: the pod and its spec are copied, not the whole pod (upstream: DeepCopy); only
    ``spec.node_name`` changes.
    """
    assumed_pod = copy.copy(pod)
    assumed_pod.spec = copy.copy(pod.spec)
    assumed_pod.spec.node_name = node_name
    try:
        sched.cache.assume_pod(assumed_pod)
    except Exception as err:
        log.error('Scheduler cache AssumePod failed pod="%s": %s', meta_namespace_key(pod), err)
        raise
    # A nominated pod now counts on its node as assumed: its nomination is done.
    sched.scheduling_queue.pod_nominator.delete_nominated_pod_if_exists(assumed_pod)
    return assumed_pod


def forget(sched: Scheduler, assumed_pod: client.V1Pod) -> bool:
    """Take the assumed pod out of the cache; whether that worked (upstream: the
    ``SchedulerCache.ForgetPod`` calls of scheduleOne, which log their error)."""
    try:
        sched.cache.forget_pod(assumed_pod)
    except Exception as err:
        log.error("scheduler cache ForgetPod failed: %s", err)
        return False
    key = meta_namespace_key(assumed_pod)
    sched.recorder.record("forgotten", pod=key, node=assumed_pod.spec.node_name)
    return True


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

    Upstream: genericScheduler.Schedule. The cycle reads nodes only from the snapshot, brought
    up to date here.
    """
    sched.cache.update_snapshot(sched.snapshot)
    nodes = sched.snapshot.node_infos().list()
    if not nodes:
        raise NoNodesAvailableError()

    feasible_nodes, diagnosis = find_nodes_that_fit_pod(sched, fwk, state, pod, nodes)
    if not feasible_nodes:
        raise framework.FitError(pod, len(nodes), diagnosis)
    # When only one node passed the filters, it is the one: no need to score it.
    if len(feasible_nodes) == 1:
        return feasible_nodes[0].metadata.name

    if not sched.extenders and fwk.has_score_plugins():
        # Every node's score at once, from the columns (nodearrays.py).
        rows, totals = prioritize_nodes_batch(sched, fwk, state, pod, feasible_nodes)
        return sched.snapshot.node_arrays().names[rows[select_host_batch(sched, totals)]]
    priority_list = prioritize_nodes(sched, fwk, state, pod, feasible_nodes)
    return select_host(sched, priority_list)


def find_nodes_that_fit_pod(
    sched: Scheduler,
    fwk: Framework,
    state: CycleState,
    pod: client.V1Pod,
    nodes: list[framework.NodeInfo],
) -> tuple[list[client.V1Node], framework.Diagnosis]:
    """Run the PreFilter plugins once, then the Filter plugins until enough nodes pass, then
    the extenders on those: the nodes that passed, and why the others failed. A PreFilter that
    finds the pod unschedulable fails every node with its status, and no Filter or extender
    runs. A pod nominated to a node by an earlier preemption tries that node first, alone
    (Filter plugins and extenders): if it passes, it is the one.

    Upstream: findNodesThatFitPod, with evaluateNominatedNode (the PreferNominatedNode
    feature, beta and on by default in v1.23). Simplified: always on; no feature gate turns
    it off.
    """
    key = meta_namespace_key(pod)
    diagnosis = framework.Diagnosis()
    status = fwk.run_pre_filter_plugins(state, pod)
    if not status.is_success():
        if not status.is_unschedulable():
            raise status.as_error() or Exception(status.message())
        # Every node gets the same status (upstream shares the one Status too).
        for node_info in nodes:
            name = node_info.node().metadata.name
            diagnosis.node_to_status_map[name] = status
            sched.recorder.record(
                "filter", pod=key, node=name, plugin=status.failed_plugin, reason=status.message()
            )
        diagnosis.unschedulable_plugins.add(status.failed_plugin)
        sched.recorder.record("feasible", pod=key, passed=0, nodes=len(nodes))
        return [], diagnosis
    nnn = nominated_node_name(pod)
    nominated = sched.snapshot.node_info_map.get(nnn) if nnn else None
    if nominated is not None and nominated.node() is not None:
        try:
            feasible_nodes = evaluate_nominated_node(sched, fwk, state, pod, diagnosis, nominated)
        except Exception as err:
            # As upstream: an error on the nominated node (a Filter plugin's, or an extender's
            # that is not ignorable) is logged, and every node is searched; the error, if it
            # persists, ends the cycle there.
            log.error('Evaluation failed on nominated node pod="%s" node="%s": %s', key, nnn, err)
            feasible_nodes = []
        if feasible_nodes:
            sched.recorder.record("feasible", pod=key, passed=1, nodes=1, nominated=nnn)
            return feasible_nodes, diagnosis
    feasible_nodes = find_nodes_that_pass_filters(sched, fwk, state, pod, diagnosis, nodes)
    feasible_nodes = find_nodes_that_pass_extenders(
        sched.extenders, pod, feasible_nodes, diagnosis.node_to_status_map, sched.recorder
    )
    return feasible_nodes, diagnosis


def evaluate_nominated_node(
    sched: Scheduler,
    fwk: Framework,
    state: CycleState,
    pod: client.V1Pod,
    diagnosis: framework.Diagnosis,
    nominated: framework.NodeInfo,
) -> list[client.V1Node]:
    """The nominated node, if it passes the Filter plugins and the extenders; else no node,
    its failure in ``diagnosis`` (upstream: evaluateNominatedNode). Raises a Filter plugin's
    error, or an extender's that is not ignorable.

    An extender's failure of the nominated node stays in ``diagnosis`` while every node is
    searched; if the node passes the Filter plugins again there, the extender fails it again,
    and its reason is appended to the status it already has: the FitError then counts that
    reason twice for the one node (v1.23 does the same).
    """
    feasible_nodes = find_nodes_that_pass_filters(sched, fwk, state, pod, diagnosis, [nominated])
    return find_nodes_that_pass_extenders(
        sched.extenders, pod, feasible_nodes, diagnosis.node_to_status_map, sched.recorder
    )


# How many feasible nodes a cycle looks for at least, and the smallest percentage of the nodes
# it looks for, once the cluster has that many nodes (upstream: minFeasibleNodesToFind,
# minFeasibleNodesPercentageToFind). Below MIN_FEASIBLE_NODES_TO_FIND nodes, every node.
MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5


def num_feasible_nodes_to_find(percentage_of_nodes_to_score: int, num_all_nodes: int) -> int:
    """How many nodes that pass Filter are enough to stop looking (upstream:
    numFeasibleNodesToFind).

    Every node in a cluster of fewer than MIN_FEASIBLE_NODES_TO_FIND nodes, or at 100 %.
    Otherwise the percentage given, or, for 0 (the default), an adaptive one: 50 % minus one
    percent per 125 nodes, never below MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND; and never fewer
    than MIN_FEASIBLE_NODES_TO_FIND nodes. 500 nodes: 46 %, 230; 5000 nodes: 10 %, 500.
    """
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND or percentage_of_nodes_to_score >= 100:
        return num_all_nodes
    adaptive_percentage = percentage_of_nodes_to_score
    if adaptive_percentage <= 0:
        base_percentage_of_nodes_to_score = 50
        adaptive_percentage = base_percentage_of_nodes_to_score - num_all_nodes // 125
        if adaptive_percentage < MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND:
            adaptive_percentage = MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND
    num_nodes = num_all_nodes * adaptive_percentage // 100
    if num_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return MIN_FEASIBLE_NODES_TO_FIND
    return num_nodes


def find_nodes_that_pass_filters(
    sched: Scheduler,
    fwk: Framework,
    state: CycleState,
    pod: client.V1Pod,
    diagnosis: framework.Diagnosis,
    nodes: list[framework.NodeInfo],
) -> list[client.V1Node]:
    """Run the Filter plugins node by node, with the pods nominated to each node counted, from
    where the last cycle stopped, until ``num_feasible_nodes_to_find`` nodes have passed; the
    failures go into ``diagnosis``.

    The search starts at ``sched.next_start_node_index``, wraps around the list, and moves the
    index on by the number of nodes it checked, passed or failed: across cycles every node
    gets its turn to be examined. Only the nodes found are scored. A pod that fits few nodes
    checks them all, and the index comes back where it was.

    Upstream: findNodesThatPassFilters. Differs from upstream: one node after the other, the
    search stopping at the node that makes the count. Upstream checks the nodes on 16
    goroutines (``Parallelizer().Until``) and cancels the rest once the count is reached: a
    few nodes past it were checked meanwhile (those that failed count as processed, those
    that passed are dropped), so which nodes a cycle examined varies from run to run.

    The index moves modulo the nodes given, as in v1.23: the nominated node's search, over that
    one node, sets it back to 0. Later releases move it in findNodesThatFitPod, after the
    search over all the nodes only (v1.25, kubernetes#110947), and modulo all the nodes
    (allNodes) even where PreFilter narrowed them (kubernetes#124933).

    Differs from upstream: the index moves by the nodes this search checked. Upstream counts
    the failures in the whole Diagnosis, which still holds a nominated node that failed its
    own search: when the search over every node then stops before that node, upstream's index
    moves one node further than this one.
    """
    key = meta_namespace_key(pod)
    num_all_nodes = len(nodes)
    num_nodes_to_find = num_feasible_nodes_to_find(
        sched.percentage_of_nodes_to_score, num_all_nodes
    )
    # The index of the cycle before, which may have seen more nodes than this one.
    start = sched.next_start_node_index % num_all_nodes
    if nodes is sched.snapshot.node_info_list:
        feasible = _pass_filters_batch(
            sched,
            fwk,
            state,
            pod,
            diagnosis,
            sched.snapshot.node_arrays(),
            start,
            num_nodes_to_find,
        )
        if feasible is not None:
            return feasible
    # With no Filter plugin every node passes, and this takes the next ones in turn, as
    # upstream's shortcut for that case does.
    feasible_nodes: list[client.V1Node] = []
    processed_nodes = 0
    for i in range(num_all_nodes):
        node_info = nodes[(start + i) % num_all_nodes]
        node = node_info.node()
        status = fwk.run_filter_plugins_with_nominated_pods(state, pod, node_info)
        if status.code == Code.ERROR:
            # As upstream, the index moves by the nodes checked before the error (the node
            # that failed with it is not counted), and then the cycle ends with the error.
            sched.next_start_node_index = (start + processed_nodes) % num_all_nodes
            raise status.as_error() or Exception(status.message())
        processed_nodes += 1
        if status.is_success():
            feasible_nodes.append(node)
            if len(feasible_nodes) == num_nodes_to_find:
                break  # enough: the nodes after this one wait for a later cycle
            continue
        name = node.metadata.name
        diagnosis.node_to_status_map[name] = status
        diagnosis.unschedulable_plugins.add(status.failed_plugin)
        sched.recorder.record(
            "filter", pod=key, node=name, plugin=status.failed_plugin, reason=status.message()
        )
    sched.next_start_node_index = (start + processed_nodes) % num_all_nodes
    sched.recorder.record(
        "feasible",
        pod=key,
        passed=len(feasible_nodes),
        nodes=num_all_nodes,
        checked=processed_nodes,
        start=start,
        to_find=num_nodes_to_find,
    )
    return feasible_nodes


# How many nodes the Filter plugins are given at once. numpy lets other threads run during an
# operation on more than 500 elements (it releases the GIL, and takes it back after); with the
# binding, event and informer threads waiting for it, the scheduling thread then waits too.
FILTER_CHUNK = 500


def _pass_filters_batch(
    sched: Scheduler,
    fwk: Framework,
    state: CycleState,
    pod: client.V1Pod,
    diagnosis: framework.Diagnosis,
    arrays: NodeArrays,
    start: int,
    num_nodes_to_find: int,
) -> FeasibleNodes | None:
    """find_nodes_that_pass_filters' loop, the Filter plugins deciding for FILTER_CHUNK nodes
    at once, in the search's order, until enough nodes pass: the same nodes found, the same
    index moved, the same failures in the diagnosis, in the same order. Only a node that
    failed, before the search stopped, runs its Filter plugins again, node by node, for
    upstream's reasons. None, before anything is recorded, when a plugin cannot decide for
    many nodes at once for this pod (run_filter_plugins_batch)."""
    key = meta_namespace_key(pod)
    num_all_nodes = len(arrays)
    found: list[np.ndarray] = []
    num_found = 0
    processed_nodes = 0  # positions of the search examined: node (start + i) % num_all_nodes
    while processed_nodes < num_all_nodes and num_found < num_nodes_to_find:
        size = min(FILTER_CHUNK, num_all_nodes - processed_nodes)
        rows = (np.arange(start + processed_nodes, start + processed_nodes + size)) % num_all_nodes
        passed = fwk.run_filter_plugins_batch(state, pod, arrays, rows)
        if passed is None:
            if processed_nodes:  # a plugin answered for the first nodes, then not: a bug
                raise Exception("a Filter plugin could not decide for many nodes at once")
            return None
        hits = np.flatnonzero(passed)[: num_nodes_to_find - num_found]
        checked = size
        if num_found + len(hits) == num_nodes_to_find:
            checked = int(hits[-1]) + 1  # the search stops at the node that makes the count
        for i in np.flatnonzero(~passed[:checked]).tolist():
            node_info = arrays.node_infos[rows[i]]
            status = fwk.run_filter_plugins_with_nominated_pods(state, pod, node_info)
            if status.code == Code.ERROR:
                sched.next_start_node_index = (start + processed_nodes + i) % num_all_nodes
                raise status.as_error() or Exception(status.message())
            name = arrays.names[rows[i]]
            diagnosis.node_to_status_map[name] = status
            diagnosis.unschedulable_plugins.add(status.failed_plugin)
            sched.recorder.record(
                "filter", pod=key, node=name, plugin=status.failed_plugin, reason=status.message()
            )
        found.append(rows[hits])
        num_found += len(hits)
        processed_nodes += checked
    sched.next_start_node_index = (start + processed_nodes) % num_all_nodes
    sched.recorder.record(
        "feasible",
        pod=key,
        passed=num_found,
        nodes=num_all_nodes,
        checked=processed_nodes,
        start=start,
        to_find=num_nodes_to_find,
    )
    found_rows = np.concatenate(found) if found else np.zeros(0, np.intp)
    return FeasibleNodes([arrays.nodes[i] for i in found_rows.tolist()], found_rows)


def extender_label(extender: framework.Extender) -> str:
    """How the report names an extender where it names plugins (a Filter rejection, a score):
    ``extender <name>``, the name being its urlPrefix for an HTTP extender."""
    return f"extender {extender.name()}"


def find_nodes_that_pass_extenders(
    extenders: list[framework.Extender],
    pod: client.V1Pod,
    feasible_nodes: list[client.V1Node],
    statuses: framework.NodeToStatusMap,
    recorder: Recorder | None = None,
) -> list[client.V1Node]:
    """The nodes every extender interested in the pod keeps; the others get a status in
    ``statuses`` (upstream: findNodesThatPassExtenders).

    The extenders run one after the other, each on the nodes the ones before it kept, until
    none is left. A node an extender fails as unresolvable (FailedAndUnresolvableNodes) gets
    UnschedulableAndUnresolvable, with the reason appended to those of the status it had, so
    that preemption skips it; one it fails otherwise (FailedNodes, unless also unresolvable)
    gets Unschedulable, or the reason appended to the status it has. An extender's error ends
    the cycle with that error, unless the extender is ignorable: then it is skipped.

    The extenders' statuses name no plugin: they add nothing to the Diagnosis's
    unschedulable plugins. A pod that only extenders rejected thus has no rejecting plugin, and
    any cluster event moves it out of unschedulableQ (as in v1.23).
    """
    recorder = recorder or NullRecorder()
    key = meta_namespace_key(pod)
    for extender in extenders:
        if not feasible_nodes:
            break
        if not extender.is_interested(pod):
            continue
        name = extender.name()
        start = time.perf_counter()
        try:
            feasible_list, failed_map, failed_and_unresolvable_map = extender.filter(
                pod, feasible_nodes
            )
        except Exception as err:
            if extender.is_ignorable():
                log.info(
                    "Skipping extender as it returned error and has ignorable flag set "
                    'extender="%s" err="%s"',
                    name,
                    err,
                )
                continue
            raise
        finally:
            recorder.record(
                "extender",
                pod=key,
                extender=name,
                verb="filter",
                seconds=time.perf_counter() - start,
            )

        # Users are told to configure the extenders that may answer unresolvable first:
        # preemption then skips those nodes.
        label = extender_label(extender)
        for failed_node_name, failed_msg in (failed_and_unresolvable_map or {}).items():
            aggregated_reasons: list[str] = []
            if failed_node_name in statuses:
                aggregated_reasons = list(statuses[failed_node_name].reasons)
            aggregated_reasons.append(failed_msg)
            statuses[failed_node_name] = framework.Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE, aggregated_reasons
            )
            recorder.record(
                "filter", pod=key, node=failed_node_name, plugin=label, reason=failed_msg
            )
        for failed_node_name, failed_msg in (failed_map or {}).items():
            if failed_node_name in (failed_and_unresolvable_map or {}):
                # Unresolvable takes precedence: only an extender that returns the node in
                # both maps gets here.
                continue
            if failed_node_name not in statuses:
                statuses[failed_node_name] = framework.Status(Code.UNSCHEDULABLE, [failed_msg])
            else:
                # In place, as upstream's AppendReason: the status keeps its code and plugin.
                statuses[failed_node_name].reasons.append(failed_msg)
            recorder.record(
                "filter", pod=key, node=failed_node_name, plugin=label, reason=failed_msg
            )
        feasible_nodes = list(feasible_list or [])
    return feasible_nodes


def prioritize_nodes(
    sched: Scheduler,
    fwk: Framework,
    state: CycleState,
    pod: client.V1Pod,
    nodes: list[client.V1Node],
) -> list[framework.NodeScore]:
    """Each node's total score: the sum of every Score plugin's final score, plus what the
    extenders interested in the pod give it (``prioritize_with_extenders``).

    Upstream: prioritizeNodes.
    """
    extenders = sched.extenders
    # With no Score plugins and no extenders every node scores 1. An extender counts even
    # when it does not prioritize (no prioritizeVerb): its nodes then score 0.
    if not extenders and not fwk.has_score_plugins():
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
            scored = ((node_score.name, node_score.score) for node_score in node_score_list)
            record_scores(sched, key, plugin, scored, verbose)

    # Summarize all scores.
    result = [framework.NodeScore(node.metadata.name, 0) for node in nodes]
    for node_score_list in scores_map.values():
        for total, node_score in zip(result, node_score_list, strict=True):
            total.score += node_score.score

    if extenders and nodes:
        combined_scores = prioritize_with_extenders(sched, extenders, pod, nodes)
        for total in result:
            # An extender scores 0..MAX_EXTENDER_PRIORITY, the plugins 0..MAX_NODE_SCORE: the
            # weighted sum is scaled to the plugins' range (integer division, as upstream's).
            total.score += combined_scores.get(total.name, 0) * (
                framework.MAX_NODE_SCORE // framework.MAX_EXTENDER_PRIORITY
            )
    return result


def record_scores(
    sched: Scheduler, key: str, plugin: str, scored: Iterable[tuple[str, int]], verbose: bool
) -> None:
    """Each node's score from one plugin, in the log (at -vv, ``verbose``) and the report."""
    for name, score in scored:
        if verbose:
            log.debug(
                'Plugin scored node for pod pod="%s" plugin="%s" node="%s" score=%d',
                key,
                plugin,
                name,
                score,
            )
        sched.recorder.record("score", pod=key, node=name, plugin=plugin, score=score)


def prioritize_nodes_batch(
    sched: Scheduler,
    fwk: Framework,
    state: CycleState,
    pod: client.V1Pod,
    nodes: list[client.V1Node],
) -> tuple[np.ndarray, np.ndarray]:
    """prioritize_nodes without extenders, every plugin's scores an array: the nodes' rows in
    the columns and their totals, in the order of ``nodes``."""
    status = fwk.run_pre_score_plugins(state, pod, nodes)
    if not status.is_success():
        raise status.as_error() or Exception(status.message())
    arrays = sched.snapshot.node_arrays()
    rows = getattr(nodes, "rows", None)
    if rows is None:  # not found by _pass_filters_batch: look each node up
        rows = np.fromiter((arrays.index[n.metadata.name] for n in nodes), np.intp, len(nodes))
    scores_map, status = fwk.run_score_plugins_batch(state, pod, arrays, rows)
    if not status.is_success():
        raise status.as_error() or Exception(status.message())

    key = meta_namespace_key(pod)
    verbose = log.isEnabledFor(logging.DEBUG)
    if verbose or sched.recorder.wants_detail(key):
        names = [arrays.names[i] for i in rows.tolist()]
        for plugin, scores in scores_map.items():
            record_scores(sched, key, plugin, zip(names, scores.tolist(), strict=True), verbose)
    totals = np.zeros(len(rows), np.int64)
    for scores in scores_map.values():
        totals += scores
    return rows, totals


def prioritize_with_extenders(
    sched: Scheduler,
    extenders: list[framework.Extender],
    pod: client.V1Pod,
    nodes: list[client.V1Node],
) -> dict[str, int]:
    """Each node's sum, over the extenders interested in the pod, of the extender's score
    times its weight (upstream: the extenders' part of prioritizeNodes).

    Every extender is called at once, each on a thread of its own, and the cycle waits for all
    of them: the slowest sets the time they add. An extender's error is ignored (the plugins
    and the other extenders decide), as upstream's "Prioritization errors from extender can be
    ignored". Scores are not normalized, nor clamped to MAX_EXTENDER_PRIORITY: what the
    extender says, times its weight, is added.

    Differs from upstream: upstream's goroutines add their scores to one map under a mutex as
    each finishes; here each thread keeps its own answer and they are added once all are
    back, in the extenders' order: the same sums (integers), and the recorded events
    (``extender``, and each extender's ``score`` per node) come in the extenders' order,
    whichever answered first.
    """
    key = meta_namespace_key(pod)
    interested = [e for e in extenders if e.is_interested(pod)]
    # One slot per extender, written by its own thread only: (the answer or None, the error
    # or None, the seconds the call took).
    answers: list[tuple[tuple[list[tuple[str, int]], int] | None, Exception | None, float]] = [
        (None, None, 0.0)
    ] * len(interested)
    done = threading.Semaphore(0)

    def call(i: int, extender: framework.Extender) -> None:
        start = time.perf_counter()
        try:
            answers[i] = (extender.prioritize(pod, nodes), None, time.perf_counter() - start)
        except Exception as err:
            answers[i] = (None, err, time.perf_counter() - start)
        finally:
            done.release()

    for i, extender in enumerate(interested):
        go(call, i, extender, name=f"prioritize {key} with {extender.name()}")
    for _ in interested:
        done.acquire()

    verbose = log.isEnabledFor(logging.DEBUG)
    detail = verbose or sched.recorder.wants_detail(key)
    node_names = {node.metadata.name for node in nodes}
    scale = framework.MAX_NODE_SCORE // framework.MAX_EXTENDER_PRIORITY
    combined_scores: dict[str, int] = {}
    # What each extender adds to each node's total, for the report, by label: two extenders
    # of one name add up under it.
    contributions: dict[str, dict[str, int]] = {}
    for extender, (answer, err, seconds) in zip(interested, answers, strict=True):
        name = extender.name()
        sched.recorder.record(
            "extender", pod=key, extender=name, verb="prioritize", seconds=seconds
        )
        if answer is None:
            # Upstream logs nothing here.
            log.debug('Extender failed to prioritize pod="%s" extender="%s": %s', key, name, err)
            continue
        prioritized_list, weight = answer
        per_node = contributions.setdefault(extender_label(extender), {})
        for host, score in prioritized_list:
            if verbose:
                log.debug(
                    'Extender scored node for pod pod="%s" extender="%s" node="%s" score=%d',
                    key,
                    name,
                    host,
                    score,
                )
            combined_scores[host] = combined_scores.get(host, 0) + score * weight
            if host in node_names:
                per_node[host] = per_node.get(host, 0) + score * weight * scale
    if detail:
        for label, per_node in contributions.items():
            for host, score in per_node.items():
                sched.recorder.record("score", pod=key, node=host, plugin=label, score=score)
    return combined_scores


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


def select_host_batch(sched: Scheduler, totals: np.ndarray) -> int:
    """select_host over an array of totals: the position of the node chosen. The same walk,
    and the same draws from ``sched.rng``, made only at the nodes where the walk does
    something (a node that ties with or beats the best so far)."""
    if not len(totals):
        raise Exception("empty priorityList")
    best_so_far = np.maximum.accumulate(totals)
    candidates = np.flatnonzero(totals == best_so_far).tolist()
    values = totals.tolist()
    max_score, selected, cnt_of_max_score = values[0], 0, 1
    for i in candidates[1:]:
        if values[i] > max_score:
            max_score, selected, cnt_of_max_score = values[i], i, 1
        else:
            cnt_of_max_score += 1
            if intn(sched.rng, cnt_of_max_score) == 0:
                selected = i
    return selected


def bind(
    sched: Scheduler, fwk: Framework, state: CycleState, assumed: client.V1Pod, node_name: str
) -> BaseException | None:
    """Bind the pod: through an extender that binds it, else through the Bind plugins; the
    error, or None (upstream: Scheduler.bind).
    """
    bound, err = extenders_binding(sched, assumed, node_name)
    if not bound:
        status = fwk.run_bind_plugins(state, assumed, node_name)
        if status.code == Code.ERROR:
            err = status.as_error()
        elif not status.is_success():  # every Bind plugin skipped
            err = Exception(f"bind status: {status.code}, {status.message()}")
    finish_binding(sched, assumed, node_name, err)
    return err


def extenders_binding(
    sched: Scheduler, pod: client.V1Pod, node_name: str
) -> tuple[bool, BaseException | None]:
    """Whether an extender took the binding, and its error (upstream: extendersBinding).

    The first extender that binds (bindVerb) and is interested in the pod is given a Binding
    of the pod to the node; the Bind plugins are then skipped, whatever it answers: its error
    fails the binding as a Bind plugin's would (Unreserve, forget, back to the queue). The
    extender must create the Binding in the API server itself. Its ``ignorable`` is not read
    here (v1.23; later releases fall through to the Bind plugins when an ignorable binder
    fails).
    """
    for extender in sched.extenders:
        if not extender.is_binder() or not extender.is_interested(pod):
            continue
        binding = client.V1Binding(
            metadata=client.V1ObjectMeta(
                namespace=pod.metadata.namespace, name=pod.metadata.name, uid=pod.metadata.uid
            ),
            target=client.V1ObjectReference(kind="Node", name=node_name),
        )
        start = time.perf_counter()
        try:
            extender.bind(binding)
        except Exception as err:
            return True, err
        finally:
            sched.recorder.record(
                "extender",
                pod=meta_namespace_key(pod),
                extender=extender.name(),
                verb="bind",
                seconds=time.perf_counter() - start,
            )
        return True, None
    return False, None


def finish_binding(
    sched: Scheduler, assumed: client.V1Pod, node_name: str, err: BaseException | None
) -> None:
    """The binding is over, whatever its outcome: from now on the assumed pod may expire
    (upstream: finishBinding). A success is told to the pod's events."""
    try:
        sched.cache.finish_binding(assumed)
    except Exception as e:
        log.error("Scheduler cache FinishBinding failed: %s", e)
    if err is not None:
        return
    key = meta_namespace_key(assumed)
    sched.event_recorder.eventf(
        assumed, "Normal", "Scheduled", "Binding", f"Successfully assigned {key} to {node_name}"
    )


# --- failures ----------------------------------------------------------------------------------


def record_scheduling_failure(
    sched: Scheduler,
    pod_info: QueuedPodInfo,
    err: BaseException,
    reason: str,
    nominating_info: NominatingInfo | None = CLEAR_NOMINATED_NODE,
) -> None:
    """Tell everyone the pod was not scheduled, and give it back to the queue: the queue and
    the logs (``error_func``), the nominator, a FailedScheduling event, and the pod's
    PodScheduled condition and nominated node.

    Upstream: Scheduler.recordSchedulingFailure, whose callers pass clearNominatedNode for
    every failure but Schedule's (here the default).
    """
    pod = pod_info.pod
    error_func(sched, pod_info, err)
    # Nominate the pod now: without it, the next cycle could run before the status update
    # that writes nominatedNodeName comes back, and give the room to another pod.
    sched.scheduling_queue.pod_nominator.add_nominated_pod(pod_info.pod, nominating_info)
    if mode_of(nominating_info) == NominatingMode.OVERRIDE and nominating_info:
        if nominating_info.nominated_node_name:
            sched.recorder.record(
                "nominated", pod=meta_namespace_key(pod), node=nominating_info.nominated_node_name
            )
    message = str(err)
    sched.event_recorder.eventf(pod, "Warning", "FailedScheduling", "Scheduling", message)
    condition = {
        "type": "PodScheduled",
        "status": "False",
        "reason": reason,
        "message": message,
    }
    update_pod(sched, pod, condition, nominating_info)


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
    elif framework.is_not_found(err):
        # Upstream logs this at V(2): here a bind refused because the pod was deleted.
        # Not implemented: when the 404 names a node, upstream gets the node again and
        # removes it from the cache if it is gone (a bind here never names a missing node).
        log.info(
            'Unable to schedule pod, possibly due to node not found; waiting pod="%s" err="%s"',
            key,
            err,
        )
        sched.recorder.record("queue", pod=key, queue="none", event="deleted before binding")
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


def update_pod(
    sched: Scheduler,
    pod: client.V1Pod,
    condition: dict[str, str],
    nominating_info: NominatingInfo | None,
) -> None:
    """Set a condition on the pod, and its nominated node when ``nominating_info`` overrides
    it with another, through its status subresource (upstream: updatePod).

    As upstream, nothing is sent when the pod already has that condition and nominated node,
    and a failure is logged, never raised: the scheduler goes on either way.
    Simplified: no lastTransitionTime.
    """
    status: dict[str, object] = {"conditions": [condition]}
    if mode_of(nominating_info) == NominatingMode.OVERRIDE and nominating_info:
        nnn = nominating_info.nominated_node_name
        if nominated_node_name(pod) != nnn:
            status["nominatedNodeName"] = nnn or None  # null clears it
    for c in (pod.status and pod.status.conditions) or []:
        if c.type == condition["type"] and (c.status, c.reason, c.message) == (
            condition["status"],
            condition["reason"],
            condition["message"],
        ):
            if "nominatedNodeName" not in status:
                return
    try:
        sched.client.patch_namespaced_pod_status(
            pod.metadata.name,
            pod.metadata.namespace,
            {"status": status},
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
