"""The scheduling queue: pods waiting for a scheduling attempt.

Upstream: pkg/scheduler/internal/queue/scheduling_queue.go (SchedulingQueue, PriorityQueue),
pkg/scheduler/internal/queue/events.go (the event labels) and pkg/scheduler/internal/heap
(Heap) at v1.23.

A pod is in at most one of three sub-queues:

- **activeQ**, a heap ordered by the QueueSort plugin (PrioritySort): the pods ``pop`` hands
  to the scheduler, highest priority first.
- **podBackoffQ**, a heap ordered by the time each pod's backoff ends: pods that failed and
  must wait before their next attempt (1 s, doubling per attempt, at most 10 s).
- **unschedulableQ**, a map keyed by the pod's full name: pods that failed and wait for a
  cluster event that could make them schedulable.

A popped pod is in none of them ("in flight") until the scheduler binds it or hands it back
with ``add_unschedulable_if_not_present``.

Beside them, the **nominator** remembers the node each pod was nominated to by preemption
(``status.nominatedNodeName``), so that Filter can count the pod there before it is bound.

A plugin can also wake pods up: the pods it stashes in CycleState (``PodsToActivate``) leave
unschedulableQ or podBackoffQ for activeQ when the cycle ends well (``activate``).

Not implemented: the metrics.
"""

from __future__ import annotations

import copy
import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

from kubernetes.client import V1Pod

from minisched.clock import Clock, Timer
from minisched.informer import meta_namespace_key
from minisched.recorder import Recorder

from .framework import (
    GVK,
    ActionType,
    ClusterEvent,
    LessFunc,
    NominatingInfo,
    NominatingMode,
    PodLister,
    QueuedPodInfo,
    mode_of,
)

log = logging.getLogger(__name__)

# How long a failed pod waits before its next attempt: the first backoff, and the most it
# grows to (upstream: DefaultPodInitialBackoffDuration, DefaultPodMaxBackoffDuration).
DEFAULT_POD_INITIAL_BACKOFF_DURATION = 1.0
DEFAULT_POD_MAX_BACKOFF_DURATION = 10.0
# How often the background loops run, and how long a pod may wait in unschedulableQ before it
# is retried whatever happened (upstream: the periods in PriorityQueue.Run, and
# unschedulableQTimeInterval; constants in v1.23).
DEFAULT_BACKOFF_Q_FLUSH_PERIOD = 1.0
DEFAULT_UNSCHEDULABLE_Q_FLUSH_PERIOD = 30.0
DEFAULT_UNSCHEDULABLE_Q_TIME_INTERVAL = 60.0

# --- event labels (events.go) ------------------------------------------------------------------

# Why a pod entered a queue, as the report shows it.
POD_ADD = "PodAdd"
SCHEDULE_ATTEMPT_FAILURE = "ScheduleAttemptFailure"
BACKOFF_COMPLETE = "BackoffComplete"
# A plugin asked for the pod (upstream: ForceActivate, the label of the metric).
FORCE_ACTIVATE = "ForceActivate"
# Upstream: v1.23's Update records no label; later releases call it PodUpdate.
POD_UPDATE = "PodUpdate"
# Simplified: upstream records no label when a pod leaves the queues; the report needs one.
POD_DELETE = "PodDelete"

