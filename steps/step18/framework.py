"""The framework's vocabulary: status codes, Status, the plugin interfaces and FitError.

Upstream: pkg/scheduler/framework/interface.go (Code, Status, PluginToStatus, Plugin, the
extension point interfaces, Handle, PodNominator, PostFilterResult, NominatingInfo),
pkg/scheduler/framework/listers.go (SharedLister) and
pkg/scheduler/framework/types.go (FitError, Diagnosis, QueuedPodInfo, ClusterEvent, ActionType,
GVK, NodeInfo, Resource) at v1.23; the non-zero defaults from pkg/scheduler/util/pod_resources.go.
"""

from __future__ import annotations

import enum
import itertools
import math
import random
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from kubernetes.client import V1Node, V1Pod

from minisched.clock import Clock
from minisched.quantity import parse_quantity
from minisched.recorder import Recorder

from .cycle_state import CycleState

# --- Code and Status ---------------------------------------------------------------------------


class Code(enum.IntEnum):
    """What a plugin decided (upstream: Code, with the same numeric values)."""

    # The plugin ran and the pod may go on.
    SUCCESS = 0
    # Something went wrong inside the plugin: the scheduling cycle ends with an error.
    ERROR = 1
    # The pod does not fit; preemption might make room for it.
    UNSCHEDULABLE = 2
    # The pod does not fit and preemption would not help (upstream: UnschedulableAndUnresolvable).
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    # A Permit plugin holds the pod back before binding.
    WAIT = 4
    # A Bind plugin passes the pod on to the next Bind plugin.
    SKIP = 5

    def __str__(self) -> str:
        """Upstream's name for the code (Code.String): "Success", ..., "Skip"."""
        return "".join(word.title() for word in self.name.split("_"))


# When statuses are merged, the strongest code wins (upstream: statusPrecedence). Codes not
# listed (Wait, Skip) rank 0: above Success, below every failure.
STATUS_PRECEDENCE: dict[Code, int] = {
    Code.ERROR: 3,
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: 2,
    Code.UNSCHEDULABLE: 1,
    Code.SUCCESS: -1,
}


@dataclass
class Status:
    """The result of running a plugin (upstream: Status).

    Simplified: plugins always return a Status; upstream's nil ``*Status`` (Success) is
    ``Status()``.
    """

    code: Code = Code.SUCCESS
    reasons: list[str] = field(default_factory=list)
    # The error behind an ERROR status, when there is one (upstream: Status.err).
    err: BaseException | None = field(default=None, compare=False)
    # The plugin that returned this status, set by the framework (upstream: failedPlugin).
    failed_plugin: str = ""

    def message(self) -> str:
        """The reasons joined by ", " (upstream: Status.Message)."""
        return ", ".join(self.reasons)

    def is_success(self) -> bool:
        return self.code == Code.SUCCESS

    def is_unschedulable(self) -> bool:
        """Unschedulable or UnschedulableAndUnresolvable (upstream: IsUnschedulable)."""
        return self.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

    def as_error(self) -> BaseException | None:
        """None for Success, else the wrapped error or one made of the message (AsError)."""
        if self.is_success():
            return None
        if self.err is not None:
            return self.err
        return Exception(self.message())

    def with_failed_plugin(self, plugin: str) -> Status:
        """Set the failed plugin and return the status (upstream: WithFailedPlugin)."""
        self.failed_plugin = plugin
        return self


def as_status(err: BaseException) -> Status:
    """An ERROR status wrapping ``err`` (upstream: AsStatus)."""
    return Status(Code.ERROR, [str(err)], err=err)


def is_not_found(err: BaseException | None) -> bool:
    """Whether ``err``, or an error it wraps (``__cause__``), is the API server's 404
    (upstream: apierrors.IsNotFound, which unwraps too)."""
    while err is not None:
        if getattr(err, "status", None) == 404:
            return True
        err = err.__cause__
    return False


class PluginToStatus(dict[str, Status]):
    """Each plugin's status for one node (upstream: PluginToStatus)."""

    def merge(self) -> Status:
        """One status for the node: the strongest code, with its failed plugin, and every
        plugin's reasons (upstream: PluginToStatus.Merge)."""
        final = Status()
        for status in self.values():
            if status.code == Code.ERROR:
                final.err = status.as_error()
            if STATUS_PRECEDENCE.get(status.code, 0) > STATUS_PRECEDENCE.get(final.code, 0):
                final.code = status.code
                final.failed_plugin = status.failed_plugin
            final.reasons.extend(status.reasons)
        return final


