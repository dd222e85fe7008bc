"""The framework's vocabulary: status codes, Status, the plugin interfaces and FitError.

Upstream: pkg/scheduler/framework/interface.go (Code, Status, Plugin, the
extension point interfaces, Handle) and pkg/scheduler/framework/types.go (FitError, Diagnosis)
at v1.23.
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from kubernetes.client import V1Node, V1Pod

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


# Upstream's Go constants for the codes compared once per node and plugin (framework.Success
# in Status.is_success, framework.Error in the Filter loop).
SUCCESS = Code.SUCCESS
ERROR = Code.ERROR


# slots: a Status is made for every node and plugin in every cycle, and one without a
# __dict__ costs about a third as much to make.
@dataclass(slots=True)
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
        # SUCCESS, not Code.SUCCESS: looking a member up on the enum class costs as much as the
        # rest of this call, which runs for every node and plugin of every cycle.
        return self.code == SUCCESS

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


# What a Filter or Score plugin returns for a node that passes (upstream: a nil *Status, which
# every Status method reads as Success). One shared object: a new Status() for every node and
# plugin was a third of the cycle (0.9 -> 0.6 ms at 500 nodes, measured in-process). It is
# never changed: the framework names the plugin (with_failed_plugin) only on failures, and
# run_filter_plugins returns it for a node every plugin passed.
SUCCESS_STATUS = Status()


def as_status(err: BaseException) -> Status:
    """An ERROR status wrapping ``err`` (upstream: AsStatus)."""
    return Status(Code.ERROR, [str(err)], err=err)


# --- plugins -----------------------------------------------------------------------------------


class Handle(Protocol):
    """What plugins may ask of the framework that runs them (upstream: Handle)."""


@runtime_checkable
class Plugin(Protocol):
    """Every plugin has a name, unique in the registry (upstream: Plugin)."""

    def name(self) -> str: ...


# How the framework builds a plugin: from its arguments (none here) and the handle
# (upstream: runtime.PluginFactory).
PluginFactory = Callable[[Any, Handle], Plugin]


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
        pod: V1Pod,
        node: V1Node,
    ) -> Status: ...


# The range of a plugin's scores once normalized (upstream: MaxNodeScore, MinNodeScore).
MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0


# slots: one is made for every node and plugin in every cycle (see Status).
@dataclass(slots=True)
class NodeScore:
    """A node's score (upstream: NodeScore)."""

    name: str
    score: int


@runtime_checkable
class ScoreExtensions(Protocol):
    """Upstream: ScoreExtensions."""

    def normalize_score(
        self,
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
        pod: V1Pod,
        node_name: str,
    ) -> tuple[int, Status]: ...

    def score_extensions(self) -> ScoreExtensions | None:
        """The plugin's NormalizeScore, or None if its scores are used as they are."""
        ...


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
