"""Coscheduling: a group of pods (a PodGroup) is scheduled all or nothing.

Upstream: kubernetes-sigs/scheduler-plugins v0.23.10, pkg/coscheduling/coscheduling.go (the
plugin) and pkg/coscheduling/core/core.go (PodGroupManager, the group bookkeeping), an
out-of-tree plugin built into its own kube-scheduler binary. Here it is one more factory in
the registry, enabled by a profile as the real one is.

Each extension point's part:

- **QueueSort** keeps a group's pods together: priority first, then the *group's* creation
  time (a plain pod's own first attempt), then ``namespace/name``.
- **PreFilter** stops a pod whose group has fewer pods than ``minMember`` (or whose
  ``minResources`` the cluster cannot hold): UnschedulableAndUnresolvable, so no preemption.
- **PostFilter**, when a pod fits nowhere, rejects the siblings waiting at Permit: the group
  would not be whole ("optimistic rejection"), unless the group is 90 % there.
- **Permit** holds each pod until ``minMember`` of the group have a node: the last one
  allows every waiting sibling; the others wait (``scheduleTimeoutSeconds``, else the args'
  ``permitWaitingTimeSeconds``) and ask for their siblings to be activated.
- **Unreserve** (a wait that timed out or was rejected) rejects every waiting sibling.
- **PostBind** writes the group's status: ``scheduled`` and the phase.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from decimal import Decimal
from functools import partial
from typing import Any, Protocol

from kubernetes import client
from kubernetes.client import V1Pod

from minisched.informer import Informer, Store, meta_namespace_key
from minisched.quantity import parse_quantity

from .. import podgroup
from ..cycle_state import CycleState, NotFoundError
from ..framework import (
    GVK,
    PODS_TO_ACTIVATE_KEY,
    ActionType,
    ClusterEvent,
    Code,
    Handle,
    NodeInfo,
    PodsToActivate,
    PostFilterResult,
    QueuedPodInfo,
    SharedLister,
    Status,
    WaitingPod,
)
from ..podgroup import POD_GROUP_LABEL, PodGroup

log = logging.getLogger(__name__)

NAME = "Coscheduling"

# What PodGroupManager.permit decides (upstream: core.Status).
POD_GROUP_NOT_SPECIFIED = "PodGroup not specified"
POD_GROUP_NOT_FOUND = "PodGroup not found"
SUCCESS = "Success"
WAIT = "Wait"

# A group whose missing members are at most this share of minMember is not rejected when one
# of its pods fits nowhere: its next pods may still make it whole (hard-coded in v0.23.10;
# later releases made it the args' podGroupRejectPercentage).
SMALL_GAP = 0.1


@dataclass(frozen=True)
class CoschedulingArgs:
    """Upstream: config.CoschedulingArgs (scheduler-plugins apis/config/types.go)."""

    # How long a group's pods wait at Permit when the group sets no scheduleTimeoutSeconds.
    # (v1beta2 also declares deniedPGExpirationTimeSeconds, which nothing reads.)
    permit_waiting_time_seconds: int = 60


class PodGroupLister(Protocol):
    """The PodGroups as the plugin's informer has them (upstream: PodGroupLister)."""

    def get_by_key(self, key: str) -> PodGroup | None: ...


class PodLister(Protocol):
    """The scheduler's pods (upstream: the Pods lister of the SharedInformerFactory)."""

    def list(self) -> list[V1Pod]: ...


class PodGroupClient(Protocol):
    """Writes a PodGroup (upstream: the generated clientset's Patch)."""

    def patch(self, namespace: str, name: str, patch: dict[str, Any]) -> None: ...


class ApiPodGroupClient:
    """PodGroupClient over the official client's CustomObjectsApi."""

    def __init__(self, api_client: client.ApiClient) -> None:
        self.objects = client.CustomObjectsApi(api_client)

    def patch(self, namespace: str, name: str, patch: dict[str, Any]) -> None:
        self.objects.patch_namespaced_custom_object(
            podgroup.GROUP_NAME,
            podgroup.VERSION,
            namespace,
            podgroup.PLURAL,
            name,
            patch,
            _content_type="application/merge-patch+json",
        )


