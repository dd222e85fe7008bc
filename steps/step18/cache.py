"""The scheduler cache: every node and the pods on it, bound or only assumed.

Upstream: pkg/scheduler/internal/cache/cache.go (schedulerCache, podState, New, and the Cache
interface of interface.go) at v1.23.

A pod's life in the cache::

    assume_pod --> assumed --finish_binding--> assumed, binding finished --(TTL)--> expired
       |              |                              |
       |           forget_pod (the binding failed)   add_pod (the informer saw it bound)
       |              v                              v
       |           (gone)                          added --update_pod--> added
       |                                             |
       +-- add_pod (a pod bound by someone else) --> added --remove_pod--> (gone)

The informer's add of the bound pod *confirms* an assumed pod: the cache already counts it, so
it is not counted twice. An assumed pod whose binding finished but whose add never came (its
watch event was lost, or it was deleted at once) is expired after the TTL.

Not implemented: the images on each node (imageStates, for ImageLocality), Dump and metrics.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass

from kubernetes.client import V1Node, V1Pod

from minisched.clock import Clock, Timer
from minisched.informer import meta_namespace_key

from .framework import NodeInfo, get_pod_key
from .snapshot import Snapshot

log = logging.getLogger(__name__)

# How often the cleanup loop looks for expired assumed pods (upstream: cleanAssumedPeriod).
CLEAN_ASSUMED_PERIOD = 1.0

# How long an assumed pod whose binding finished waits for the informer to confirm it
# (upstream: durationToExpireAssumedPod in scheduler.go): 15 minutes in v1.23.17, raised from
# 30 s because slow API servers made pods expire while still being bound (issue 106361).
# Later releases set it to 0: assumed pods never expire.
DURATION_TO_EXPIRE_ASSUMED_POD = 15 * 60.0


class CacheError(Exception):
    """A transition the cache refuses (upstream: the errors the Cache methods return; as in
    v1.23 they name the pod by its key, the UID)."""


@dataclass
class PodState:
    """What the cache knows of one pod (upstream: podState)."""

    pod: V1Pod
    # When an assumed pod expires; set by finish_binding.
    deadline: float | None = None
    # Whether its binding is over: only then may it expire.
    binding_finished: bool = False


class Cache:
    """Nodes and pods, as the informers report them and as the scheduler assumes them.

    ``_lock`` guards everything below it: the informers' threads, the scheduling thread, the
    binding threads and the cleanup loop all call in. Simplified: one lock where upstream has
    a read-write mutex.
    """

    def __init__(self, ttl: float, clock: Clock, period: float = CLEAN_ASSUMED_PERIOD) -> None:
        self.ttl = ttl
        self.period = period
        self.clock = clock
        self._loop: Timer | None = None
        self._lock = threading.Lock()
        # Node name -> NodeInfo, most recently changed first: update_snapshot walks it from the
        # front and stops at the first NodeInfo its snapshot already has (upstream: a doubly
        # linked list with headNode).
        self._nodes: OrderedDict[str, NodeInfo] = OrderedDict()
        # The nodes that exist, in the order they were added (upstream: nodeTree).
        # Simplified: one zone. Upstream's nodeTree groups the nodes by their region and zone
        # labels and lists one node of each zone in turn; here nodes keep the order they were
        # added in, so with zone labels the snapshot lists them, and a sampling Filter
        # examines them, in another order than kube-scheduler's.
        self._node_tree: dict[str, None] = {}
        # Pod key -> state, for every pod in the cache; and the keys of the assumed ones.
        self._pod_states: dict[str, PodState] = {}
        self._assumed_pods: set[str] = set()

    # --- the cleanup loop --------------------------------------------------------------------

    def run(self) -> None:
        """Start expiring assumed pods every ``period`` (upstream: run, wait.Until).

        Differs from upstream: New starts the loop when the cache is made; here the
        scheduler's run() starts it, as it starts the queue's loops.
        """
        with self._lock:
            if self._loop is None:
                self._loop = self.clock.every(self.period, self.cleanup_expired_assumed_pods)

    def stop(self) -> None:
        with self._lock:
            if self._loop is not None:
                self._loop.stop()
                self._loop = None

    def cleanup_expired_assumed_pods(self) -> None:
        self.cleanup_assumed_pods(self.clock.now())

    def cleanup_assumed_pods(self, now: float) -> None:
        """Drop the assumed pods whose binding finished more than the TTL ago (upstream:
        cleanupAssumedPods). A pod still being bound never expires."""
        with self._lock:
            for key in list(self._assumed_pods):
                ps = self._pod_states[key]
                if not ps.binding_finished:
                    log.debug(
                        'Could not expire cache for pod as binding is still in progress pod="%s"',
                        meta_namespace_key(ps.pod),
                    )
                    continue
                if ps.deadline is not None and now > ps.deadline:
                    log.warning('Pod expired pod="%s"', meta_namespace_key(ps.pod))
                    try:
                        self._remove_pod(ps.pod)
                    except Exception as err:
                        log.error('ExpirePod failed pod="%s": %s', meta_namespace_key(ps.pod), err)

    # --- pods: the scheduler's side ----------------------------------------------------------

    def assume_pod(self, pod: V1Pod) -> None:
        """Count the pod on ``pod.spec.node_name`` before it is bound (upstream: AssumePod)."""
        key = get_pod_key(pod)
        with self._lock:
            if key in self._pod_states:
                raise CacheError(f"pod {key} is in the cache, so can't be assumed")
            self._add_pod(pod, assume_pod=True)

    def finish_binding(self, pod: V1Pod) -> None:
        """The bind call is over: from now on the assumed pod may expire (upstream:
        FinishBinding)."""
        key = get_pod_key(pod)
        with self._lock:
            log.debug('Finished binding for pod, can be expired pod="%s"', meta_namespace_key(pod))
            current = self._pod_states.get(key)
            if current is not None and key in self._assumed_pods:
                current.deadline = self.clock.now() + self.ttl
                current.binding_finished = True

    def forget_pod(self, pod: V1Pod) -> None:
        """Undo assume_pod: the binding failed (upstream: ForgetPod)."""
        key = get_pod_key(pod)
        with self._lock:
            current = self._pod_states.get(key)
            if current is not None and current.pod.spec.node_name != pod.spec.node_name:
                raise CacheError(
                    f"pod {key} was assumed on {pod.spec.node_name} but assigned to "
                    f"{current.pod.spec.node_name}"
                )
            # Only an assumed pod can be forgotten.
            if current is None or key not in self._assumed_pods:
                raise CacheError(f"pod {key} wasn't assumed so cannot be forgotten")
            self._remove_pod(pod)

    def is_assumed_pod(self, pod: V1Pod) -> bool:
        """Upstream: IsAssumedPod (whose error, for a pod without UID, means "no" to every
        caller)."""
        with self._lock:
            return bool(pod.metadata.uid) and pod.metadata.uid in self._assumed_pods

    def get_pod(self, pod: V1Pod) -> V1Pod:
        """The cache's copy of the pod (upstream: GetPod)."""
        key = get_pod_key(pod)
        with self._lock:
            state = self._pod_states.get(key)
            if state is None:
                raise CacheError(f"pod {key} does not exist in scheduler cache")
            return state.pod

    # --- pods: the informer's side -----------------------------------------------------------

    def add_pod(self, pod: V1Pod) -> None:
        """A bound pod arrived from the informer (upstream: AddPod): it confirms an assumed
        pod, or is new (bound by another scheduler, or assumed and expired meanwhile)."""
        key = get_pod_key(pod)
        name = meta_namespace_key(pod)
        with self._lock:
            current = self._pod_states.get(key)
            if current is not None and key in self._assumed_pods:
                if current.pod.spec.node_name != pod.spec.node_name:
                    # Bound elsewhere than assumed (by someone else): count it where it is.
                    log.info(
                        'Pod was added to a different node than it was assumed pod="%s" '
                        'assumedNode="%s" currentNode="%s"',
                        name,
                        current.pod.spec.node_name,
                        pod.spec.node_name,
                    )
                    self._update_pod(current.pod, pod)
                else:
                    self._assumed_pods.discard(key)
                    current.deadline = None
                    current.pod = pod
            elif current is None:
                # Pod was expired (or never assumed): add it.
                self._add_pod(pod, assume_pod=False)
            else:
                raise CacheError(f"pod {key} was already in added state")

    def update_pod(self, old_pod: V1Pod, new_pod: V1Pod) -> None:
        """A bound pod changed (upstream: UpdatePod). An assumed pod gets no update before
        its add, which confirms it."""
        key = get_pod_key(old_pod)
        with self._lock:
            current = self._pod_states.get(key)
            if current is None or key in self._assumed_pods:
                raise CacheError(f"pod {key} is not added to scheduler cache, so cannot be updated")
            if current.pod.spec.node_name != new_pod.spec.node_name:
                # Differs from upstream: this is where kube-scheduler exits (the cache is
                # corrupted); here the update is refused and the scheduler goes on.
                raise CacheError(
                    f"pod {meta_namespace_key(old_pod)} updated on a different node than "
                    "previously added to: SchedulerCache is corrupted"
                )
            self._update_pod(old_pod, new_pod)

    def remove_pod(self, pod: V1Pod) -> None:
        """A bound pod was deleted (upstream: RemovePod)."""
        key = get_pod_key(pod)
        name = meta_namespace_key(pod)
        with self._lock:
            current = self._pod_states.get(key)
            if current is None:
                raise CacheError(
                    f"pod {key} is not found in scheduler cache, so cannot be removed from it"
                )
            if current.pod.spec.node_name != pod.spec.node_name and pod.spec.node_name:
                # Differs from upstream: kube-scheduler exits here; the cache's own copy is
                # removed instead. (An empty node name is a missed delete's last known state.)
                log.error(
                    'Pod was added to a different node than it was assumed pod="%s" '
                    'assumedNode="%s" currentNode="%s": SchedulerCache is corrupted',
                    name,
                    pod.spec.node_name,
                    current.pod.spec.node_name,
                )
            self._remove_pod(current.pod)

    def pod_count(self) -> int:
        """Pods on every node, assumed ones included (upstream: PodCount)."""
        with self._lock:
            return sum(len(n.pods) for n in self._nodes.values())

    # --- nodes -------------------------------------------------------------------------------

    def add_node(self, node: V1Node) -> NodeInfo:
        """Upstream: AddNode; the copy it returns is for the caller to read."""
        name = node.metadata.name
        with self._lock:
            n = self._nodes.setdefault(name, NodeInfo())
            self._move_node_info_to_head(name)
            self._node_tree[name] = None
            n.set_node(node)
            return n.clone()

    def update_node(self, old_node: V1Node, new_node: V1Node) -> NodeInfo:
        """Upstream: UpdateNode."""
        return self.add_node(new_node)

    def remove_node(self, node: V1Node) -> None:
        """Upstream: RemoveNode. A node deleted with pods still on it stays as a ghost (no
        Node, so no snapshot shows it) until their deletes arrive on the pod watch."""
        name = node.metadata.name
        with self._lock:
            n = self._nodes.get(name)
            if n is None:
                raise CacheError(f"node {name} is not found")
            n.remove_node()
            if not n.pods:
                del self._nodes[name]
            else:
                self._move_node_info_to_head(name)
            self._node_tree.pop(name, None)

    def node_count(self) -> int:
        """Nodes, ghosts included (upstream: NodeCount)."""
        with self._lock:
            return len(self._nodes)

    # --- the snapshot ------------------------------------------------------------------------

    def update_snapshot(self, snapshot: Snapshot) -> None:
        """Bring the snapshot up to date at the start of a cycle (upstream: UpdateSnapshot).

        Only the NodeInfos changed since the snapshot's generation are copied, and each copy
        replaces the old one's contents in place, so the snapshot's list stays valid. Raises
        when the snapshot does not match the cache (it is rebuilt for the next cycle).
        """
        with self._lock:
            update_all_lists = False
            for name, node_info in self._nodes.items():
                if node_info.generation <= snapshot.generation:
                    break  # most recent first: the rest are in the snapshot already
                if node_info.node() is None:
                    continue  # a ghost
                clone = node_info.clone()
                snapshot.changed.add(name)
                existing = snapshot.node_info_map.get(name)
                if existing is None:
                    update_all_lists = True
                    snapshot.node_info_map[name] = clone
                else:
                    # Keep the object: the snapshot's list holds it (upstream: *existing = *clone).
                    vars(existing).update(vars(clone))
            if self._nodes:
                snapshot.generation = next(iter(self._nodes.values())).generation

            if len(snapshot.node_info_map) > len(self._node_tree):
                self._remove_deleted_nodes_from_snapshot(snapshot)
                update_all_lists = True
            if update_all_lists:
                self._update_node_info_snapshot_list(snapshot)

            if len(snapshot.node_info_list) != len(self._node_tree):
                message = (
                    f"snapshot state is not consistent, length of NodeInfoList="
                    f"{len(snapshot.node_info_list)} not equal to length of nodes in tree="
                    f"{len(self._node_tree)}, length of NodeInfoMap="
                    f"{len(snapshot.node_info_map)}, length of nodes in cache="
                    f"{len(self._nodes)}, trying to recover"
                )
                log.error(message)
                self._update_node_info_snapshot_list(snapshot)
                raise CacheError(message)

    def _update_node_info_snapshot_list(self, snapshot: Snapshot) -> None:
        snapshot.node_info_list = [
            snapshot.node_info_map[name]
            for name in self._node_tree
            if name in snapshot.node_info_map
        ]

    def _remove_deleted_nodes_from_snapshot(self, snapshot: Snapshot) -> None:
        for name in list(snapshot.node_info_map):
            n = self._nodes.get(name)
            if n is None or n.node() is None:
                del snapshot.node_info_map[name]

    # --- under the lock ----------------------------------------------------------------------

    def _add_pod(self, pod: V1Pod, assume_pod: bool) -> None:
        key = get_pod_key(pod)
        name = pod.spec.node_name
        # A pod may arrive before its node (they come on different watches).
        self._nodes.setdefault(name, NodeInfo()).add_pod(pod)
        self._move_node_info_to_head(name)
        self._pod_states[key] = PodState(pod)
        if assume_pod:
            self._assumed_pods.add(key)

    def _update_pod(self, old_pod: V1Pod, new_pod: V1Pod) -> None:
        self._remove_pod(old_pod)
        self._add_pod(new_pod, assume_pod=False)

    def _remove_pod(self, pod: V1Pod) -> None:
        key = get_pod_key(pod)
        name = pod.spec.node_name
        n = self._nodes.get(name)
        if n is None:
            log.error(
                'Node not found when trying to remove pod node="%s" pod="%s"',
                name,
                meta_namespace_key(pod),
            )
        else:
            n.remove_pod(pod)
            if not n.pods and n.node() is None:
                del self._nodes[name]  # the last pod of a deleted node: drop the ghost
            else:
                self._move_node_info_to_head(name)
        self._pod_states.pop(key, None)
        self._assumed_pods.discard(key)

    def _move_node_info_to_head(self, name: str) -> None:
        self._nodes.move_to_end(name, last=False)
