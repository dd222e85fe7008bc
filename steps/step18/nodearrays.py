"""The snapshot's nodes as columns: what Filter and Score read, laid out for one pass over all
nodes at once.

No upstream counterpart: kube-scheduler keeps one NodeInfo per node and runs each plugin on
each node, on 16 goroutines (``parallelize.Until``). In Python a call per plugin and node costs
more than the work it does; a column per resource lets numpy do that work for every node in
one call. The NodeInfos stay what the cycle reads; these columns are a copy of the numbers in
them, kept in the snapshot's node order and refreshed with it (``Snapshot.node_arrays``).

A plugin that can decide for every node at once offers ``filter_nodes`` and ``score_nodes``
(see ``runtime.Framework.run_filter_plugins_batch``); what depends on a node's taints, which
most nodes share, it works out once per distinct set of taints (``taint_groups``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from kubernetes.client import V1Node

from .framework import NodeInfo

# The resources a NodeInfo counts (framework.Resource), by the names scorers weigh them with.
RESOURCES = ("cpu", "memory", "ephemeral-storage")


def _taints_key(node: V1Node) -> tuple[tuple[Any, Any, Any], ...]:
    """What Filter and Score read of a node's taints: key, value and effect of each."""
    taints = node.spec.taints if node.spec else None
    return tuple((t.key, t.value, t.effect) for t in taints or ())


class FeasibleNodes(list[V1Node]):
    """The nodes that passed Filter, and their rows in the columns, so that Score reads the
    columns without looking each node up by its name."""

    def __init__(self, nodes: list[V1Node], rows: np.ndarray) -> None:
        super().__init__(nodes)
        self.rows = rows


class NodeArrays:
    """One row per node, in the order of the snapshot's ``node_info_list``."""

    def __init__(self) -> None:
        self.node_infos: list[NodeInfo] = []
        self.nodes: list[V1Node] = []
        self.names: list[str] = []
        self.index: dict[str, int] = {}
        # Per resource: what each node offers, what its pods request, and (cpu and memory)
        # what they request with the non-zero defaults that scoring counts.
        self.allocatable: dict[str, np.ndarray] = {}
        self.requested: dict[str, np.ndarray] = {}
        self.non_zero_requested: dict[str, np.ndarray] = {}
        self.allowed_pod_number = np.zeros(0, np.int64)
        self.num_pods = np.zeros(0, np.int64)
        self.unschedulable = np.zeros(0, bool)
        # Each node's set of taints as a number; a NodeInfo with each set, to ask a plugin once
        # for every node that has it.
        self.taints = np.zeros(0, np.intp)
        self.taint_groups: list[NodeInfo] = []
        self._taint_ids: dict[tuple[tuple[Any, Any, Any], ...], int] = {}

    def __len__(self) -> int:
        return len(self.names)

    def rebuild(self, node_infos: list[NodeInfo]) -> None:
        """Every row again: the snapshot's list changed (a node came or went)."""
        self.node_infos = list(node_infos)
        self.nodes = [ni.node() for ni in node_infos]  # type: ignore[misc]
        self.names = [node.metadata.name for node in self.nodes]
        self.index = {name: i for i, name in enumerate(self.names)}
        n = len(node_infos)
        for columns, names in (
            (self.allocatable, RESOURCES),
            (self.requested, RESOURCES),
            (self.non_zero_requested, RESOURCES[:2]),
        ):
            for name in names:
                columns[name] = np.zeros(n, np.int64)
        self.allowed_pod_number = np.zeros(n, np.int64)
        self.num_pods = np.zeros(n, np.int64)
        self.unschedulable = np.zeros(n, bool)
        self.taints = np.zeros(n, np.intp)
        for i, node_info in enumerate(node_infos):
            self._fill(i, node_info)

    def update(self, node_info: NodeInfo) -> None:
        """One node's row again: its NodeInfo changed (a pod assumed, added or removed; the
        Node updated)."""
        node = node_info.node()
        i = self.index.get(node.metadata.name) if node is not None else None
        if i is not None:
            self._fill(i, node_info)

    def _fill(self, i: int, node_info: NodeInfo) -> None:
        node = node_info.node()
        assert node is not None  # the snapshot's list holds no ghost
        self.nodes[i] = node
        allocatable, requested = node_info.allocatable, node_info.requested
        self.allocatable["cpu"][i] = allocatable.milli_cpu
        self.allocatable["memory"][i] = allocatable.memory
        self.allocatable["ephemeral-storage"][i] = allocatable.ephemeral_storage
        self.requested["cpu"][i] = requested.milli_cpu
        self.requested["memory"][i] = requested.memory
        self.requested["ephemeral-storage"][i] = requested.ephemeral_storage
        self.non_zero_requested["cpu"][i] = node_info.non_zero_requested.milli_cpu
        self.non_zero_requested["memory"][i] = node_info.non_zero_requested.memory
        self.allowed_pod_number[i] = allocatable.allowed_pod_number
        self.num_pods[i] = len(node_info.pods)
        self.unschedulable[i] = bool(node.spec and node.spec.unschedulable)
        key = _taints_key(node)
        group = self._taint_ids.get(key)
        if group is None:
            # A NodeInfo of its own (the snapshot's change in place): only its Node is read.
            group = self._taint_ids[key] = len(self.taint_groups)
            representative = NodeInfo()
            representative.set_node(node)
            self.taint_groups.append(representative)
        self.taints[i] = group

    def allocatable_request(
        self, rows: np.ndarray, pod_request: int, resource: str, use_requested: bool
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """``allocatable_request`` (plugins/noderesources.py) for the nodes at ``rows``: what
        each offers and what it would have requested with the pod; None for a resource no
        NodeInfo counts (an extended resource: every node offers 0)."""
        if resource not in self.allocatable:
            return None
        if use_requested or resource not in self.non_zero_requested:
            requested = self.requested[resource]
        else:
            requested = self.non_zero_requested[resource]
        return self.allocatable[resource][rows], requested[rows] + pod_request