# --- the group bookkeeping (core.go) ---------------------------------------------------------


class PodGroupManager:
    """What the plugin knows of the groups (upstream: PodGroupManager)."""

    def __init__(
        self,
        pg_client: PodGroupClient | None,
        snapshot_shared_lister: SharedLister | None,
        schedule_timeout: float,
        pg_lister: PodGroupLister,
        pod_lister: PodLister | None,
        now: Callable[[], float],
        clock_minus_wall: float = 0.0,
    ) -> None:
        self.pg_client = pg_client
        self.snapshot_shared_lister = snapshot_shared_lister
        # The default wait at Permit, in seconds; a group's scheduleTimeoutSeconds wins.
        self.schedule_timeout = schedule_timeout
        self.pg_lister = pg_lister
        self.pod_lister = pod_lister
        self.now = now
        # The scheduler's clock is monotonic, a PodGroup's creation time is wall time: this
        # offset, taken once, puts the latter on the former's scale for QueueSort.
        self.clock_minus_wall = clock_minus_wall
        # The groups whose minResources the cluster was found to hold, and until when that
        # finding holds (upstream: permittedPG, a go-cache with scheduleTimeout expiry).
        self.permitted_pg: dict[str, float] = {}

    def activate_siblings(self, pod: V1Pod, state: CycleState) -> None:
        """Stash the pod's siblings in the cycle's PodsToActivate, so that they leave
        unschedulableQ and podBackoffQ (upstream: ActivateSiblings)."""
        pg_name = podgroup.get_pod_group_label(pod)
        if not pg_name:
            return
        pods = [
            p
            for p in self._pods_of(pod.metadata.namespace, pg_name)
            if p.metadata.uid != pod.metadata.uid
        ]
        if not pods:
            return
        try:
            pods_to_activate = state.read(PODS_TO_ACTIVATE_KEY)
        except NotFoundError:
            return
        if isinstance(pods_to_activate, PodsToActivate):
            with pods_to_activate.lock:
                for sibling in pods:
                    pods_to_activate.map[meta_namespace_key(sibling)] = sibling

    def pre_filter(self, pod: V1Pod) -> str | None:
        """Why the pod cannot be scheduled now, or None (upstream: PreFilter's error): its
        group has fewer pods than minMember, or the cluster lacks the group's minResources."""
        pg_full_name, pg = self.get_pod_group(pod)
        if pg is None:
            return None
        pods = self._pods_of(pod.metadata.namespace, podgroup.get_pod_group_label(pod))
        if len(pods) < pg.spec.min_member:
            return (
                f"pre-filter pod {pod.metadata.name} cannot find enough sibling pods, "
                f"current pods number: {len(pods)}, minMember of group: {pg.spec.min_member}"
            )
        if pg.spec.min_resources is None:
            return None
        # Only a check of the cluster's free resources: a group that passes may still fail
        # Filter (affinity, taints, how the free room is split between nodes).
        expires = self.permitted_pg.get(pg_full_name)
        if expires is not None and expires > self.now():
            return None
        if self.snapshot_shared_lister is None:
            return None
        min_resources = dict(pg.spec.min_resources)
        min_resources["pods"] = pg.spec.min_member
        err = check_cluster_resource(
            self.snapshot_shared_lister.node_infos().list(), min_resources, pg_full_name
        )
        if err is not None:
            return err
        self.permitted_pg[pg_full_name] = self.now() + self.schedule_timeout
        return None

    def permit(self, pod: V1Pod) -> str:
        """Whether the pod's group is whole once this pod has its node (upstream: Permit)."""
        pg_full_name, pg = self.get_pod_group(pod)
        if not pg_full_name:
            return POD_GROUP_NOT_SPECIFIED
        if pg is None:
            # A pod that names a group that does not exist is denied.
            return POD_GROUP_NOT_FOUND
        # The pods with a node, from the snapshot: the current pod is not in it yet.
        assigned = self.calculate_assigned_pods(pg.metadata.name, pg.metadata.namespace)
        if assigned + 1 >= pg.spec.min_member:
            return SUCCESS
        return WAIT

    def post_bind(self, pod: V1Pod, node_name: str) -> None:
        """Count the pod as scheduled in its group's status, and write the phase when it
        changes (upstream: PostBind, a TODO to leave it to the PodGroup controller).

        The count starts from the informer's copy, which a quick succession of bindings may
        find stale; and the patch is written only when the phase changes. So ``scheduled``
        is a lower bound, as upstream's is.
        """
        pg_full_name, pg = self.get_pod_group(pod)
        if not pg_full_name or pg is None:
            return
        new = pg.model_copy(deep=True)
        new.status.scheduled += 1
        if new.status.scheduled >= new.spec.min_member:
            new.status.phase = podgroup.POD_GROUP_SCHEDULED
        else:
            new.status.phase = podgroup.POD_GROUP_SCHEDULING
            if new.status.schedule_start_time is None:
                new.status.schedule_start_time = datetime.now(timezone.utc).replace(microsecond=0)
        if new.status.phase == pg.status.phase:
            return
        current = self.pg_lister.get_by_key(pg_full_name)
        if current is None:
            log.error('Failed to get PodGroup podGroup="%s"', pg_full_name)
            return
        patch = podgroup.status_merge_patch(current, new)
        if not patch or self.pg_client is None:
            return
        try:
            self.pg_client.patch(pg.metadata.namespace, pg.metadata.name, patch)
        except Exception as err:
            log.error('Failed to patch podGroup="%s": %s', pg_full_name, err)

    def get_creation_timestamp(self, pod: V1Pod, ts: float) -> float:
        """The creation time of the pod's group, else ``ts`` (upstream: GetCreationTimestamp),
        on the scheduler's clock."""
        pg_name = podgroup.get_pod_group_label(pod)
        if not pg_name:
            return ts
        pg = self.pg_lister.get_by_key(f"{pod.metadata.namespace}/{pg_name}")
        if pg is None:
            return ts
        created = pg.metadata.creation_timestamp
        # Go's zero time, for a group without one, sorts before every real time.
        if created is None:
            return -math.inf
        return created.timestamp() + self.clock_minus_wall

    def delete_permitted_pod_group(self, pg_full_name: str) -> None:
        """Forget that the group passed PreFilter's resource check (upstream:
        DeletePermittedPodGroup)."""
        self.permitted_pg.pop(pg_full_name, None)

    def get_pod_group(self, pod: V1Pod) -> tuple[str, PodGroup | None]:
        """``namespace/group`` and the group, which may not exist; ("", None) for a pod in no
        group (upstream: GetPodGroup)."""
        pg_name = podgroup.get_pod_group_label(pod)
        if not pg_name:
            return "", None
        full_name = f"{pod.metadata.namespace}/{pg_name}"
        return full_name, self.pg_lister.get_by_key(full_name)

    def calculate_assigned_pods(self, pod_group_name: str, namespace: str) -> int:
        """How many of the group's pods have a node in the snapshot, assumed or bound
        (upstream: CalculateAssignedPods)."""
        if self.snapshot_shared_lister is None:
            return 0
        count = 0
        for node_info in self.snapshot_shared_lister.node_infos().list():
            for pod in node_info.pods:
                if (
                    (pod.metadata.labels or {}).get(POD_GROUP_LABEL) == pod_group_name
                    and pod.metadata.namespace == namespace
                    and pod.spec.node_name
                ):
                    count += 1
        return count

    def _pods_of(self, namespace: str, pg_name: str) -> list[V1Pod]:
        """The group's pods, in any phase the scheduler's informer keeps (upstream: the pod
        lister with the selector ``pod-group.scheduling.sigs.k8s.io=<group>``)."""
        if self.pod_lister is None:
            return []
        return [
            p
            for p in self.pod_lister.list()
            if p.metadata.namespace == namespace
            and (p.metadata.labels or {}).get(POD_GROUP_LABEL) == pg_name
        ]


