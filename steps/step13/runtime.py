"""The framework: builds the profile's plugins and runs them at each extension point.

Upstream: pkg/scheduler/framework/runtime/framework.go (frameworkImpl, NewFramework and the
Run*Plugins functions) and runtime/registry.go (Registry) at v1.23; the profile's shape comes
from pkg/scheduler/apis/config/types.go (Plugins, Plugin).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from kubernetes.client import V1Node, V1Pod

from minisched.clock import Clock
from minisched.informer import meta_namespace_key
from minisched.recorder import NullRecorder, Recorder

from . import framework
from .cycle_state import CycleState
from .waiting_pods import WaitingPod, WaitingPodsMap

log = logging.getLogger(__name__)

# The longest a Permit plugin may make a pod wait (upstream: maxTimeout, 15 minutes).
MAX_TIMEOUT = 15 * 60.0

# Plugin name -> factory (upstream: Registry).
Registry = dict[str, framework.PluginFactory]


@dataclass(frozen=True)
class EnabledPlugin:
    """A plugin enabled at an extension point (upstream: config.Plugin)."""

    name: str
    # Score plugins only: the plugin's scores are multiplied by it; 0 means 1, as upstream
    # defaults it.
    weight: int = 0


@dataclass
class Plugins:
    """The profile: the plugins enabled at each extension point, in the order they run
    (upstream: config.Plugins)."""

    queue_sort: list[EnabledPlugin] = field(default_factory=list)
    pre_filter: list[EnabledPlugin] = field(default_factory=list)
    filter: list[EnabledPlugin] = field(default_factory=list)
    post_filter: list[EnabledPlugin] = field(default_factory=list)
    pre_score: list[EnabledPlugin] = field(default_factory=list)
    score: list[EnabledPlugin] = field(default_factory=list)
    reserve: list[EnabledPlugin] = field(default_factory=list)
    permit: list[EnabledPlugin] = field(default_factory=list)
    pre_bind: list[EnabledPlugin] = field(default_factory=list)
    bind: list[EnabledPlugin] = field(default_factory=list)
    post_bind: list[EnabledPlugin] = field(default_factory=list)


class Framework:
    """Runs the enabled plugins at each extension point (upstream: frameworkImpl).

    It is also the Handle the plugins are built with.
    Simplified: one profile, so one framework; upstream keeps one per schedulerName.
    """

    def __init__(
        self,
        registry: Registry,
        profile: Plugins,
        clock: Clock,
        recorder: Recorder | None = None,
        *,
        client_set: Any = None,
        snapshot_shared_lister: framework.SharedLister | None = None,
        event_recorder: Callable[[], Any] | None = None,
        pod_lister: Callable[[], framework.PodLister] | None = None,
        pod_nominator: PodNominator | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.clock = clock
        self.recorder = recorder or NullRecorder()
        # For the Handle (upstream: the WithClientSet, WithSnapshotSharedLister,
        # WithEventRecorder, WithInformerFactory and WithPodNominator options). The event
        # recorder and the pod lister are functions: the scheduler builds its informers after
        # the framework.
        self.client = client_set
        self.snapshot = snapshot_shared_lister
        self._event_recorder = event_recorder
        self._pod_lister = pod_lister
        self.pod_nominator = pod_nominator
        self.rng = rng or random.Random()
        self.waiting_pods = WaitingPodsMap()
        # For each cluster event, the plugins that registered it; the queue reads it to move
        # only the pods such an event may help (upstream: the clusterEventMap option).
        self.cluster_event_map: dict[framework.ClusterEvent, set[str]] = {}
        self.queue_sort_plugins: list[framework.QueueSortPlugin] = []
        self.pre_filter_plugins: list[framework.PreFilterPlugin] = []
        self.filter_plugins: list[framework.FilterPlugin] = []
        self.post_filter_plugins: list[framework.PostFilterPlugin] = []
        self.pre_score_plugins: list[framework.PreScorePlugin] = []
        self.score_plugins: list[framework.ScorePlugin] = []
        self.score_plugin_weight: dict[str, int] = {p.name: p.weight or 1 for p in profile.score}
        self.reserve_plugins: list[framework.ReservePlugin] = []
        self.permit_plugins: list[framework.PermitPlugin] = []
        self.pre_bind_plugins: list[framework.PreBindPlugin] = []
        self.bind_plugins: list[framework.BindPlugin] = []
        self.post_bind_plugins: list[framework.PostBindPlugin] = []

        # Each extension point: the plugins the profile enables there, the list the framework
        # runs, and the interface a plugin must implement to be used there.
        extension_points: list[tuple[list[EnabledPlugin], list[Any], type]] = [
            (profile.queue_sort, self.queue_sort_plugins, framework.QueueSortPlugin),
            (profile.pre_filter, self.pre_filter_plugins, framework.PreFilterPlugin),
            (profile.filter, self.filter_plugins, framework.FilterPlugin),
            (profile.post_filter, self.post_filter_plugins, framework.PostFilterPlugin),
            (profile.pre_score, self.pre_score_plugins, framework.PreScorePlugin),
            (profile.score, self.score_plugins, framework.ScorePlugin),
            (profile.reserve, self.reserve_plugins, framework.ReservePlugin),
            (profile.permit, self.permit_plugins, framework.PermitPlugin),
            (profile.pre_bind, self.pre_bind_plugins, framework.PreBindPlugin),
            (profile.bind, self.bind_plugins, framework.BindPlugin),
            (profile.post_bind, self.post_bind_plugins, framework.PostBindPlugin),
        ]
        # Build each plugin once, even when it serves several extension points.
        instances: dict[str, framework.Plugin] = {}
        for enabled, plugins, kind in extension_points:
            for p in enabled:
                if p.name not in instances:
                    if p.name not in registry:
                        raise ValueError(f'plugin "{p.name}" does not exist')
                    instances[p.name] = registry[p.name](None, self)
                    fill_event_to_plugin_map(instances[p.name], self.cluster_event_map)
                plugin = instances[p.name]
                if not isinstance(plugin, kind):
                    raise TypeError(f'plugin "{p.name}" does not extend {kind.__name__} plugin')
                plugins.append(plugin)

    # --- QueueSort -------------------------------------------------------------------------

    def queue_sort_func(self) -> framework.LessFunc:
        """The order of activeQ: the QueueSort plugin's ``less`` (upstream: QueueSortFunc).
        Upstream's profile validation allows exactly one QueueSort plugin."""
        if not self.queue_sort_plugins:
            raise ValueError("no QueueSort plugin is registered in the framework")
        return self.queue_sort_plugins[0].less

    # --- PreFilter --------------------------------------------------------------------------

    def run_pre_filter_plugins(
        self,
        state: CycleState,
        pod: V1Pod,
    ) -> framework.Status:
        """Run the PreFilter plugins in order; stop at the first that does not succeed.

        Unschedulable (or UnschedulableAndUnresolvable) comes back as it is, naming the plugin:
        the caller fails every node with it. Any other failure is an ERROR status.

        Upstream: RunPreFilterPlugins. Not implemented: PreFilterResult, the set of nodes a
        PreFilter may narrow the cycle to (it came in v1.24).
        """
        for pl in self.pre_filter_plugins:
            status = pl.pre_filter(state, pod)
            if status.is_success():
                continue
            if status.is_unschedulable():
                return status.with_failed_plugin(pl.name())
            err = Exception(f'running PreFilter plugin "{pl.name()}": {status.as_error()}')
            return framework.as_status(err)
        return framework.Status()

    def run_pre_filter_extension_add_pod(
        self,
        state: CycleState,
        pod_to_schedule: V1Pod,
        pod_to_add: V1Pod,
        node_info: framework.NodeInfo,
    ) -> framework.Status:
        """Tell each PreFilter plugin with extensions that ``pod_to_add`` is now on the node;
        the first failure is an ERROR status (upstream: RunPreFilterExtensionAddPod)."""
        for pl in self.pre_filter_plugins:
            extensions = pl.pre_filter_extensions()
            if extensions is None:
                continue
            status = extensions.add_pod(state, pod_to_schedule, pod_to_add, node_info)
            if not status.is_success():
                err = Exception(
                    f'running AddPod on PreFilter plugin "{pl.name()}": {status.as_error()}'
                )
                return framework.as_status(err)
        return framework.Status()

    def run_pre_filter_extension_remove_pod(
        self,
        state: CycleState,
        pod_to_schedule: V1Pod,
        pod_to_remove: V1Pod,
        node_info: framework.NodeInfo,
    ) -> framework.Status:
        """The same for a pod taken off the node (upstream: RunPreFilterExtensionRemovePod)."""
        for pl in self.pre_filter_plugins:
            extensions = pl.pre_filter_extensions()
            if extensions is None:
                continue
            status = extensions.remove_pod(state, pod_to_schedule, pod_to_remove, node_info)
            if not status.is_success():
                err = Exception(
                    f'running RemovePod on PreFilter plugin "{pl.name()}": {status.as_error()}'
                )
                return framework.as_status(err)
        return framework.Status()

    # --- Filter -----------------------------------------------------------------------------

    def run_filter_plugins(
        self,
        state: CycleState,
        pod: V1Pod,
        node_info: framework.NodeInfo,
    ) -> framework.PluginToStatus:
        """Run the Filter plugins in order for one node; stop at the first rejection.

        A plugin that returns anything but Success or Unschedulable* is an error: the result is
        that plugin's ERROR status alone, and the caller ends the cycle.

        Upstream: RunFilterPlugins with runAllFilters false (the default), so only the first
        failing plugin's reasons are kept for the node; the plugin order decides the message.
        """
        statuses = framework.PluginToStatus()
        for pl in self.filter_plugins:
            status = pl.filter(state, pod, node_info)
            if status.is_success():
                continue
            if not status.is_unschedulable():
                err = Exception(f'running "{pl.name()}" filter plugin: {status.as_error()}')
                return framework.PluginToStatus(
                    {pl.name(): framework.as_status(err).with_failed_plugin(pl.name())}
                )
            statuses[pl.name()] = status.with_failed_plugin(pl.name())
            return statuses
        return statuses

    def run_filter_plugins_with_nominated_pods(
        self,
        state: CycleState,
        pod: V1Pod,
        node_info: framework.NodeInfo,
    ) -> framework.Status:
        """Run the Filter plugins on the node as if the pods nominated to it, of the pod's
        priority or higher, were already there; and, if that passes, again without them
        (upstream: RunFilterPluginsWithNominatedPods).

        The pod must not take room kept for a pod it would have to yield to; room freed for
        lower-priority pods it may take. Both passes must succeed: filters such as resources
        are harder to pass with the nominated pods, filters such as pod affinity without them,
        and a nominated pod may yet end up elsewhere. Without such nominated pods, one pass.
        """
        status = framework.Status()
        pods_added = False
        for i in range(2):
            state_to_use, node_info_to_use = state, node_info
            if i == 0:
                try:
                    pods_added, state_to_use, node_info_to_use = add_nominated_pods(
                        self, pod, state, node_info
                    )
                except Exception as err:
                    return framework.as_status(err)
            elif not pods_added or not status.is_success():
                break
            status = self.run_filter_plugins(state_to_use, pod, node_info_to_use).merge()
            if not status.is_success() and not status.is_unschedulable():
                return status
        return status

    # --- PostFilter -------------------------------------------------------------------------

    def has_post_filter_plugins(self) -> bool:
        return bool(self.post_filter_plugins)

    def run_post_filter_plugins(
        self,
        state: CycleState,
        pod: V1Pod,
        filtered_node_status_map: framework.NodeToStatusMap,
    ) -> tuple[framework.PostFilterResult | None, framework.Status]:
        """Run the PostFilter plugins in order until one succeeds; its result is the result
        (upstream: RunPostFilterPlugins).

        Unschedulable passes on to the next plugin; any other failure is an ERROR status at
        once. When none succeeds: the last result that asked for a change of nomination (a
        failed preemption asks to clear it), and the merged Unschedulable statuses.
        """
        statuses = framework.PluginToStatus()
        # The last meaningful (not Noop) result.
        last_result: framework.PostFilterResult | None = None
        for pl in self.post_filter_plugins:
            result, status = pl.post_filter(state, pod, filtered_node_status_map)
            if status.is_success():
                return result, status
            if not status.is_unschedulable():
                # Any status other than Success or Unschedulable is Error.
                return None, framework.as_status(status.as_error() or Exception())
            if result is not None and framework.mode_of(result.nominating_info) != (
                framework.NominatingMode.NOOP
            ):
                last_result = result
            statuses[pl.name()] = status.with_failed_plugin(pl.name())
        return last_result, statuses.merge()

    # --- PreScore ---------------------------------------------------------------------------

    def run_pre_score_plugins(
        self,
        state: CycleState,
        pod: V1Pod,
        nodes: list[V1Node],
    ) -> framework.Status:
        """Run the PreScore plugins in order; the first failure is an ERROR status
        (upstream: RunPreScorePlugins)."""
        for pl in self.pre_score_plugins:
            status = pl.pre_score(state, pod, nodes)
            if not status.is_success():
                err = Exception(f'running PreScore plugin "{pl.name()}": {status.as_error()}')
                return framework.as_status(err)
        return framework.Status()

    # --- Score ------------------------------------------------------------------------------

    def has_score_plugins(self) -> bool:
        return bool(self.score_plugins)

    def run_score_plugins(
        self,
        state: CycleState,
        pod: V1Pod,
        nodes: list[V1Node],
    ) -> tuple[dict[str, list[framework.NodeScore]], framework.Status]:
        """Each Score plugin's final score for each node, in three phases (upstream:
        RunScorePlugins):

        1. every plugin scores every node;
        2. each plugin with ScoreExtensions normalizes its own scores;
        3. each score must be within MIN_NODE_SCORE..MAX_NODE_SCORE, and is multiplied by the
           plugin's weight.

        Any failure ends the cycle with an ERROR status. Simplified: upstream runs phase 1 in
        parallel over nodes and phases 2 and 3 in parallel over plugins.
        """
        plugin_to_node_scores: dict[str, list[framework.NodeScore]] = {}
        for pl in self.score_plugins:
            scores = []
            for node in nodes:
                name = node.metadata.name
                score, status = pl.score(state, pod, name)
                if not status.is_success():
                    err = Exception(f'plugin "{pl.name()}" failed with: {status.as_error()}')
                    return {}, framework.as_status(Exception(f"running Score plugins: {err}"))
                scores.append(framework.NodeScore(name, score))
            plugin_to_node_scores[pl.name()] = scores

        for pl in self.score_plugins:
            extensions = pl.score_extensions()
            if extensions is None:
                continue
            status = extensions.normalize_score(state, pod, plugin_to_node_scores[pl.name()])
            if not status.is_success():
                err = Exception(f'plugin "{pl.name()}" failed with: {status.as_error()}')
                return {}, framework.as_status(
                    Exception(f"running Normalize on Score plugins: {err}")
                )

        low, high = framework.MIN_NODE_SCORE, framework.MAX_NODE_SCORE
        for pl in self.score_plugins:
            weight = self.score_plugin_weight[pl.name()]
            for node_score in plugin_to_node_scores[pl.name()]:
                if not low <= node_score.score <= high:
                    err = Exception(
                        f'plugin "{pl.name()}" returns an invalid score {node_score.score}, it '
                        f"should in the range of [{low}, {high}] after normalizing"
                    )
                    return {}, framework.as_status(
                        Exception(f"applying score defaultWeights on Score plugins: {err}")
                    )
                node_score.score *= weight
        return plugin_to_node_scores, framework.Status()

    # --- Reserve ----------------------------------------------------------------------------

    def run_reserve_plugins_reserve(
        self,
        state: CycleState,
        pod: V1Pod,
        node_name: str,
    ) -> framework.Status:
        """Run Reserve in order; the first failure is an ERROR status (upstream:
        RunReservePluginsReserve). The caller then runs Unreserve for every plugin, including
        the ones whose Reserve never ran."""
        for pl in self.reserve_plugins:
            status = pl.reserve(state, pod, node_name)
            if not status.is_success():
                err = status.as_error()
                log.error(
                    'Failed running Reserve plugin plugin="%s" pod="%s": %s',
                    pl.name(),
                    meta_namespace_key(pod),
                    err,
                )
                return framework.as_status(
                    Exception(f'running Reserve plugin "{pl.name()}": {err}')
                )
        return framework.Status()

    def run_reserve_plugins_unreserve(
        self,
        state: CycleState,
        pod: V1Pod,
        node_name: str,
    ) -> None:
        """Run Unreserve in the reverse order of Reserve (upstream: RunReservePluginsUnreserve):
        what was taken last is given back first."""
        for pl in reversed(self.reserve_plugins):
            pl.unreserve(state, pod, node_name)

    # --- Permit -----------------------------------------------------------------------------

    def run_permit_plugins(
        self,
        state: CycleState,
        pod: V1Pod,
        node_name: str,
    ) -> framework.Status:
        """Run the Permit plugins in order (upstream: RunPermitPlugins).

        - A rejection (Unschedulable*) ends it at once, naming the plugin.
        - Any other failure is an ERROR status.
        - When at least one plugin says Wait and none rejects, the result is a WAIT status and
          the pod waits (see ``wait_on_permit``) for at most each plugin's timeout, itself at
          most MAX_TIMEOUT.

        Differs from upstream: the waiting pod is registered *before* the plugins run, and its
        timeouts are armed after they have all run. A plugin may then allow the pod from a
        timer it arms in Permit, even one that fires before Permit returns. The Go original's
        NodeNumber does just that through GetWaitingPod, and crashes on node0 (a 0 s timer)
        when the timer wins the race against the registration.
        """
        key = meta_namespace_key(pod)
        uid = pod.metadata.uid
        waiting_pod = WaitingPod(pod, self.clock)
        self.waiting_pods.add(waiting_pod)
        plugins_wait_time: dict[str, float] = {}
        for pl in self.permit_plugins:
            status, timeout = pl.permit(state, pod, node_name)
            if status.is_success():
                continue
            if status.is_unschedulable():
                log.info(
                    'Pod rejected by permit plugin pod="%s" plugin="%s" status="%s"',
                    key,
                    pl.name(),
                    status.message(),
                )
                self.waiting_pods.remove(uid)
                return status.with_failed_plugin(pl.name())
            if status.code == framework.Code.WAIT:
                # Not allowed to be greater than MAX_TIMEOUT.
                plugins_wait_time[pl.name()] = min(timeout, MAX_TIMEOUT)
                continue
            self.waiting_pods.remove(uid)
            err = Exception(f'running Permit plugin "{pl.name()}": {status.as_error()}')
            log.error('Failed running Permit plugin plugin="%s" pod="%s": %s', pl.name(), key, err)
            return framework.as_status(err).with_failed_plugin(pl.name())

        if not plugins_wait_time:
            self.waiting_pods.remove(uid)
            return framework.Status()
        waiting_pod.start(plugins_wait_time)
        # Upstream logs this and "Pod waiting on permit" at V(4): here at -vv.
        log.debug('One or more plugins asked to wait and no plugin rejected pod pod="%s"', key)
        msg = f'one or more plugins asked to wait and no plugin rejected pod "{pod.metadata.name}"'
        return framework.Status(framework.Code.WAIT, [msg])

    def wait_on_permit(self, pod: V1Pod) -> framework.Status:
        """Block until the pod is allowed or rejected; Success at once if it is not waiting
        (upstream: WaitOnPermit). Runs in the binding cycle's thread."""
        key = meta_namespace_key(pod)
        uid = pod.metadata.uid
        waiting_pod = self.waiting_pods.get(uid)
        if waiting_pod is None:
            return framework.Status()
        try:
            log.debug('Pod waiting on permit pod="%s"', key)
            status = waiting_pod.get_signal()
        finally:
            self.waiting_pods.remove(uid)
        if status.is_success():
            return framework.Status()
        if status.is_unschedulable():
            log.info(
                'Pod rejected while waiting on permit pod="%s" status="%s"', key, status.message()
            )
            return status
        err = Exception(f"waiting on permit for pod: {status.as_error()}")
        log.error('Failed waiting on permit for pod pod="%s": %s', key, err)
        return framework.as_status(err).with_failed_plugin(status.failed_plugin)

    # --- PreBind, Bind, PostBind -------------------------------------------------------------

    def run_pre_bind_plugins(
        self,
        state: CycleState,
        pod: V1Pod,
        node_name: str,
    ) -> framework.Status:
        """Run PreBind in order; the first failure is an ERROR status (upstream:
        RunPreBindPlugins)."""
        for pl in self.pre_bind_plugins:
            status = pl.pre_bind(state, pod, node_name)
            if not status.is_success():
                err = status.as_error()
                log.error(
                    'Failed running PreBind plugin plugin="%s" pod="%s": %s',
                    pl.name(),
                    meta_namespace_key(pod),
                    err,
                )
                return framework.as_status(
                    Exception(f'running PreBind plugin "{pl.name()}": {err}')
                )
        return framework.Status()

    def run_bind_plugins(
        self,
        state: CycleState,
        pod: V1Pod,
        node_name: str,
    ) -> framework.Status:
        """Offer the pod to each Bind plugin in order until one does not Skip (upstream:
        RunBindPlugins). Its Success is the result, its failure an ERROR status; Skip when
        there is no Bind plugin or every one skipped."""
        status = framework.Status(framework.Code.SKIP)
        for pl in self.bind_plugins:
            status = pl.bind(state, pod, node_name)
            if status.code == framework.Code.SKIP:
                continue
            if not status.is_success():
                err = status.as_error()
                # Differs from upstream (an error line): a pod deleted before its binding
                # (NotFound) is no error of the scheduler's; binding_cycle logs it at info.
                if not framework.is_not_found(err):
                    log.error(
                        'Failed running Bind plugin plugin="%s" pod="%s": %s',
                        pl.name(),
                        meta_namespace_key(pod),
                        err,
                    )
                wrapped = Exception(f'running Bind plugin "{pl.name()}": {err}')
                wrapped.__cause__ = err
                return framework.as_status(wrapped)
            return status
        return status

    def run_post_bind_plugins(
        self,
        state: CycleState,
        pod: V1Pod,
        node_name: str,
    ) -> None:
        """Tell every PostBind plugin the pod is bound (upstream: RunPostBindPlugins)."""
        for pl in self.post_bind_plugins:
            pl.post_bind(state, pod, node_name)

    # --- Handle: the snapshot and the client -------------------------------------------------

    def snapshot_shared_lister(self) -> framework.SharedLister:
        if self.snapshot is None:
            raise ValueError("the framework was built without a snapshot")
        return self.snapshot

    def client_set(self) -> Any:
        return self.client

    def event_recorder(self) -> Any:
        return self._event_recorder() if self._event_recorder is not None else None

    def pod_lister(self) -> framework.PodLister:
        if self._pod_lister is None:
            raise ValueError("the framework was built without a pod lister")
        return self._pod_lister()

    # --- Handle: the PodNominator -----------------------------------------------------------

    def nominated_pods_for_node(self, node_name: str) -> list[V1Pod]:
        if self.pod_nominator is None:
            return []
        return self.pod_nominator.nominated_pods_for_node(node_name)

    # --- Handle: waiting pods ---------------------------------------------------------------

    def get_waiting_pod(self, uid: str) -> WaitingPod | None:
        return self.waiting_pods.get(uid)

    def iterate_over_waiting_pods(self, callback: Callable[[framework.WaitingPod], None]) -> None:
        self.waiting_pods.iterate(callback)

    def reject_waiting_pod(self, uid: str) -> bool:
        """Reject the pod if it is waiting; whether it was (upstream: RejectWaitingPod)."""
        waiting_pod = self.waiting_pods.get(uid)
        if waiting_pod is None:
            return False
        waiting_pod.reject("", "removed")
        return True


