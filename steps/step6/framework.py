"""The framework's vocabulary: status codes, Status, the plugin interfaces and FitError.

Upstream: pkg/scheduler/framework/interface.go (Code, Status, PluginToStatus, Plugin, the
extension point interfaces, Handle) and pkg/scheduler/framework/types.go (FitError, Diagnosis,
QueuedPodInfo) at v1.23.
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from kubernetes.client import V1Node, V1Pod

from minisched.clock import Clock
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


@runtime_checkable
class Plugin(Protocol):
    """Every plugin has a name, unique in the registry (upstream: Plugin)."""

    def name(self) -> str: ...


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
class FilterPlugin(Plugin, Protocol):
    """Rules out the nodes that cannot run the pod (upstream: FilterPlugin).

    Returns Success, Unschedulable or UnschedulableAndUnresolvable; any other code makes the
    framework end the cycle with an error.

    Simplified: upstream passes a NodeInfo (the node and the pods on it, from the cache
    snapshot); here the plugin gets the Node.
    """

    def filter(
        self,
        state: CycleState,
        pod: V1Pod,
        node: V1Node,
    ) -> Status: ...


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