# --- plugins -----------------------------------------------------------------------------------


# The reserved CycleState key under which a plugin stashes pods to move to activeQ. Pods there
# that wait in unschedulableQ or podBackoffQ are activated at the end of a scheduling cycle
# that succeeds (and the map is then cleared), and again at the end of a binding cycle that
# succeeds (upstream: PodsToActivateKey). Coscheduling's Permit stashes a pod's siblings.
PODS_TO_ACTIVATE_KEY = "kubernetes.io/pods-to-activate"


class PodsToActivate:
    """The pods to activate, keyed by ``namespace/name`` (upstream: PodsToActivate). ``lock``
    guards ``map``: plugins write it, the scheduler reads and clears it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.map: dict[str, V1Pod] = {}

    def clone(self) -> PodsToActivate:
        # Upstream's Clone returns the same object: every copy of the state fills one map.
        return self


class WaitingPod(Protocol):
    """A pod held at Permit, as plugins see it (upstream: WaitingPod)."""

    def get_pod(self) -> V1Pod: ...

    def get_pending_plugins(self) -> list[str]: ...

    def allow(self, plugin: str) -> None: ...

    def reject(self, plugin: str, msg: str) -> None: ...


class Handle(Protocol):
    """What plugins may ask of the framework that runs them (upstream: Handle)."""

    # Not in upstream's Handle: plugins read time and arm timers through the scheduler's clock,
    # so tests can drive them with a FakeClock (upstream plugins call time.AfterFunc).
    clock: Clock
    # Not in upstream's Handle: plugins tell the report what they did (upstream plugins only
    # log it), e.g. what PreScore wrote to CycleState.
    recorder: Recorder

    def get_waiting_pod(self, uid: str) -> WaitingPod | None: ...

    def iterate_over_waiting_pods(self, callback: Callable[[WaitingPod], None]) -> None: ...

    def reject_waiting_pod(self, uid: str) -> bool: ...

    def snapshot_shared_lister(self) -> SharedLister:
        """The snapshot of the cache the current scheduling cycle works on."""
        ...

    def client_set(self) -> Any:
        """The API client (a CoreV1Api), for the plugins that write to the cluster."""
        ...

    # Not in upstream's Handle: the scheduler's seeded random source, so a plugin's random
    # choice (preemption's dry-run offset; upstream calls rand.Int31n) repeats with --seed.
    rng: random.Random

    def event_recorder(self) -> Any:
        """What plugins write Events with (upstream: EventRecorder)."""
        ...

    def pod_lister(self) -> PodLister:
        """The pods as the scheduler's informer has them (upstream: the Pods lister of
        SharedInformerFactory)."""
        ...

    def nominated_pods_for_node(self, node_name: str) -> list[V1Pod]:
        """The pods nominated to run on the node (upstream: the PodNominator the Handle
        embeds)."""
        ...

    def run_filter_plugins_with_nominated_pods(
        self, state: CycleState, pod: V1Pod, node_info: NodeInfo
    ) -> Status: ...

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod_to_schedule: V1Pod, pod_to_add: V1Pod, node_info: NodeInfo
    ) -> Status: ...

    def run_pre_filter_extension_remove_pod(
        self,
        state: CycleState,
        pod_to_schedule: V1Pod,
        pod_to_remove: V1Pod,
        node_info: NodeInfo,
    ) -> Status: ...

    def extenders(self) -> list[Extender]:
        """The scheduler's extenders (preemption asks them about its victims)."""
        ...


class PodLister(Protocol):
    """Upstream: corelisters.PodLister; here the informer's store."""

    def get_by_key(self, key: str) -> V1Pod | None:
        """The pod under ``namespace/name``, or None."""
        ...


class NodeInfoLister(Protocol):
    """Upstream: NodeInfoLister (listers.go)."""

    def list(self) -> list[NodeInfo]: ...

    def get(self, node_name: str) -> NodeInfo: ...


class SharedLister(Protocol):
    """What plugins read the cluster from: the cycle's snapshot (upstream: SharedLister)."""

    def node_infos(self) -> NodeInfoLister: ...


@runtime_checkable
class Plugin(Protocol):
    """Every plugin has a name, unique in the registry (upstream: Plugin)."""

    def name(self) -> str: ...