class PodNominator(Protocol):
    """Where the framework reads nominated pods from (upstream: PodNominator; the scheduling
    queue's nominator implements it)."""

    def nominated_pods_for_node(self, node_name: str) -> list[V1Pod]: ...


def add_nominated_pods(
    fh: Framework, pod: V1Pod, state: CycleState, node_info: framework.NodeInfo
) -> tuple[bool, CycleState, framework.NodeInfo]:
    """Whether any pod was added, and copies of the state and the NodeInfo with the pods
    nominated to the node, of ``pod``'s priority or higher, added (upstream: addNominatedPods).
    Without such pods, the state and NodeInfo themselves. Raises when an AddPod extension
    fails."""
    node = node_info.node()
    if node is None:
        return False, state, node_info
    nominated_pods = fh.nominated_pods_for_node(node.metadata.name)
    if not nominated_pods:
        return False, state, node_info
    node_info_out = node_info.clone()
    state_out = state.clone()
    pods_added = False
    priority = pod.spec.priority or 0  # a pod without one counts as 0 (corev1helpers)
    for p in nominated_pods:
        if (p.spec.priority or 0) >= priority and p.metadata.uid != pod.metadata.uid:
            node_info_out.add_pod(p)
            status = fh.run_pre_filter_extension_add_pod(state_out, pod, p, node_info_out)
            if not status.is_success():
                raise status.as_error() or Exception(status.message())
            pods_added = True
    return pods_added, state_out, node_info_out


# --- cluster events ----------------------------------------------------------------------------

# What a plugin without EnqueueExtensions is registered for: everything (upstream:
# allClusterEvents).
ALL_CLUSTER_EVENTS = [
    framework.ClusterEvent(framework.GVK.WILDCARD, framework.ActionType.ALL),
]


def fill_event_to_plugin_map(
    plugin: framework.Plugin, event_to_plugins: dict[framework.ClusterEvent, set[str]]
) -> None:
    """Register the plugin, under its own name, for the events it asks for (upstream:
    fillEventToPluginMap). A plugin that registers no event cannot be helped by any: the pods
    it rejects wait for the unschedulableQ timeout."""
    if not isinstance(plugin, framework.EnqueueExtensions):
        events = ALL_CLUSTER_EVENTS
    else:
        events = plugin.events_to_register()
        if not events:
            log.info('Plugin registers no cluster event plugin="%s"', plugin.name())
            return
    for event in events:
        event_to_plugins.setdefault(event, set()).add(plugin.name())