# Cluster events that move pods out of unschedulableQ.
ASSIGNED_POD_ADD = ClusterEvent(GVK.POD, ActionType.ADD, "AssignedPodAdd")
ASSIGNED_POD_UPDATE = ClusterEvent(GVK.POD, ActionType.UPDATE, "AssignedPodUpdate")
ASSIGNED_POD_DELETE = ClusterEvent(GVK.POD, ActionType.DELETE, "AssignedPodDelete")
NODE_ADD = ClusterEvent(GVK.NODE, ActionType.ADD, "NodeAdd")
# A node that stops being unschedulable. Upstream files it under the taint action: to pods,
# spec.unschedulable is the node.kubernetes.io/unschedulable taint.
NODE_SPEC_UNSCHEDULABLE_CHANGE = ClusterEvent(
    GVK.NODE, ActionType.UPDATE_NODE_TAINT, "NodeSpecUnschedulableChange"
)
NODE_ALLOCATABLE_CHANGE = ClusterEvent(
    GVK.NODE, ActionType.UPDATE_NODE_ALLOCATABLE, "NodeAllocatableChange"
)
NODE_LABEL_CHANGE = ClusterEvent(GVK.NODE, ActionType.UPDATE_NODE_LABEL, "NodeLabelChange")
NODE_TAINT_CHANGE = ClusterEvent(GVK.NODE, ActionType.UPDATE_NODE_TAINT, "NodeTaintChange")
NODE_CONDITION_CHANGE = ClusterEvent(
    GVK.NODE, ActionType.UPDATE_NODE_CONDITION, "NodeConditionChange"
)
WILDCARD_EVENT = ClusterEvent(GVK.WILDCARD, ActionType.ALL, "WildCardEvent")
# A pod waited in unschedulableQ too long: a wildcard, so it moves whoever rejected it.
UNSCHEDULABLE_TIMEOUT = ClusterEvent(GVK.WILDCARD, ActionType.ALL, "UnschedulableTimeout")

# A check a pod must pass to be moved (upstream: PreEnqueueCheck).
PreEnqueueCheck = Callable[[V1Pod], bool]


def get_pod_full_name(pod: V1Pod) -> str:
    """``name_namespace``: unschedulableQ's key (upstream: util.GetPodFullName)."""
    return f"{pod.metadata.name}_{pod.metadata.namespace}"


def pod_info_key(p_info: QueuedPodInfo) -> str:
    """``namespace/name``: the heaps' key (upstream: podInfoKeyFunc)."""
    return meta_namespace_key(p_info.pod)


# --- the heap (internal/heap/heap.go) ----------------------------------------------------------

T = TypeVar("T")


class Heap(Generic[T]):
    """A binary heap whose items can also be found, updated and deleted by key.

    ``less(a, b)`` is True when ``a`` must come out first. Not thread-safe: the queue's lock
    guards it. Upstream: pkg/scheduler/internal/heap (Heap, on Go's container/heap).

    With ``sort_key``, an item comes out first when its sort key is the smaller: each item's
    sort key is worked out once, as it is added, and compared as a tuple, instead of calling
    ``less`` for every comparison; it must order the items exactly as ``less`` does. Each
    item's key is kept beside it too, so a swap does not work it out again. An item changed
    in place must be added again (``update``), as upstream's must be fixed (heap.Fix).
    """

    def __init__(
        self,
        key: Callable[[T], str],
        less: Callable[[T, T], bool],
        sort_key: Callable[[T], Any] | None = None,
    ) -> None:
        self._key = key
        self._less = less
        self._sort_key = sort_key
        # Three lists, one entry per item: the item, its key, its sort key (or the item).
        self._items: list[T] = []
        self._keys: list[str] = []
        self._ranks: list[Any] = []
        self._index: dict[str, int] = {}  # key -> position in _items

    def __len__(self) -> int:
        return len(self._items)

    def add(self, item: T) -> None:
        """Insert ``item``, or replace the item with its key and restore the order."""
        key = self._key(item)
        rank = self._sort_key(item) if self._sort_key is not None else item
        if key in self._index:
            i = self._index[key]
            self._items[i], self._ranks[i] = item, rank
            self._fix(i)
            return
        self._items.append(item)
        self._keys.append(key)
        self._ranks.append(rank)
        self._index[key] = len(self._items) - 1
        self._up(len(self._items) - 1)

    update = add  # upstream's Update is Add

    def get(self, key: str) -> T | None:
        i = self._index.get(key)
        return None if i is None else self._items[i]

    def delete(self, key: str) -> T | None:
        """Remove and return the item with ``key``; None if there is none."""
        i = self._index.get(key)
        if i is None:
            return None
        last = len(self._items) - 1
        self._swap(i, last)
        item = self._items.pop()
        self._keys.pop()
        self._ranks.pop()
        del self._index[key]
        if i < last:
            self._fix(i)
        return item

    def peek(self) -> T | None:
        return self._items[0] if self._items else None

    def pop(self) -> T | None:
        return self.delete(self._keys[0]) if self._items else None

    def list(self) -> list[T]:
        return list(self._items)

    def _before(self, i: int, j: int) -> bool:
        """Whether the item at ``i`` must come out before the item at ``j``."""
        if self._sort_key is not None:
            return bool(self._ranks[i] < self._ranks[j])
        return self._less(self._items[i], self._items[j])

    def _fix(self, i: int) -> None:
        if not self._up(i):
            self._down(i)

    def _up(self, i: int) -> bool:
        moved = False
        while i > 0:
            parent = (i - 1) // 2
            if not self._before(i, parent):
                break
            self._swap(i, parent)
            i, moved = parent, True
        return moved

    def _down(self, i: int) -> None:
        n = len(self._items)
        while True:
            smallest, left, right = i, 2 * i + 1, 2 * i + 2
            if left < n and self._before(left, smallest):
                smallest = left
            if right < n and self._before(right, smallest):
                smallest = right
            if smallest == i:
                return
            self._swap(i, smallest)
            i = smallest

    def _swap(self, i: int, j: int) -> None:
        items, keys, ranks = self._items, self._keys, self._ranks
        items[i], items[j] = items[j], items[i]
        keys[i], keys[j] = keys[j], keys[i]
        ranks[i], ranks[j] = ranks[j], ranks[i]
        self._index[keys[i]] = i
        self._index[keys[j]] = j