def check_cluster_resource(
    node_list: list[NodeInfo], resource_request: dict[str, Any], desired_pod_group_name: str
) -> str | None:
    """None if the nodes' free resources add up to ``resource_request``, else the gap
    (upstream: CheckClusterResource). The group's own pods count as free room.

    Simplified: extended resources in the request count as free nowhere (NodeInfo does not
    count them), so a minResources that names one is never met.
    """
    wanted = {name: Decimal(str(parse_quantity(q))) for name, q in resource_request.items()}
    for info in node_list:
        if info is None or info.node() is None:
            continue
        left = _node_resource(info, desired_pod_group_name)
        for name in list(wanted):
            rest = wanted[name] - left.get(name, Decimal(0))
            if rest <= 0:
                del wanted[name]
            else:
                wanted[name] = rest
        if not wanted:
            return None
    gap = " ".join(f"{name}:{_format(q)}" for name, q in sorted(wanted.items()))
    return f"resource gap: map[{gap}]"


def _format(q: Decimal) -> str:
    """The amount in plain notation: 50, not Decimal's 5E+1; 0.5, not 0.500."""
    return f"{q.normalize():f}"


def _node_resource(info: NodeInfo, desired_pod_group_name: str) -> dict[str, Decimal]:
    """What the node has free once the group's own pods are taken off it (upstream:
    getNodeResource and util.ResourceList)."""
    clone = info.clone()
    for pod in info.pods:
        if podgroup.get_pod_group_full_name(pod) == desired_pod_group_name:
            clone.remove_pod(pod)
    allocatable, requested = clone.allocatable, clone.requested
    return {
        "cpu": Decimal(allocatable.milli_cpu - requested.milli_cpu) / 1000,
        "memory": Decimal(allocatable.memory - requested.memory),
        "pods": Decimal(allocatable.allowed_pod_number - len(clone.pods)),
        "ephemeral-storage": Decimal(allocatable.ephemeral_storage - requested.ephemeral_storage),
    }


