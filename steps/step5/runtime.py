"""The framework: builds the profile's plugins and runs them at each extension point.

Upstream: pkg/scheduler/framework/runtime/framework.go (frameworkImpl, NewFramework and the
Run*Plugins functions) and runtime/registry.go (Registry) at v1.23; the profile's shape comes
from pkg/scheduler/apis/config/types.go (Plugins, Plugin).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

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

    filter: list[EnabledPlugin] = field(default_factory=list)
    pre_score: list[EnabledPlugin] = field(default_factory=list)
    score: list[EnabledPlugin] = field(default_factory=list)
    permit: list[EnabledPlugin] = field(default_factory=list)


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
    ) -> None:
        self.clock = clock
        self.recorder = recorder or NullRecorder()
        self.waiting_pods = WaitingPodsMap()
        self.filter_plugins: list[framework.FilterPlugin] = []
        self.pre_score_plugins: list[framework.PreScorePlugin] = []
        self.score_plugins: list[framework.ScorePlugin] = []
        self.score_plugin_weight: dict[str, int] = {p.name: p.weight or 1 for p in profile.score}
        self.permit_plugins: list[framework.PermitPlugin] = []

        # Each extension point: the plugins the profile enables there, the list the framework
        # runs, and the interface a plugin must implement to be used there.
        extension_points: list[tuple[list[EnabledPlugin], list[Any], type]] = [
            (profile.filter, self.filter_plugins, framework.FilterPlugin),
            (profile.pre_score, self.pre_score_plugins, framework.PreScorePlugin),
            (profile.score, self.score_plugins, framework.ScorePlugin),
            (profile.permit, self.permit_plugins, framework.PermitPlugin),
        ]
        # Build each plugin once, even when it serves several extension points.
        instances: dict[str, framework.Plugin] = {}
        for enabled, plugins, kind in extension_points:
            for p in enabled:
                if p.name not in instances:
                    if p.name not in registry:
                        raise ValueError(f'plugin "{p.name}" does not exist')
                    instances[p.name] = registry[p.name](None, self)
                plugin = instances[p.name]
                if not isinstance(plugin, kind):
                    raise TypeError(f'plugin "{p.name}" does not extend {kind.__name__} plugin')
                plugins.append(plugin)

    # --- Filter -----------------------------------------------------------------------------

    def run_filter_plugins(
        self,
        state: CycleState,
        pod: V1Pod,
        node: V1Node,
    ) -> framework.PluginToStatus:
        """Run the Filter plugins in order for one node; stop at the first rejection.

        A plugin that returns anything but Success or Unschedulable* is an error: the result is
        that plugin's ERROR status alone, and the caller ends the cycle.

        Upstream: RunFilterPlugins with runAllFilters false (the default), so only the first
        failing plugin's reasons are kept for the node; the plugin order decides the message.
        """
        statuses = framework.PluginToStatus()
        for pl in self.filter_plugins:
            status = pl.filter(state, pod, node)
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