# --- the nominator -----------------------------------------------------------------------------


def nominated_node_name(pod: V1Pod) -> str:
    """``status.nominatedNodeName``, or "" (upstream: NominatedNodeName)."""
    return (pod.status and pod.status.nominated_node_name) or ""


class Nominator:
    """The pods nominated to each node, and the node of each nominated pod (upstream:
    nominator, the PodNominator the queue embeds).

    A pod is nominated when preemption made room for it on a node; it keeps the nomination
    until it is bound, deleted, or nominated elsewhere. ``_lock`` guards both maps; the queue
    calls in with its own lock held (never the other way round).
    """

    def __init__(self, pod_lister: Callable[[], PodLister | None] | None = None) -> None:
        self._pod_lister = pod_lister
        self._lock = threading.Lock()
        # Node name -> the pods nominated to it, in nomination order (upstream: nominatedPods).
        self._nominated_pods: dict[str, list[V1Pod]] = {}
        # Pod UID -> its nominated node (upstream: nominatedPodToNode).
        self._nominated_pod_to_node: dict[str, str] = {}

    def add_nominated_pod(self, pod: V1Pod, nominating_info: NominatingInfo | None) -> None:
        """Nominate the pod: to ``nominating_info``'s node when it overrides, else to the
        node its status already names, if any (upstream: AddNominatedPod)."""
        with self._lock:
            self._add(pod, nominating_info)

    def delete_nominated_pod_if_exists(self, pod: V1Pod) -> None:
        """Upstream: DeleteNominatedPodIfExists."""
        with self._lock:
            self._delete(pod)

    def update_nominated_pod(self, old_pod: V1Pod, new_pod: V1Pod) -> None:
        """Replace the pod's object, keeping its nomination (upstream: UpdateNominatedPod).

        An update whose old and new pods both have no nominatedNodeName keeps the node the
        nominator has: the status update that writes the nomination may not have come back
        from the API server yet.
        """
        with self._lock:
            nominating_info = None
            if not nominated_node_name(old_pod) and not nominated_node_name(new_pod):
                nnn = self._nominated_pod_to_node.get(old_pod.metadata.uid)
                if nnn is not None:
                    nominating_info = NominatingInfo(nnn, NominatingMode.OVERRIDE)
            self._delete(old_pod)
            self._add(new_pod, nominating_info)

    def nominated_pods_for_node(self, node_name: str) -> list[V1Pod]:
        """Copies of the pods nominated to the node, so the caller can change them safely
        (upstream: NominatedPodsForNode, which deep-copies each PodInfo)."""
        with self._lock:
            return [copy.deepcopy(p) for p in self._nominated_pods.get(node_name, [])]

    def has_nominated_pods(self) -> bool:
        """Whether any pod is nominated: Filter over every node at once needs none."""
        return bool(self._nominated_pod_to_node)

    def _add(self, pod: V1Pod, nominating_info: NominatingInfo | None) -> None:
        # Never more than one entry per pod.
        self._delete(pod)
        mode = mode_of(nominating_info)
        if mode == NominatingMode.OVERRIDE:
            assert nominating_info is not None
            node_name = nominating_info.nominated_node_name
        else:
            node_name = nominated_node_name(pod)
        if not node_name:
            # Differs from upstream: an override to "" nominates the pod to node "" there.
            # Nothing reads that entry (no node has that name), and it is dropped here.
            return
        lister = self._pod_lister() if self._pod_lister is not None else None
        if lister is not None:
            # A pod that was deleted, or bound meanwhile, is not nominated.
            updated = lister.get_by_key(meta_namespace_key(pod))
            if updated is None:
                log.debug(
                    'Pod doesn\'t exist in podLister, aborted adding it to the nominator pod="%s"',
                    meta_namespace_key(pod),
                )
                return
            if updated.spec.node_name:
                log.debug(
                    "Pod is already scheduled to a node, aborted adding it to the nominator "
                    'pod="%s" node="%s"',
                    meta_namespace_key(pod),
                    updated.spec.node_name,
                )
                return
        self._nominated_pod_to_node[pod.metadata.uid] = node_name
        pods = self._nominated_pods.setdefault(node_name, [])
        if all(p.metadata.uid != pod.metadata.uid for p in pods):
            pods.append(pod)

    def _delete(self, pod: V1Pod) -> None:
        nnn = self._nominated_pod_to_node.pop(pod.metadata.uid, None)
        if nnn is None:
            return
        pods = [p for p in self._nominated_pods.get(nnn, []) if p.metadata.uid != pod.metadata.uid]
        if pods:
            self._nominated_pods[nnn] = pods
        else:
            self._nominated_pods.pop(nnn, None)


