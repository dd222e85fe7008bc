"""The plugins: a registry of factories, and the profile that enables them per extension point.

Upstream: pkg/scheduler/framework/plugins/registry.go (NewInTreeRegistry) and
pkg/scheduler/apis/config/v1beta3/default_plugins.go (getDefaultPlugins) at v1.23.
Simplified: one registry for every plugin (upstream merges out-of-tree plugins in with
WithFrameworkOutOfTreeRegistry) and one profile fixed in code (upstream reads profiles from the
KubeSchedulerConfiguration).
"""

from __future__ import annotations

from ..runtime import EnabledPlugin, Plugins, Registry
from . import (
    defaultbinder,
    flakybinder,
    nodenumber,
    noderesources,
    nodeunschedulable,
    prioritysort,
)


def new_registry() -> Registry:
    """Every plugin this scheduler knows, by name."""
    return {
        prioritysort.NAME: prioritysort.new,
        nodeunschedulable.NAME: nodeunschedulable.new,
        nodenumber.NAME: nodenumber.new,
        noderesources.NAME: noderesources.new_fit,
        flakybinder.NAME: flakybinder.new,
        defaultbinder.NAME: defaultbinder.new,
    }


def default_plugins() -> Plugins:
    """The plugins that run at each extension point, in order."""
    return Plugins(
        queue_sort=[
            EnabledPlugin(prioritysort.NAME),
        ],
        pre_filter=[
            EnabledPlugin(noderesources.NAME),
        ],
        filter=[
            EnabledPlugin(nodeunschedulable.NAME),
            EnabledPlugin(noderesources.NAME),
        ],
        pre_score=[
            EnabledPlugin(nodenumber.NAME),
        ],
        score=[
            EnabledPlugin(noderesources.NAME, weight=1),
            EnabledPlugin(nodenumber.NAME, weight=1),
        ],
        permit=[
            EnabledPlugin(nodenumber.NAME),
        ],
        bind=[
            EnabledPlugin(flakybinder.NAME),
            EnabledPlugin(defaultbinder.NAME),
        ],
    )