@runtime_checkable
class EnqueueExtensions(Protocol):
    """A plugin that says which cluster events may make a pod it rejected schedulable
    (upstream: EnqueueExtensions). A plugin without it is assumed to care about every event.
    """

    def events_to_register(self) -> list[ClusterEvent]: ...


# How the framework builds a plugin: from its arguments (none here) and the handle
# (upstream: runtime.PluginFactory).
PluginFactory = Callable[[Any, Handle], Plugin]


@runtime_checkable
class QueueSortPlugin(Plugin, Protocol):
    """Orders the pods waiting in activeQ (upstream: QueueSortPlugin). One per profile."""

    def less(self, p_info1: QueuedPodInfo, p_info2: QueuedPodInfo) -> bool:
        """Whether ``p_info1`` should be scheduled before ``p_info2``."""
        ...


@runtime_checkable
class PreFilterExtensions(Protocol):
    """Keeps a PreFilter plugin's CycleState right when a pod is added to or removed from a
    node in a "what if" (upstream: PreFilterExtensions). Preemption removes the victims from a
    copy of the NodeInfo and of the CycleState, then asks the Filters again: a plugin whose
    PreFilter counted pods (ports, affinity) must count them out too."""

    def add_pod(
        self,
        state: CycleState,
        pod_to_schedule: V1Pod,
        pod_to_add: V1Pod,
        node_info: NodeInfo,
    ) -> Status: ...

    def remove_pod(
        self,
        state: CycleState,
        pod_to_schedule: V1Pod,
        pod_to_remove: V1Pod,
        node_info: NodeInfo,
    ) -> Status: ...


@runtime_checkable
class PreFilterPlugin(Plugin, Protocol):
    """Runs once per cycle, before Filter, to check the pod itself or compute what the Filters
    need into the CycleState (upstream: PreFilterPlugin). Unschedulable fails every node with
    that status; any other failure ends the cycle with an error."""

    def pre_filter(
        self,
        state: CycleState,
        pod: V1Pod,
    ) -> Status: ...

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        """The plugin's AddPod and RemovePod, or None if its state does not depend on the
        pods on a node."""
        ...


@runtime_checkable
class FilterPlugin(Plugin, Protocol):
    """Rules out the nodes that cannot run the pod (upstream: FilterPlugin).

    Returns Success, Unschedulable or UnschedulableAndUnresolvable; any other code makes the
    framework end the cycle with an error. The NodeInfo is the node and the pods on it, from
    the cycle's snapshot of the cache.
    """

    def filter(
        self,
        state: CycleState,
        pod: V1Pod,
        node_info: NodeInfo,
    ) -> Status: ...


class NominatingMode(enum.IntEnum):
    """What to do with a pod's nominated node (upstream: NominatingMode)."""

    # Keep whatever the pod has (upstream: ModeNoop).
    NOOP = 0
    # Set it to NominatingInfo.nominated_node_name, "" clearing it (upstream: ModeOverride).
    OVERRIDE = 1


@dataclass(frozen=True)
class NominatingInfo:
    """A nominated node, and whether it replaces the pod's (upstream: NominatingInfo)."""

    nominated_node_name: str = ""
    nominating_mode: NominatingMode = NominatingMode.NOOP

    def mode(self) -> NominatingMode:
        return self.nominating_mode


def mode_of(nominating_info: NominatingInfo | None) -> NominatingMode:
    """None counts as NOOP (upstream: NominatingInfo.Mode on a nil pointer)."""
    return NominatingMode.NOOP if nominating_info is None else nominating_info.mode()


@dataclass(frozen=True)
class PostFilterResult:
    """What a PostFilter plugin proposes: a node for the pod (upstream: PostFilterResult)."""

    nominating_info: NominatingInfo | None = None


def new_post_filter_result_with_nominated_node(name: str) -> PostFilterResult:
    """Upstream: NewPostFilterResultWithNominatedNode."""
    return PostFilterResult(NominatingInfo(name, NominatingMode.OVERRIDE))


# Every node's Filter status, by node name (upstream: NodeToStatusMap).
NodeToStatusMap = dict[str, Status]


@runtime_checkable
class PostFilterPlugin(Plugin, Protocol):
    """Runs only when no node passed Filter, to make the pod schedulable in a later cycle,
    e.g. by preempting pods (upstream: PostFilterPlugin). Success with a result nominates a
    node; Unschedulable means it could not help; any other code is an error."""

    def post_filter(
        self,
        state: CycleState,
        pod: V1Pod,
        filtered_node_status_map: NodeToStatusMap,
    ) -> tuple[PostFilterResult | None, Status]: ...


