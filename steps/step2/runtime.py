"""The framework: builds the profile's plugins and runs them at each extension point.

Upstream: pkg/scheduler/framework/runtime/framework.go (frameworkImpl, NewFramework and the
Run*Plugins functions) and runtime/registry.go (Registry) at v1.23; the profile's shape comes
from pkg/scheduler/apis/config/types.go (Plugins, Plugin).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from kubernetes.client import V1Node, V1Pod

from . import framework

log = logging.getLogger(__name__)

# Plugin name -> factory (upstream: Registry).
Registry = dict[str, framework.PluginFactory]


@dataclass(frozen=True)
class EnabledPlugin:
    """A plugin enabled at an extension point (upstream: config.Plugin)."""

    name: str


@dataclass
class Plugins:
    """The profile: the plugins enabled at each extension point, in the order they run
    (upstream: config.Plugins)."""

    filter: list[EnabledPlugin] = field(default_factory=list)


class Framework:
    """Runs the enabled plugins at each extension point (upstream: frameworkImpl).

    It is also the Handle the plugins are built with.
    Simplified: one profile, so one framework; upstream keeps one per schedulerName.
    """

    def __init__(
        self,
        registry: Registry,
        profile: Plugins,
    ) -> None:
        self.filter_plugins: list[framework.FilterPlugin] = []

        # Each extension point: the plugins the profile enables there, the list the framework
        # runs, and the interface a plugin must implement to be used there.
        extension_points: list[tuple[list[EnabledPlugin], list[Any], type]] = [
            (profile.filter, self.filter_plugins, framework.FilterPlugin),
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
            status = pl.filter(pod, node)
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
