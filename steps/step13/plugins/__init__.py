"""The plugins: a registry of factories, and the profile that enables them per extension point.

Upstream: pkg/scheduler/framework/plugins/registry.go (NewInTreeRegistry) and
pkg/scheduler/apis/config/v1beta3/default_plugins.go (getDefaultPlugins) at v1.23.
The profile enables the plugins in the order v1.23's default profile expands them, with its
score weights: TaintToleration 3, NodeAffinity 2, NodeResourcesFit 1,
NodeResourcesBalancedAllocation 1 (the weights of v1beta3, the configuration v1.23 reads by
default). NodeNumber, the workshop's own plugin, scores with weight 1 and waits at Permit.
Simplified: one registry for every plugin (upstream merges out-of-tree plugins in with
WithFrameworkOutOfTreeRegistry) and one profile fixed in code (upstream reads profiles from the
KubeSchedulerConfiguration).
Not implemented: the default plugins no step has (NodeName, NodePorts, the volume plugins,
PodTopologySpread, InterPodAffinity, ImageLocality): a pod's hostPort, volumes, topology
spread constraints and pod (anti-)affinity are ignored, and no node is preferred for having
the pod's images.
"""

from __future__ import annotations

from ..runtime import EnabledPlugin, Plugins, Registry
from . import (
    defaultbinder,
    defaultpreemption,
    flakybinder,
    nodeaffinity,
    nodenumber,
    noderesources,
    nodeunschedulable,
    prioritysort,
    tainttoleration,
)


def new_registry() -> Registry:
    """Every plugin this scheduler knows, by name."""
    return {
        prioritysort.NAME: prioritysort.new,
        nodeunschedulable.NAME: nodeunschedulable.new,
        tainttoleration.NAME: tainttoleration.new,
        nodeaffinity.NAME: nodeaffinity.new,
        nodenumber.NAME: nodenumber.new,
        noderesources.NAME: noderesources.new_fit,
        noderesources.BALANCED_ALLOCATION_NAME: noderesources.new_balanced_allocation,
        defaultpreemption.NAME: defaultpreemption.new,
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
            EnabledPlugin(nodeaffinity.NAME),
            EnabledPlugin(noderesources.NAME),
        ],
        filter=[
            EnabledPlugin(nodeunschedulable.NAME),
            EnabledPlugin(tainttoleration.NAME),
            EnabledPlugin(nodeaffinity.NAME),
            EnabledPlugin(noderesources.NAME),
        ],
        post_filter=[
            EnabledPlugin(defaultpreemption.NAME),
        ],
        pre_score=[
            EnabledPlugin(tainttoleration.NAME),
            EnabledPlugin(nodeaffinity.NAME),
            EnabledPlugin(nodenumber.NAME),
        ],
        score=[
            EnabledPlugin(tainttoleration.NAME, weight=3),
            EnabledPlugin(nodeaffinity.NAME, weight=2),
            EnabledPlugin(noderesources.NAME, weight=1),
            EnabledPlugin(noderesources.BALANCED_ALLOCATION_NAME, weight=1),
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