@runtime_checkable
class PreScorePlugin(Plugin, Protocol):
    """Runs once per cycle before Score, with every node that passed the filters, to compute
    what Score needs into the CycleState (upstream: PreScorePlugin). Anything but Success
    ends the cycle with an error."""

    def pre_score(
        self,
        state: CycleState,
        pod: V1Pod,
        nodes: list[V1Node],
    ) -> Status: ...


# The range of a plugin's scores once normalized (upstream: MaxNodeScore, MinNodeScore).
MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0


@dataclass
class NodeScore:
    """A node's score (upstream: NodeScore)."""

    name: str
    score: int


@runtime_checkable
class ScoreExtensions(Protocol):
    """Upstream: ScoreExtensions."""

    def normalize_score(
        self,
        state: CycleState,
        pod: V1Pod,
        scores: list[NodeScore],
    ) -> Status:
        """Rewrite the plugin's scores in place into MIN_NODE_SCORE..MAX_NODE_SCORE, once every
        node has been scored (upstream: NormalizeScore)."""
        ...


@runtime_checkable
class ScorePlugin(Plugin, Protocol):
    """Ranks the nodes that passed the filters (upstream: ScorePlugin)."""

    def score(
        self,
        state: CycleState,
        pod: V1Pod,
        node_name: str,
    ) -> tuple[int, Status]: ...

    def score_extensions(self) -> ScoreExtensions | None:
        """The plugin's NormalizeScore, or None if its scores are used as they are."""
        ...


@runtime_checkable
class PermitPlugin(Plugin, Protocol):
    """The last say before binding (upstream: PermitPlugin): Success lets the pod go on,
    Unschedulable rejects it, and Wait holds it, for at most the returned timeout in seconds,
    until the plugin (or anyone with the Handle) allows or rejects it."""

    def permit(
        self,
        state: CycleState,
        pod: V1Pod,
        node_name: str,
    ) -> tuple[Status, float]: ...


@runtime_checkable
class ReservePlugin(Plugin, Protocol):
    """Told when a pod is assumed on a node, and when that is undone (upstream: ReservePlugin).

    Reserve runs in the scheduling cycle, once the pod is assumed; anything but Success fails
    the attempt. Unreserve runs, in reverse plugin order, after any failure from Reserve on
    (Reserve, Permit, WaitOnPermit, PreBind, Bind): it must be idempotent and cannot fail.
    """

    def reserve(
        self,
        state: CycleState,
        pod: V1Pod,
        node_name: str,
    ) -> Status: ...

    def unreserve(
        self,
        state: CycleState,
        pod: V1Pod,
        node_name: str,
    ) -> None: ...


@runtime_checkable
class PreBindPlugin(Plugin, Protocol):
    """Runs in the binding cycle before Bind, e.g. to provision a volume (upstream:
    PreBindPlugin). Anything but Success fails the binding."""

    def pre_bind(
        self,
        state: CycleState,
        pod: V1Pod,
        node_name: str,
    ) -> Status: ...


@runtime_checkable
class BindPlugin(Plugin, Protocol):
    """Binds the pod to the node (upstream: BindPlugin). Skip passes the pod on to the next
    Bind plugin; the first one that does not skip decides."""

    def bind(
        self,
        state: CycleState,
        pod: V1Pod,
        node_name: str,
    ) -> Status: ...


@runtime_checkable
class PostBindPlugin(Plugin, Protocol):
    """Told that the pod was bound; informational, it cannot fail (upstream: PostBindPlugin)."""

    def post_bind(
        self,
        state: CycleState,
        pod: V1Pod,
        node_name: str,
    ) -> None: ...


# --- Extender ----------------------------------------------------------------------------------

# A node name -> why the extender failed it (upstream: extenderv1.FailedNodesMap).
FailedNodesMap = dict[str, str]


