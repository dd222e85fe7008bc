"""The plugins: a registry of factories, every plugin a profile may name.

Upstream: pkg/scheduler/framework/plugins/registry.go (NewInTreeRegistry) at v1.23. Which of
them run, where and with what weight, is the configuration's: its defaults (config.py:
get_default_plugins, the v1.23 default profile) enable the upstream ones; NodeNumber and
FlakyBinder, the workshop's own, Coscheduling, scheduler-plugins' out-of-tree plugin, and wasm,
kube-scheduler-wasm-extension's host for WebAssembly guests, run only when a profile enables
them.
Simplified: one registry for every plugin (upstream merges out-of-tree plugins in with
WithFrameworkOutOfTreeRegistry).
"""

from __future__ import annotations

from ..runtime import Registry
from . import (
    coscheduling,
    defaultbinder,
    defaultpreemption,
    flakybinder,
    nodeaffinity,
    nodenumber,
    noderesources,
    nodeunschedulable,
    prioritysort,
    tainttoleration,
    wasm,
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
        coscheduling.NAME: coscheduling.new,
        wasm.NAME: wasm.new,
    }
