"""The framework: builds the profile's plugins and runs them at each extension point.

Upstream: pkg/scheduler/framework/runtime/framework.go (frameworkImpl, NewFramework,
expandMultiPointPlugins and the Run*Plugins functions) and runtime/registry.go (Registry) at
v1.23; the profile it builds is a KubeSchedulerProfile of the configuration (config.py).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np
from kubernetes.client import V1Node, V1Pod

from minisched.clock import Clock
from minisched.informer import meta_namespace_key
from minisched.recorder import NullRecorder, Recorder

from . import config, framework
from .config import KubeSchedulerProfile
from .cycle_state import CycleState
from .nodearrays import NodeArrays
from .waiting_pods import WaitingPod, WaitingPodsMap

log = logging.getLogger(__name__)

# The longest a Permit plugin may make a pod wait (upstream: maxTimeout, 15 minutes).
MAX_TIMEOUT = 15 * 60.0

# The most the weighted scores may add up to (upstream: MaxTotalScore, Go's math.MaxInt64).
MAX_TOTAL_SCORE = 2**63 - 1

# Plugin name -> factory (upstream: Registry).
Registry = dict[str, framework.PluginFactory]


# Each extension point: its field in the profile's Plugins, the framework's list of plugins
# there, and the interface a plugin must implement to run there, in upstream's order (the
# order errors are found in: upstream's getExtensionPoints).
EXTENSION_POINTS: list[tuple[str, str, type]] = [
    ("pre_filter", "pre_filter_plugins", framework.PreFilterPlugin),
    ("filter", "filter_plugins", framework.FilterPlugin),
    ("post_filter", "post_filter_plugins", framework.PostFilterPlugin),
    ("reserve", "reserve_plugins", framework.ReservePlugin),
    ("pre_score", "pre_score_plugins", framework.PreScorePlugin),
    ("score", "score_plugins", framework.ScorePlugin),
    ("pre_bind", "pre_bind_plugins", framework.PreBindPlugin),
    ("bind", "bind_plugins", framework.BindPlugin),
    ("post_bind", "post_bind_plugins", framework.PostBindPlugin),
    ("permit", "permit_plugins", framework.PermitPlugin),
    ("queue_sort", "queue_sort_plugins", framework.QueueSortPlugin),
]


class Framework:
    """Runs the enabled plugins at each extension point (upstream: frameworkImpl).

    It is also the Handle the plugins are built with. The scheduler builds one per profile.
    Raises ValueError, with upstream's words, for a profile it cannot build.
    """

    def __init__(
        self,
        registry: Registry,
        profile: KubeSchedulerProfile,
        clock: Clock,
        recorder: Recorder | None = None,
        *,
        client_set: Any = None,
        snapshot_shared_lister: framework.SharedLister | None = None,
        event_recorder: Callable[[], Any] | None = None,
        pod_lister: Callable[[], framework.PodLister] | None = None,
        pod_nominator: PodNominator | None = None,
        rng: random.Random | None = None,
        cluster_event_map: dict[framework.ClusterEvent, set[str]] | None = None,
        extenders: list[framework.Extender] | None = None,
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
        # only the pods such an event may help. Every profile's framework fills the same map
        # (upstream: the WithClusterEventMap option): there is one queue.
        self.cluster_event_map = cluster_event_map if cluster_event_map is not None else {}
        # The scheduler's extenders, for preemption to consult (upstream: the WithExtenders
        # option). The list is the scheduler's own, not a copy: every profile's framework sees
        # the same extenders, as upstream's share one slice.
        self._extenders: list[framework.Extender] = extenders if extenders is not None else []
        self.profile_name = profile.scheduler_name
        self.queue_sort_plugins: list[framework.QueueSortPlugin] = []
        self.pre_filter_plugins: list[framework.PreFilterPlugin] = []
        self.filter_plugins: list[framework.FilterPlugin] = []
        self.post_filter_plugins: list[framework.PostFilterPlugin] = []
        self.pre_score_plugins: list[framework.PreScorePlugin] = []
        self.score_plugins: list[framework.ScorePlugin] = []
        self.score_plugin_weight: dict[str, int] = {}
        self.reserve_plugins: list[framework.ReservePlugin] = []
        self.permit_plugins: list[framework.PermitPlugin] = []
        self.pre_bind_plugins: list[framework.PreBindPlugin] = []
        self.bind_plugins: list[framework.BindPlugin] = []
        self.post_bind_plugins: list[framework.PostBindPlugin] = []
        # Every plugin the profile built, by name, for close().
        self.plugins_map: dict[str, framework.Plugin] = {}
        if profile.plugins is None:
            return
        plugins = profile.plugins

        # The args of each plugin, from the profile's pluginConfig.
        plugin_config: dict[str, Any] = {}
        for pc in profile.plugin_config:
            if pc.name in plugin_config:
                raise ValueError(f"repeated config for plugin {pc.name}")
            plugin_config[pc.name] = pc.args

        # Build every plugin the profile names, once, even when it serves several extension
        # points (upstream: pluginsNeeded). A name the registry lacks is reported below, at
        # the first extension point that names it.
        needed = {
            p.name for point, _, _ in EXTENSION_POINTS for p in getattr(plugins, point).enabled
        }
        needed |= {p.name for p in plugins.multi_point.enabled}
        plugins_map: dict[str, framework.Plugin] = {}
        for name, factory in registry.items():
            if name not in needed:
                continue
            try:
                plugins_map[name] = factory(plugin_config.get(name), self)
            except Exception as e:
                raise ValueError(f'initializing plugin "{name}": {e}') from e
            fill_event_to_plugin_map(plugins_map[name], self.cluster_event_map)
        self.plugins_map = plugins_map

        # The plugins each extension point enables by name, in order (upstream:
        # updatePluginList); then the multiPoint plugins at every point they implement.
        for point, attribute, kind in EXTENSION_POINTS:
            update_plugin_list(getattr(self, attribute), getattr(plugins, point), kind, plugins_map)
        if plugins.multi_point.enabled:
            self.expand_multi_point_plugins(plugins, plugins_map)

        if len(self.queue_sort_plugins) != 1:
            raise ValueError(
                "one queue sort plugin required for profile with scheduler name "
                f'"{profile.scheduler_name}"'
            )
        # An explicit Score weight wins over the multiPoint one; 0 or none means 1.
        self.set_score_weights(plugins_map, [*plugins.score.enabled, *plugins.multi_point.enabled])
        for pl in self.score_plugins:
            if self.score_plugin_weight.get(pl.name(), 0) == 0:
                raise ValueError(f'score plugin "{pl.name()}" is not configured with weight')
        if not self.bind_plugins:
            raise ValueError("at least one bind plugin is needed")

    def close(self) -> None:
        """Stop what the plugins started (Coscheduling: its PodGroup informer). Not in
        upstream, where they run as long as the process; here tests start many schedulers."""
        for plugin in self.plugins_map.values():
            close = getattr(plugin, "close", None)
            if close is not None:
                close()

    def set_score_weights(
        self, plugins_map: dict[str, framework.Plugin], enabled: list[config.Plugin]
    ) -> None:
        """Each Score plugin's weight, the first given for it (upstream: getScoreWeights), and
        a check that the weighted scores cannot overflow Go's int64, as upstream's does."""
        total = 0
        for p in enabled:
            if not isinstance(plugins_map.get(p.name), framework.ScorePlugin):
                continue
            if p.name in self.score_plugin_weight:
                continue
            self.score_plugin_weight[p.name] = p.weight or 1
            weight = self.score_plugin_weight[p.name] * framework.MAX_NODE_SCORE
            if weight > MAX_TOTAL_SCORE - total:
                raise ValueError("total score of Score plugins could overflow")
            total += weight

    def expand_multi_point_plugins(
        self, plugins: config.Plugins, plugins_map: dict[str, framework.Plugin]
    ) -> None:
        """Add each multiPoint plugin at every extension point whose interface it implements
        (upstream: expandMultiPointPlugins).

        At each point the order is: the plugins named both there and in multiPoint (the
        point's entry wins: it is "re-configured"), then the other multiPoint plugins, then the
        point's own. A point that disables a plugin, or ``*``, keeps it out.
        """
        for point, attribute, kind in EXTENSION_POINTS:
            plugin_set: config.PluginSet = getattr(plugins, point)
            enabled = [p.name for p in plugin_set.enabled]
            disabled = {p.name for p in plugin_set.disabled}
            if "*" in disabled:
                continue
            overrides: list[str] = []
            multi_point: list[str] = []
            for p in plugins.multi_point.enabled:
                if p.name not in plugins_map:
                    raise ValueError(f'{kind.__name__} "{p.name}" does not exist')
                if not isinstance(plugins_map[p.name], kind) or p.name in disabled:
                    continue
                if p.name in enabled:
                    log.info(
                        'MultiPoint plugin is explicitly re-configured; overriding plugin="%s"',
                        p.name,
                    )
                    overrides.append(p.name)
                    continue
                if p.name in multi_point:
                    raise ValueError(f'plugin "{p.name}" already registered as "{kind.__name__}"')
                multi_point.append(p.name)
            ordered = [n for n in enabled if n in overrides]
            ordered += multi_point
            ordered += [n for n in enabled if n not in overrides]
            getattr(self, attribute)[:] = [plugins_map[n] for n in ordered]

    # --- QueueSort -------------------------------------------------------------------------

    def queue_sort_func(self) -> framework.LessFunc:
        """The order of activeQ: the QueueSort plugin's ``less`` (upstream: QueueSortFunc).
        Upstream's profile validation allows exactly one QueueSort plugin."""
        if not self.queue_sort_plugins:
            raise ValueError("no QueueSort plugin is registered in the framework")
        return self.queue_sort_plugins[0].less

    def queue_sort_key(self) -> Callable[[framework.QueuedPodInfo], Any] | None:
        """The QueueSort plugin's ``sort_key``, if it has one: a key that orders pods exactly
        as its ``less`` does, worked out once per pod instead of once per comparison."""
        return getattr(self.queue_sort_plugins[0], "sort_key", None)

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

    def run_filter_plugins_batch(
        self, state: CycleState, pod: V1Pod, nodes: NodeArrays, rows: np.ndarray
    ) -> np.ndarray | None:
        """Which of the nodes at ``rows`` pass every Filter plugin, decided for all of them at
        once: a mask, in the order of ``rows``. None when a plugin cannot decide so for this
        pod (it has no ``filter_nodes``, or its answer depends on what only its node-by-node
        Filter reads), or when pods are nominated: then Filter runs node by node, with them
        counted. Whether a plugin can answer depends on the pod only, never on the node.

        What a node that fails was rejected for is not in the mask: the caller asks
        run_filter_plugins_with_nominated_pods for those nodes, which says it in upstream's
        words.
        """
        if self.pod_nominator is not None and self.pod_nominator.has_nominated_pods():
            return None
        passed: np.ndarray | None = None
        for pl in self.filter_plugins:
            filter_nodes = getattr(pl, "filter_nodes", None)
            mask = filter_nodes(state, pod, nodes, rows) if filter_nodes is not None else None
            if mask is None:
                return None
            passed = mask if passed is None else passed & mask
        return passed if passed is not None else np.ones(len(rows), bool)

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
        # The hot loop (plugins x nodes): the names read once, the method and the class looked
        # up once per plugin, the status's code compared in place of a method call.
        names = [node.metadata.name for node in nodes]
        success, node_score = framework.Code.SUCCESS, framework.NodeScore
        for pl in self.score_plugins:
            score_fn = pl.score
            scores = []
            for name in names:
                score, status = score_fn(state, pod, name)
                if status.code != success:
                    err = Exception(f'plugin "{pl.name()}" failed with: {status.as_error()}')
                    return {}, framework.as_status(Exception(f"running Score plugins: {err}"))
                scores.append(node_score(name, score))
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

    def run_score_plugins_batch(
        self, state: CycleState, pod: V1Pod, nodes: NodeArrays, rows: np.ndarray
    ) -> tuple[dict[str, np.ndarray], framework.Status]:
        """run_score_plugins for the nodes at ``rows``, each plugin's scores an array: from its
        ``score_nodes`` where it has one and can answer, else from its Score node by node. The
        same three phases, the same errors."""
        # The nodes' names, made for the first plugin that scores or normalizes node by node.
        names: list[str] | None = None
        plugin_to_scores: dict[str, np.ndarray] = {}
        for pl in self.score_plugins:
            score_nodes = getattr(pl, "score_nodes", None)
            scores = score_nodes(state, pod, nodes, rows) if score_nodes is not None else None
            if scores is None:
                if names is None:
                    names = [nodes.names[i] for i in rows.tolist()]
                values = []
                for name in names:
                    score, status = pl.score(state, pod, name)
                    if not status.is_success():
                        err = Exception(f'plugin "{pl.name()}" failed with: {status.as_error()}')
                        return {}, framework.as_status(Exception(f"running Score plugins: {err}"))
                    values.append(score)
                scores = np.array(values, np.int64)
            plugin_to_scores[pl.name()] = scores

        for pl in self.score_plugins:
            extensions = pl.score_extensions()
            if extensions is None:
                continue
            normalize_scores = getattr(extensions, "normalize_scores", None)
            if normalize_scores is not None:
                plugin_to_scores[pl.name()] = normalize_scores(
                    state, pod, plugin_to_scores[pl.name()]
                )
                continue
            if names is None:
                names = [nodes.names[i] for i in rows.tolist()]
            node_scores = [
                framework.NodeScore(name, int(score))
                for name, score in zip(names, plugin_to_scores[pl.name()], strict=True)
            ]
            status = extensions.normalize_score(state, pod, node_scores)
            if not status.is_success():
                err = Exception(f'plugin "{pl.name()}" failed with: {status.as_error()}')
                return {}, framework.as_status(
                    Exception(f"running Normalize on Score plugins: {err}")
                )
            plugin_to_scores[pl.name()] = np.array([ns.score for ns in node_scores], np.int64)

        low, high = framework.MIN_NODE_SCORE, framework.MAX_NODE_SCORE
        for pl in self.score_plugins:
            scores = plugin_to_scores[pl.name()]
            out_of_range = np.flatnonzero((scores < low) | (scores > high))
            if out_of_range.size:
                err = Exception(
                    f'plugin "{pl.name()}" returns an invalid score {scores[out_of_range[0]]}, '
                    f"it should in the range of [{low}, {high}] after normalizing"
                )
                return {}, framework.as_status(
                    Exception(f"applying score defaultWeights on Score plugins: {err}")
                )
            plugin_to_scores[pl.name()] = scores * self.score_plugin_weight[pl.name()]
        return plugin_to_scores, framework.Status()

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
        if not self.permit_plugins:
            return framework.Status()  # nobody to ask: no waiting pod to register
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

    def extenders(self) -> list[framework.Extender]:
        """The scheduler's extenders, in the order they are called (upstream: Extenders)."""
        return self._extenders

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

    def has_nominated_pods(self) -> bool: ...


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


def update_plugin_list(
    plugins: list[Any],
    plugin_set: config.PluginSet,
    kind: type,
    plugins_map: dict[str, framework.Plugin],
) -> None:
    """Append the plugins the set enables, in order, checking each exists, implements the
    extension point's interface and is named once (upstream: updatePluginList)."""
    seen: set[str] = set()
    for p in plugin_set.enabled:
        plugin = plugins_map.get(p.name)
        if plugin is None:
            raise ValueError(f'{kind.__name__} "{p.name}" does not exist')
        if not isinstance(plugin, kind):
            raise ValueError(f'plugin "{p.name}" does not extend {kind.__name__} plugin')
        if p.name in seen:
            raise ValueError(f'plugin "{p.name}" already registered as "{kind.__name__}"')
        seen.add(p.name)
        plugins.append(plugin)


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