# --- the plugin (coscheduling.go) ------------------------------------------------------------


class Coscheduling:
    """Schedules the pods of a PodGroup together (upstream: Coscheduling)."""

    def __init__(
        self, handle: Handle | None, pg_mgr: PodGroupManager, schedule_timeout: float
    ) -> None:
        self.handle = handle
        self.pg_mgr = pg_mgr
        self.schedule_timeout = schedule_timeout
        # The informer new() started; close() stops it.
        self.informer: Informer[PodGroup] | None = None

    def name(self) -> str:
        return NAME

    def events_to_register(self) -> list[ClusterEvent]:
        """A new pod may complete a group; a new or changed PodGroup may let its pods pass
        (upstream: a custom resource named by the GVK convention of eventhandlers.go)."""
        pg_gvk = f"{podgroup.PLURAL}.{podgroup.VERSION}.{podgroup.GROUP_NAME}"
        return [
            ClusterEvent(GVK.POD, ActionType.ADD),
            ClusterEvent(pg_gvk, ActionType.ADD | ActionType.UPDATE),
        ]

    # --- QueueSort ----------------------------------------------------------------------------

    def less(self, p_info1: QueuedPodInfo, p_info2: QueuedPodInfo) -> bool:
        """Higher priority first; then the earlier group (or, for a pod in no group, the
        earlier first attempt); then ``namespace/name`` (upstream: Less)."""
        prio1, prio2 = pod_priority(p_info1.pod), pod_priority(p_info2.pod)
        if prio1 != prio2:
            return prio1 > prio2
        time1 = self.pg_mgr.get_creation_timestamp(p_info1.pod, p_info1.initial_attempt_timestamp)
        time2 = self.pg_mgr.get_creation_timestamp(p_info2.pod, p_info2.initial_attempt_timestamp)
        if time1 == time2:
            return meta_namespace_key(p_info1.pod) < meta_namespace_key(p_info2.pod)
        return time1 < time2

    # --- PreFilter ----------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: V1Pod) -> Status:
        """UnschedulableAndUnresolvable while the group is incomplete: no preemption could
        help (upstream: PreFilter)."""
        err = self.pg_mgr.pre_filter(pod)
        if err is not None:
            # Differs from upstream: logged at info, not as an error (klog.ErrorS): the report
            # already prints the reason, and every pod of a forming group fails here.
            log.info('PreFilter failed err="%s" pod="%s"', err, meta_namespace_key(pod))
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [err])
        return Status()

    def pre_filter_extensions(self) -> None:
        return None

    # --- PostFilter ---------------------------------------------------------------------------

    def post_filter(
        self, state: CycleState, pod: V1Pod, filtered_node_status_map: dict[str, Status]
    ) -> tuple[PostFilterResult | None, Status]:
        """The pod fits nowhere: reject its waiting siblings, unless the group is already
        whole or nearly so (upstream: PostFilter)."""
        pg_name, pg = self.pg_mgr.get_pod_group(pod)
        if pg is None:
            log.debug('Pod does not belong to any group pod="%s"', meta_namespace_key(pod))
            return PostFilterResult(), Status(Code.UNSCHEDULABLE, ["can not find pod group"])
        # Enough pods have their node already: the group does not need this one.
        assigned = self.pg_mgr.calculate_assigned_pods(pg.metadata.name, pod.metadata.namespace)
        if assigned >= pg.spec.min_member:
            return PostFilterResult(), Status(Code.UNSCHEDULABLE)
        # A small gap: the group's next pods may still make it whole.
        not_assigned_percentage = (pg.spec.min_member - assigned) / pg.spec.min_member
        if not_assigned_percentage <= SMALL_GAP:
            return PostFilterResult(), Status(Code.UNSCHEDULABLE)
        # If one pod fits nowhere, its siblings are likely not to either: let go of the room
        # the waiting ones hold.
        self.reject_waiting_siblings(pod, pg.metadata.name, "optimistic rejection in PostFilter")
        self.pg_mgr.delete_permitted_pod_group(pg_name)
        return PostFilterResult(), Status(
            Code.UNSCHEDULABLE,
            [
                f"PodGroup {pg_name} gets rejected due to Pod {pod.metadata.name} is "
                "unschedulable even after PostFilter"
            ],
        )

    # --- Permit -------------------------------------------------------------------------------

    def permit(self, state: CycleState, pod: V1Pod, node_name: str) -> tuple[Status, float]:
        """Allow the whole group once minMember of its pods have a node; until then, wait
        and have the siblings activated (upstream: Permit)."""
        wait_time = self.schedule_timeout
        decision = self.pg_mgr.permit(pod)
        if decision == POD_GROUP_NOT_SPECIFIED:
            return Status(), 0.0
        if decision == POD_GROUP_NOT_FOUND:
            return Status(Code.UNSCHEDULABLE, ["PodGroup not found"]), 0.0
        if decision == WAIT:
            log.info(
                'Pod is waiting to be scheduled to node pod="%s" nodeName="%s"',
                meta_namespace_key(pod),
                node_name,
            )
            _, pg = self.pg_mgr.get_pod_group(pod)
            wait = podgroup.get_wait_time_duration(pg, self.schedule_timeout)
            if wait != 0:
                wait_time = wait
            # Also ask for the siblings to leave unschedulableQ and podBackoffQ.
            self.pg_mgr.activate_siblings(pod, state)
            return Status(Code.WAIT), wait_time
        pg_full_name = podgroup.get_pod_group_full_name(pod)
        if self.handle is not None:

            def allow(waiting_pod: WaitingPod) -> None:
                if podgroup.get_pod_group_full_name(waiting_pod.get_pod()) == pg_full_name:
                    log.debug('Permit allows pod="%s"', meta_namespace_key(waiting_pod.get_pod()))
                    waiting_pod.allow(NAME)

            self.handle.iterate_over_waiting_pods(allow)
        return Status(), 0.0

    # --- Reserve ------------------------------------------------------------------------------

    def reserve(self, state: CycleState, pod: V1Pod, node_name: str) -> Status:
        return Status()

    def unreserve(self, state: CycleState, pod: V1Pod, node_name: str) -> None:
        """One pod of the group timed out or was rejected: so are its waiting siblings
        (upstream: Unreserve)."""
        pg_name, pg = self.pg_mgr.get_pod_group(pod)
        if pg is None:
            return
        self.reject_waiting_siblings(pod, pg.metadata.name, "rejection in Unreserve")
        self.pg_mgr.delete_permitted_pod_group(pg_name)

    # --- PostBind -----------------------------------------------------------------------------

    def post_bind(self, state: CycleState, pod: V1Pod, node_name: str) -> None:
        self.pg_mgr.post_bind(pod, node_name)

    # --- helpers ------------------------------------------------------------------------------

    def reject_waiting_siblings(self, pod: V1Pod, pg_name: str, message: str) -> None:
        """Reject the pods of the group that wait at Permit."""
        if self.handle is None:
            return

        def reject(waiting_pod: WaitingPod) -> None:
            other = waiting_pod.get_pod()
            labels = other.metadata.labels or {}
            if (
                other.metadata.namespace == pod.metadata.namespace
                and labels.get(POD_GROUP_LABEL) == pg_name
            ):
                log.debug('Rejecting pod="%s" podGroup="%s"', meta_namespace_key(other), pg_name)
                waiting_pod.reject(NAME, message)

        self.handle.iterate_over_waiting_pods(reject)

    def close(self) -> None:
        """Stop the PodGroup informer (not in upstream, whose informer lives as long as the
        process: here a scheduler that stops, as tests' do, stops it too)."""
        if self.informer is not None:
            self.informer.stop()