# --- the queue ---------------------------------------------------------------------------------


class PriorityQueue:
    """kube-scheduler's scheduling queue: activeQ, podBackoffQ and unschedulableQ.

    ``_lock`` (a Condition) guards all three sub-queues, both cycle counters, ``_closed`` and
    ``_loops``.
    ``pop`` waits on it; every change that puts a pod in activeQ, and ``close``, notifies it.
    Queue moves are recorded while the lock is held, so the report sees them in order.
    """

    def __init__(
        self,
        less: LessFunc,
        clock: Clock,
        recorder: Recorder,
        *,
        cluster_event_map: dict[ClusterEvent, set[str]] | None = None,
        pod_nominator: Nominator | None = None,
        pod_initial_backoff_duration: float = DEFAULT_POD_INITIAL_BACKOFF_DURATION,
        pod_max_backoff_duration: float = DEFAULT_POD_MAX_BACKOFF_DURATION,
        backoff_q_flush_period: float = DEFAULT_BACKOFF_Q_FLUSH_PERIOD,
        unschedulable_q_flush_period: float = DEFAULT_UNSCHEDULABLE_Q_FLUSH_PERIOD,
        unschedulable_q_time_interval: float = DEFAULT_UNSCHEDULABLE_Q_TIME_INTERVAL,
        sort_key: Callable[[QueuedPodInfo], Any] | None = None,
    ) -> None:
        self.clock = clock
        self.recorder = recorder
        self.pod_initial_backoff_duration = pod_initial_backoff_duration
        self.pod_max_backoff_duration = pod_max_backoff_duration
        self.backoff_q_flush_period = backoff_q_flush_period
        self.unschedulable_q_flush_period = unschedulable_q_flush_period
        self.unschedulable_q_time_interval = unschedulable_q_time_interval
        # For each cluster event, the plugins that registered it: which pods an event may
        # move out of unschedulableQ.
        self.cluster_event_map = cluster_event_map or {}
        # Upstream: the PodNominator PriorityQueue embeds; the scheduler shares it with the
        # framework, which reads it when it filters.
        self.pod_nominator = pod_nominator or Nominator()

        self._lock = threading.Condition()
        # The QueueSort plugin's sort key, where it has one, orders activeQ as its less does.
        self._active_q: Heap[QueuedPodInfo] = Heap(pod_info_key, less, sort_key)
        self._pod_backoff_q: Heap[QueuedPodInfo] = Heap(
            pod_info_key, self._pods_compare_backoff_completed
        )
        # Upstream: UnschedulablePodsMap, a map keyed by the pod's full name (name_namespace).
        self._unschedulable_q: dict[str, QueuedPodInfo] = {}
        # Incremented by every pop: the number of the scheduling cycle in progress.
        self._scheduling_cycle = 0
        # The scheduling cycle in which the last move request (a cluster event) arrived. A pod
        # that fails in that cycle or an earlier one may have missed the event, so it goes to
        # podBackoffQ instead of waiting in unschedulableQ for an event that already passed.
        self._move_request_cycle = -1
        self._closed = False
        self._loops: list[Timer] = []  # the background loops started by run()

    def run(self) -> None:
        """Start the background loops that move pods without any cluster event (upstream:
        PriorityQueue.Run, two wait.Until goroutines). ``close`` stops them."""
        with self._lock:
            if self._closed or self._loops:
                return
            self._loops = [
                self.clock.every(self.backoff_q_flush_period, self.flush_backoff_q_completed),
                self.clock.every(
                    self.unschedulable_q_flush_period, self.flush_unschedulable_q_leftover
                ),
            ]

    # --- adding and popping --------------------------------------------------------------------

    def add(self, pod: V1Pod) -> None:
        """A new pod to schedule goes to activeQ (upstream: PriorityQueue.Add)."""
        with self._lock:
            p_info = self._new_queued_pod_info(pod)
            key = pod_info_key(p_info)
            self._active_q.add(p_info)
            if self._unschedulable_q.pop(get_pod_full_name(pod), None) is not None:
                log.error('Error: pod is already in the unschedulable queue pod="%s"', key)
            if self._pod_backoff_q.delete(key) is not None:
                log.error('Error: pod is already in the podBackoff queue pod="%s"', key)
            self.pod_nominator.add_nominated_pod(pod, None)
            self._record(p_info, "activeQ", POD_ADD)
            self._lock.notify_all()

    def pop(self) -> QueuedPodInfo | None:
        """Wait for the head of activeQ and count the attempt; None once the queue is closed.

        Upstream returns an error ("scheduling queue is closed") where this returns None.
        """
        with self._lock:
            while not self._active_q:
                if self._closed:
                    return None
                self._lock.wait()
            p_info = self._active_q.pop()
            assert p_info is not None
            p_info.attempts += 1
            self._scheduling_cycle += 1
            return p_info

    def activate(self, pods: dict[str, V1Pod]) -> None:
        """Move the given pods to activeQ, if they wait in unschedulableQ or podBackoffQ
        (upstream: Activate). A pod in activeQ stays; a pod in none of them (in flight, or
        bound) is left alone."""
        with self._lock:
            activated = False
            for pod in pods.values():
                if self._activate(pod):
                    activated = True
            if activated:
                self._lock.notify_all()

    def _activate(self, pod: V1Pod) -> bool:
        key = meta_namespace_key(pod)
        if self._active_q.get(key) is not None:
            return False
        p_info = self._unschedulable_q.get(get_pod_full_name(pod))
        if p_info is None:
            p_info = self._pod_backoff_q.get(key)
            if p_info is None:
                # Differs from upstream: logged at debug, not as an error; a sibling waiting
                # at Permit is in no queue, which is routine under Coscheduling.
                log.debug(
                    'To-activate pod does not exist in unschedulableQ or backoffQ pod="%s"', key
                )
                return False
        self._active_q.add(p_info)
        self._unschedulable_q.pop(get_pod_full_name(pod), None)
        self._pod_backoff_q.delete(key)
        self.pod_nominator.add_nominated_pod(p_info.pod, None)
        self._record(p_info, "activeQ", FORCE_ACTIVATE)
        return True

    @property
    def scheduling_cycle(self) -> int:
        with self._lock:
            return self._scheduling_cycle

    @property
    def move_request_cycle(self) -> int:
        with self._lock:
            return self._move_request_cycle

    def add_unschedulable_if_not_present(
        self, p_info: QueuedPodInfo, pod_scheduling_cycle: int
    ) -> str | None:
        """Take back a pod whose attempt failed; an error message if it is already queued.

        The pod waits in unschedulableQ for an event, unless a move request arrived since
        ``pod_scheduling_cycle`` began: then the event may have been missed while the pod was
        being tried, so it only backs off (podBackoffQ) before its next attempt.
        """
        with self._lock:
            pod = p_info.pod
            key = pod_info_key(p_info)
            if get_pod_full_name(pod) in self._unschedulable_q:
                return f"Pod {key} is already present in unschedulable queue"
            if self._active_q.get(key) is not None:
                return f"Pod {key} is already present in the active queue"
            if self._pod_backoff_q.get(key) is not None:
                return f"Pod {key} is already present in the backoff queue"

            # The backoff, and the time spent in unschedulableQ, count from now.
            p_info.timestamp = self.clock.now()
            if self._move_request_cycle >= pod_scheduling_cycle:
                self._pod_backoff_q.add(p_info)
                self._record(p_info, "podBackoffQ", SCHEDULE_ATTEMPT_FAILURE)
            else:
                self._unschedulable_q[get_pod_full_name(pod)] = p_info
                self._record(p_info, "unschedulableQ", SCHEDULE_ATTEMPT_FAILURE)
            self.pod_nominator.add_nominated_pod(pod, None)
            return None

    # --- the background loops ------------------------------------------------------------------

    def flush_backoff_q_completed(self) -> None:
        """Move every pod whose backoff has ended from podBackoffQ to activeQ. It runs every
        second, so a pod may wait up to a second past its backoff."""
        with self._lock:
            moved = False
            now = self.clock.now()
            while (p_info := self._pod_backoff_q.peek()) is not None:
                if self.get_backoff_time(p_info) > now:
                    break  # the heap is ordered by backoff end: the rest wait longer
                self._pod_backoff_q.pop()
                self._active_q.add(p_info)
                self._record(p_info, "activeQ", BACKOFF_COMPLETE)
                moved = True
            if moved:
                self._lock.notify_all()

    def flush_unschedulable_q_leftover(self) -> None:
        """Retry the pods that have waited in unschedulableQ longer than
        ``unschedulable_q_time_interval``: the event they need may never come, or may have
        been missed."""
        with self._lock:
            now = self.clock.now()
            leftover = [
                p_info
                for p_info in self._unschedulable_q.values()
                if now - p_info.timestamp > self.unschedulable_q_time_interval
            ]
            if leftover:
                self._move_pods_to_active_or_backoff_queue(leftover, UNSCHEDULABLE_TIMEOUT)

    # --- changes to queued pods ----------------------------------------------------------------

    def update(self, old_pod: V1Pod | None, new_pod: V1Pod) -> None:
        """A queued pod changed (upstream: PriorityQueue.Update).

        In activeQ or podBackoffQ it is updated in place. In unschedulableQ, a change that may
        make it schedulable (anything but status and bookkeeping) moves it to podBackoffQ or
        activeQ; any other change leaves it there. A pod in no queue is added to activeQ.
        """
        with self._lock:
            if old_pod is not None:
                key = meta_namespace_key(old_pod)
                for heap in (self._active_q, self._pod_backoff_q):
                    p_info = heap.get(key)
                    if p_info is not None:
                        p_info.update(new_pod)
                        self.pod_nominator.update_nominated_pod(old_pod, new_pod)
                        heap.update(p_info)
                        return

            full_name = get_pod_full_name(new_pod)
            us_p_info = self._unschedulable_q.get(full_name)
            if us_p_info is not None:
                us_p_info.update(new_pod)
                if old_pod is not None:
                    self.pod_nominator.update_nominated_pod(old_pod, new_pod)
                if old_pod is not None and not is_pod_updated(old_pod, new_pod):
                    return  # nothing that could make it schedulable: it keeps waiting
                del self._unschedulable_q[full_name]
                if self._is_pod_backingoff(us_p_info):
                    self._pod_backoff_q.add(us_p_info)
                    self._record(us_p_info, "podBackoffQ", POD_UPDATE)
                else:
                    self._active_q.add(us_p_info)
                    self._record(us_p_info, "activeQ", POD_UPDATE)
                    self._lock.notify_all()
                return

            p_info = self._new_queued_pod_info(new_pod)
            self._active_q.add(p_info)
            self.pod_nominator.add_nominated_pod(new_pod, None)
            self._record(p_info, "activeQ", POD_UPDATE)
            self._lock.notify_all()

    def delete(self, pod: V1Pod) -> None:
        """The pod is gone, or was bound: forget it, whichever queue holds it."""
        with self._lock:
            self.pod_nominator.delete_nominated_pod_if_exists(pod)
            key = meta_namespace_key(pod)
            p_info = (
                self._active_q.delete(key)
                or self._pod_backoff_q.delete(key)
                or self._unschedulable_q.pop(get_pod_full_name(pod), None)
            )
            if p_info is not None:
                self._record(p_info, "none", POD_DELETE)

    # --- moving pods back ----------------------------------------------------------------------

    def assigned_pod_added(self, pod: V1Pod) -> None:
        """A pod was bound (or created bound): it may satisfy pending pods' pod affinity.

        Simplified: no pod here has pod-affinity terms, so no pod moves; as upstream, the call
        still counts as a move request (``move_request_cycle``).
        """
        with self._lock:
            self._move_pods_to_active_or_backoff_queue([], ASSIGNED_POD_ADD)

    def assigned_pod_updated(self, pod: V1Pod) -> None:
        """A bound pod changed (its labels, say): as ``assigned_pod_added``."""
        with self._lock:
            self._move_pods_to_active_or_backoff_queue([], ASSIGNED_POD_UPDATE)

    def move_all_to_active_or_backoff_queue(
        self, event: ClusterEvent, pre_check: PreEnqueueCheck | None = None
    ) -> None:
        """A cluster event happened: move the unschedulable pods it may help.

        Only pods that pass ``pre_check`` and whose rejecting plugins registered a matching
        event move; each goes to podBackoffQ if still backing off, else to activeQ. The move
        request is remembered (``move_request_cycle``) even if no pod moved.
        """
        with self._lock:
            pods = [
                p_info
                for p_info in self._unschedulable_q.values()
                if pre_check is None or pre_check(p_info.pod)
            ]
            self._move_pods_to_active_or_backoff_queue(pods, event)

    def _move_pods_to_active_or_backoff_queue(
        self, p_infos: Iterable[QueuedPodInfo], event: ClusterEvent
    ) -> None:
        """The caller holds the lock."""
        moved = False
        for p_info in p_infos:
            # A pod without rejecting plugins has had no FitError (only errors, failures at
            # Permit or bind, no nodes): any event may help it.
            if p_info.unschedulable_plugins and not self._pod_matches_event(p_info, event):
                continue
            moved = True
            del self._unschedulable_q[get_pod_full_name(p_info.pod)]
            if self._is_pod_backingoff(p_info):
                self._pod_backoff_q.add(p_info)
                self._record(p_info, "podBackoffQ", event.label)
            else:
                self._active_q.add(p_info)
                self._record(p_info, "activeQ", event.label)
        self._move_request_cycle = self._scheduling_cycle
        if moved:
            self._lock.notify_all()

    def _pod_matches_event(self, p_info: QueuedPodInfo, event: ClusterEvent) -> bool:
        """Whether one of the plugins that rejected the pod registered an event matching
        ``event``. The wildcard event matches every pod."""
        if event.is_wildcard():
            return True
        return any(
            registered.matches(event) and plugins & p_info.unschedulable_plugins
            for registered, plugins in self.cluster_event_map.items()
        )

    # --- backoff -------------------------------------------------------------------------------

    def _is_pod_backingoff(self, p_info: QueuedPodInfo) -> bool:
        """Whether the pod must still wait before its next attempt."""
        return self.get_backoff_time(p_info) > self.clock.now()

    def get_backoff_time(self, p_info: QueuedPodInfo) -> float:
        """When the pod's backoff ends: counted from when it last entered the queue."""
        return p_info.timestamp + self.calculate_backoff_duration(p_info)

    def calculate_backoff_duration(self, p_info: QueuedPodInfo) -> float:
        """1 s for the first attempt, doubling with each further one, at most 10 s."""
        duration = self.pod_initial_backoff_duration
        for _ in range(1, p_info.attempts):
            duration *= 2
            if duration > self.pod_max_backoff_duration:
                return self.pod_max_backoff_duration
        return duration

    def _pods_compare_backoff_completed(self, p1: QueuedPodInfo, p2: QueuedPodInfo) -> bool:
        return self.get_backoff_time(p1) < self.get_backoff_time(p2)

    # --- the rest ------------------------------------------------------------------------------

    def pending_pods(self) -> list[V1Pod]:
        """Every queued pod (upstream: PendingPods), for the report and the tests."""
        with self._lock:
            return [
                p_info.pod
                for p_info in (
                    *self._active_q.list(),
                    *self._pod_backoff_q.list(),
                    *self._unschedulable_q.values(),
                )
            ]

    def close(self) -> None:
        """Stop the background loops, wake every waiting ``pop`` and make it return None
        (upstream: Close)."""
        with self._lock:
            self._closed = True
            loops, self._loops = self._loops, []
            self._lock.notify_all()
        for loop in loops:
            loop.stop()

    def _new_queued_pod_info(self, pod: V1Pod) -> QueuedPodInfo:
        now = self.clock.now()
        return QueuedPodInfo(pod=pod, timestamp=now, initial_attempt_timestamp=now)

    def _record(self, p_info: QueuedPodInfo, queue: str, event: str) -> None:
        # The web page shows when a pod's backoff ends (on this queue's clock) and which
        # plugins rejected a pod parked in unschedulableQ.
        fields: dict[str, object] = {}
        if queue == "podBackoffQ":
            fields["deadline"] = self.get_backoff_time(p_info)
        elif queue == "unschedulableQ":
            fields["plugins"] = sorted(p_info.unschedulable_plugins)
        self.recorder.record("queue", pod=pod_info_key(p_info), queue=queue, event=event, **fields)


def is_pod_updated(old_pod: V1Pod, new_pod: V1Pod) -> bool:
    """Whether a change may make the pod schedulable: anything but its status and the
    bookkeeping fields (resourceVersion, generation, managedFields, finalizers)."""

    def strip(pod: V1Pod) -> dict:
        d = pod.to_dict()
        d.pop("status", None)
        meta = d.get("metadata") or {}
        for field in ("resource_version", "generation", "managed_fields", "finalizers"):
            meta.pop(field, None)
        return d

    return strip(old_pod) != strip(new_pod)