@runtime_checkable
class Extender(Protocol):
    """A scheduler extender: an external process the scheduler calls at Filter, Prioritize,
    Preempt and Bind (upstream: framework.Extender; the HTTP one is extender.py's
    HTTPExtender). Every call may raise: the caller decides, with ``is_ignorable``, whether
    that fails the cycle."""

    def name(self) -> str: ...

    def filter(
        self, pod: V1Pod, nodes: list[V1Node]
    ) -> tuple[list[V1Node], FailedNodesMap, FailedNodesMap]:
        """The nodes that pass, and the failed ones with their reasons: those a preemption
        may help, and those it cannot (FailedAndUnresolvableNodes)."""
        ...

    def prioritize(self, pod: V1Pod, nodes: list[V1Node]) -> tuple[list[tuple[str, int]], int]:
        """Each node's score (0..MAX_EXTENDER_PRIORITY), as (host, score) pairs, and the
        extender's weight."""
        ...

    def bind(self, binding: Any) -> None: ...

    def is_binder(self) -> bool: ...

    def is_interested(self, pod: V1Pod) -> bool: ...

    def process_preemption(
        self, pod: V1Pod, node_name_to_victims: dict[str, Any], node_infos: NodeInfoLister
    ) -> dict[str, Any]:
        """The victims per node (preemption.Victims) the extender agrees to, maybe fewer."""
        ...

    def supports_preemption(self) -> bool: ...

    def is_ignorable(self) -> bool: ...


# The highest score an extender gives a node (upstream: extenderv1.MaxExtenderPriority); the
# scheduler scales it to MAX_NODE_SCORE.
MAX_EXTENDER_PRIORITY = 10
MIN_EXTENDER_PRIORITY = 0


# --- FitError ----------------------------------------------------------------------------------

NO_NODE_AVAILABLE_MSG = "0/{} nodes are available"


@dataclass
class Diagnosis:
    """Why each node was rejected, and by which plugins (upstream: Diagnosis)."""

    node_to_status_map: dict[str, Status] = field(default_factory=dict)
    unschedulable_plugins: set[str] = field(default_factory=set)


class FitError(Exception):
    """No node passed the filters (upstream: FitError).

    Its message is a histogram of the reasons, counted once per node and reason, sorted as
    strings (so "10 ..." comes before "2 ..."), after the number of nodes in the cluster:
    ``0/11 nodes are available: 10 node(s) were unschedulable.``
    """

    def __init__(self, pod: V1Pod, num_all_nodes: int, diagnosis: Diagnosis) -> None:
        self.pod = pod
        self.num_all_nodes = num_all_nodes
        self.diagnosis = diagnosis
        super().__init__(self.error())

    def error(self) -> str:
        reasons: Counter[str] = Counter()
        for status in self.diagnosis.node_to_status_map.values():
            reasons.update(status.reasons)
        histogram = sorted(f"{count} {reason}" for reason, count in reasons.items())
        return NO_NODE_AVAILABLE_MSG.format(self.num_all_nodes) + f": {', '.join(histogram)}."


# --- the queue's view of a pod -----------------------------------------------------------------


@dataclass(eq=False)
class QueuedPodInfo:
    """A pod in the scheduling queue and what the queue remembers about its attempts. The
    same object goes from the queue to the scheduler and back on every retry.

    Upstream: QueuedPodInfo. Simplified: upstream embeds a PodInfo (the pod with its parsed
    affinity terms); no plugin here reads affinity, so the pod is held directly.
    """

    pod: V1Pod
    # When the pod entered the queue; reset each time a failed attempt brings it back. Its
    # backoff and its time in unschedulableQ count from here.
    timestamp: float
    # When the pod first entered the queue; kept across retries (upstream: for metrics).
    initial_attempt_timestamp: float
    # Scheduling attempts so far: every pop counts one.
    attempts: int = 0
    # The plugins that rejected the pod in its last FitError: only events they registered can
    # move it out of unschedulableQ. Empty means any event may help.
    unschedulable_plugins: set[str] = field(default_factory=set)

    def update(self, pod: V1Pod) -> None:
        """Take the newer pod, keep the queue's bookkeeping (upstream: PodInfo.Update)."""
        self.pod = pod


# A QueueSort plugin's ordering: True when the first pod goes first (upstream: LessFunc).
LessFunc = Callable[[QueuedPodInfo, QueuedPodInfo], bool]


# --- cluster events ----------------------------------------------------------------------------


class GVK(str, enum.Enum):
    """The kinds of object whose events can make a pod schedulable (upstream: GVK; a subset).

    A plugin may also name a custom resource, as a string ``<resource>.<version>.<group>``
    (``podgroups.v1alpha1.scheduling.sigs.k8s.io``): the scheduler then watches it and turns
    its changes into cluster events (upstream: the GVK naming convention of eventhandlers.go).
    """

    POD = "Pod"
    NODE = "Node"
    WILDCARD = "*"