def pod_priority(pod: V1Pod) -> int:
    """The pod's priority, 0 if it has none (upstream: corev1helpers.PodPriority)."""
    return pod.spec.priority or 0


def new(args: Any, handle: Handle) -> Coscheduling:
    """The plugin factory (upstream: New): starts the PodGroup informer and waits until it
    has listed the groups."""
    if not isinstance(args, CoschedulingArgs):
        got = "<nil>" if args is None else "*runtime.Unknown"
        raise ValueError(f"want args to be of type CoschedulingArgs, got {got}")
    schedule_timeout = float(args.permit_waiting_time_seconds)
    client_set = handle.client_set()
    if client_set is None:
        # Differs from upstream, whose New needs the API server (it waits until the PodGroups
        # are listed): a framework built without a client (``--config`` checks a file's
        # profiles before it connects anywhere, minisched/cli.py) gets a plugin that knows
        # no PodGroup.
        empty: Store[PodGroup] = Store()
        pg_mgr = PodGroupManager(None, None, schedule_timeout, empty, None, handle.clock.now)
        return Coscheduling(handle, pg_mgr, schedule_timeout)
    api_client = client_set.api_client
    objects = client.CustomObjectsApi(api_client)
    informer: Informer[PodGroup] = Informer(
        partial(
            objects.list_cluster_custom_object,
            podgroup.GROUP_NAME,
            podgroup.VERSION,
            podgroup.PLURAL,
        ),
        PodGroup,
    )
    pg_mgr = PodGroupManager(
        ApiPodGroupClient(api_client),
        handle.snapshot_shared_lister(),
        schedule_timeout,
        informer.store,
        _LazyPodLister(handle),
        handle.clock.now,
        handle.clock.now() - time.time(),
    )
    plugin = Coscheduling(handle, pg_mgr, schedule_timeout)
    plugin.informer = informer
    informer.start()
    tries = 0
    while not informer.wait_for_cache_sync(0.1):
        tries += 1
        if tries == 50:
            log.warning(
                "Coscheduling: still waiting for the PodGroups to list: is their "
                "CustomResourceDefinition installed? (kubectl apply -f manifests/podgroup-crd.yaml)"
            )
    return plugin


class _LazyPodLister:
    """The scheduler's pod informer, which exists only after the frameworks are built."""

    def __init__(self, handle: Handle) -> None:
        self.handle = handle

    def list(self) -> list[V1Pod]:
        return self.handle.pod_lister().list()  # type: ignore[attr-defined,no-any-return]
