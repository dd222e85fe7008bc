"""The snapshot: the cache's NodeInfos as they were when the scheduling cycle began.

Upstream: pkg/scheduler/internal/cache/snapshot.go (Snapshot, NewEmptySnapshot, NodeInfos,
List, Get, NumNodes) at v1.23.

``Cache.update_snapshot`` refreshes it at the start of every cycle, copying only the NodeInfos
that changed since; the cycle then reads nothing else, so a pod assumed or a node added
meanwhile (by a binding thread or an informer) cannot change the cycle's view half-way through.
Only the scheduling thread touches it: no lock.

The same numbers as columns, for Filter and Score over every node at once
(``node_arrays``, nodearrays.py), refreshed only for the nodes that changed.

Not implemented: the lists of nodes with (anti-)affinity pods and the set of PVCs in use, which
only InterPodAffinity and the volume plugins read.
"""

from __future__ import annotations

from .framework import NodeInfo
from .nodearrays import NodeArrays


class Snapshot:
    """Node name -> NodeInfo, and the same NodeInfos as a list in the cache's node order."""

    def __init__(self) -> None:
        self.node_info_map: dict[str, NodeInfo] = {}
        self.node_info_list: list[NodeInfo] = []
        # The newest NodeInfo generation copied in: later ones are what the next update copies.
        self.generation = 0
        # The nodes whose NodeInfo the cache copied in since the columns were last refreshed.
        self.changed: set[str] = set()
        self._arrays = NodeArrays()
        self._arrays_of: list[NodeInfo] | None = None  # the list the columns were built from

    # --- SharedLister: what plugins read through the framework handle -----------------------

    def node_infos(self) -> Snapshot:
        return self

    # --- NodeInfoLister ----------------------------------------------------------------------

    def list(self) -> list[NodeInfo]:
        return self.node_info_list

    def get(self, node_name: str) -> NodeInfo:
        """Raises for a node not in the snapshot (upstream: the same error)."""
        node_info = self.node_info_map.get(node_name)
        if node_info is None or node_info.node() is None:
            raise Exception(f'nodeinfo not found for node name "{node_name}"')
        return node_info

    def num_nodes(self) -> int:
        return len(self.node_info_list)

    def node_arrays(self) -> NodeArrays:
        """The nodes as columns, as of this cycle: every row again when the list is a new one
        (a node came or went), else the rows of the nodes that changed."""
        if self._arrays_of is not self.node_info_list:
            self._arrays.rebuild(self.node_info_list)
            self._arrays_of = self.node_info_list
        else:
            for name in self.changed:
                self._arrays.update(self.node_info_map[name])
        self.changed.clear()
        return self._arrays