class ActionType(enum.IntFlag):
    """What happened to an object (upstream: ActionType): a bit set, so a plugin can register
    several actions at once."""

    ADD = 1 << 0
    DELETE = 1 << 1
    UPDATE_NODE_ALLOCATABLE = 1 << 2
    UPDATE_NODE_LABEL = 1 << 3
    UPDATE_NODE_TAINT = 1 << 4
    UPDATE_NODE_CONDITION = 1 << 5
    ALL = (1 << 6) - 1
    # Any of the node updates (upstream: Update).
    UPDATE = UPDATE_NODE_ALLOCATABLE | UPDATE_NODE_LABEL | UPDATE_NODE_TAINT | UPDATE_NODE_CONDITION


@dataclass(frozen=True)
class ClusterEvent:
    """Something that happened in the cluster: the kind of object and what happened to it
    (upstream: ClusterEvent). ``label`` names it in logs and the report; matching ignores it.
    """

    resource: GVK | str
    action_type: ActionType
    label: str = field(default="", compare=False)

    def is_wildcard(self) -> bool:
        return self.resource == GVK.WILDCARD and self.action_type == ActionType.ALL

    def matches(self, other: ClusterEvent) -> bool:
        """Whether a plugin that registered ``self`` cares about ``other``: either is the
        wildcard, or both are about the same kind and their actions share a bit (upstream: the
        test in PriorityQueue.podMatchesEvent)."""
        if self.is_wildcard() or other.is_wildcard():
            return True
        return self.resource == other.resource and bool(self.action_type & other.action_type)


# --- NodeInfo: a node and the pods on it --------------------------------------------------------

# Every change to a NodeInfo takes the next number: the snapshot copies only the NodeInfos
# changed since its own generation (upstream: generation, nextGeneration, an atomic counter;
# next() on itertools.count is atomic in CPython).
_generations = itertools.count(1)


def next_generation() -> int:
    return next(_generations)


def get_pod_key(pod: V1Pod) -> str:
    """The cache's key for a pod: its UID (upstream: GetPodKey)."""
    uid = pod.metadata.uid
    if not uid:
        raise Exception("cannot get cache key for pod with empty UID")
    return uid


@dataclass
class Resource:
    """An amount of the resources the scheduler counts (upstream: Resource).

    Not implemented: extended resources (ScalarResources) and hugepages.
    """

    milli_cpu: int = 0
    memory: int = 0
    ephemeral_storage: int = 0
    allowed_pod_number: int = 0

    @classmethod
    def from_resource_list(cls, rl: dict[str, str] | None) -> Resource:
        """Upstream: NewResource. Quantities are rounded up, as Quantity.MilliValue/Value do."""
        rl = rl or {}

        def value(name: str, scale: int = 1) -> int:
            return math.ceil(parse_quantity(rl[name]) * scale) if name in rl else 0

        return cls(
            milli_cpu=value("cpu", 1000),
            memory=value("memory"),
            ephemeral_storage=value("ephemeral-storage"),
            allowed_pod_number=value("pods"),
        )

    def add(self, other: Resource, sign: int = 1) -> None:
        self.milli_cpu += sign * other.milli_cpu
        self.memory += sign * other.memory
        self.ephemeral_storage += sign * other.ephemeral_storage
        self.allowed_pod_number += sign * other.allowed_pod_number

    def set_max(self, other: Resource) -> None:
        self.milli_cpu = max(self.milli_cpu, other.milli_cpu)
        self.memory = max(self.memory, other.memory)
        self.ephemeral_storage = max(self.ephemeral_storage, other.ephemeral_storage)
        self.allowed_pod_number = max(self.allowed_pod_number, other.allowed_pod_number)


# What a container without a cpu or memory request counts as when nodes are scored, so that
# pods without requests still spread (upstream: DefaultMilliCPURequest, DefaultMemoryRequest).
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024


def get_non_zero_requests(requests: dict[str, str] | None) -> tuple[int, int]:
    """The cpu (millicores) and memory (bytes) requests, each defaulted when absent
    (upstream: GetNonzeroRequests). Only an absent request is defaulted: an explicit 0 stays 0."""
    requests = requests or {}
    milli_cpu = DEFAULT_MILLI_CPU_REQUEST
    if "cpu" in requests:
        milli_cpu = math.ceil(parse_quantity(requests["cpu"]) * 1000)
    memory = DEFAULT_MEMORY_REQUEST
    if "memory" in requests:
        memory = math.ceil(parse_quantity(requests["memory"]))
    return milli_cpu, memory


def calculate_resource(pod: V1Pod) -> tuple[Resource, int, int]:
    """What the pod asks for: the sum of its containers' requests, or the largest init
    container's request if that is more, plus the pod's overhead; and the same for cpu and
    memory with the non-zero defaults (upstream: calculateResource)."""
    res = Resource()
    non0_cpu = non0_mem = 0
    for c in pod.spec.containers or []:
        requests = c.resources and c.resources.requests
        res.add(Resource.from_resource_list(requests))
        cpu, mem = get_non_zero_requests(requests)
        non0_cpu += cpu
        non0_mem += mem
    for c in pod.spec.init_containers or []:
        requests = c.resources and c.resources.requests
        res.set_max(Resource.from_resource_list(requests))
        cpu, mem = get_non_zero_requests(requests)
        non0_cpu = max(non0_cpu, cpu)
        non0_mem = max(non0_mem, mem)
    if pod.spec.overhead:
        overhead = Resource.from_resource_list(pod.spec.overhead)
        res.add(overhead)
        non0_cpu += overhead.milli_cpu
        non0_mem += overhead.memory
    return res, non0_cpu, non0_mem


class NodeInfo:
    """A node as the scheduler sees it: the Node, the pods on it (bound or assumed) and the
    sum of their requests (upstream: NodeInfo).

    Simplified: the pods are held as they are (upstream wraps each in a PodInfo with its parsed
    affinity terms). Not implemented: PodsWithAffinity, UsedPorts, ImageStates and
    PVCRefCounts, which only plugins this scheduler lacks read.
    """

    def __init__(self, *pods: V1Pod) -> None:
        self._node: V1Node | None = None
        self.pods: list[V1Pod] = []
        # The sum of the pods' requests; the same with the non-zero defaults (only its cpu and
        # memory are counted, for scoring); and what the node offers.
        self.requested = Resource()
        self.non_zero_requested = Resource()
        self.allocatable = Resource()
        self.generation = next_generation()
        for pod in pods:
            self.add_pod(pod)

    def node(self) -> V1Node | None:
        """None for a node the cache still holds pods of, but whose Node was deleted."""
        return self._node

    def set_node(self, node: V1Node) -> None:
        self._node = node
        self.allocatable = Resource.from_resource_list(node.status and node.status.allocatable)
        self.generation = next_generation()

    def remove_node(self) -> None:
        self._node = None
        self.generation = next_generation()

    def add_pod(self, pod: V1Pod) -> None:
        self.pods.append(pod)
        self._update(pod, 1)
        self.generation = next_generation()

    def remove_pod(self, pod: V1Pod) -> None:
        """Raises when the pod is not on this node (upstream: RemovePod's error)."""
        key = get_pod_key(pod)
        for i, p in enumerate(self.pods):
            if get_pod_key(p) == key:
                # The last pod fills the gap, as upstream's does: the order of the pods changes
                # (and with it which of two equal victims preemption considers first).
                self.pods[i] = self.pods[-1]
                self.pods.pop()
                self._update(pod, -1)
                self.generation = next_generation()
                return
        node = self._node.metadata.name if self._node else ""
        raise Exception(f"no corresponding pod {pod.metadata.name} in pods of node {node}")

    def _update(self, pod: V1Pod, sign: int) -> None:
        """Count the pod's requests in (sign 1) or out (-1) (upstream: updateResource)."""
        res, non0_cpu, non0_mem = calculate_resource(pod)
        self.requested.add(res, sign)
        self.non_zero_requested.milli_cpu += sign * non0_cpu
        self.non_zero_requested.memory += sign * non0_mem

    def clone(self) -> NodeInfo:
        """A copy that later changes to this one do not reach (the pods themselves are shared:
        nobody changes a pod in place)."""
        clone = NodeInfo()
        clone._node = self._node
        clone.pods = list(self.pods)
        clone.requested = Resource(**vars(self.requested))
        clone.non_zero_requested = Resource(**vars(self.non_zero_requested))
        clone.allocatable = Resource(**vars(self.allocatable))
        clone.generation = self.generation
        return clone
