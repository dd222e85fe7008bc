"""The snapshot: the cache's NodeInfos as they were when the scheduling cycle began.

Upstream: pkg/scheduler/internal/cache/snapshot.go (Snapshot, NewEmptySnapshot, NodeInfos,
List, Get, NumNodes) at v1.23.

``Cache.update_snapshot`` refreshes it at the start of every cycle, copying only the NodeInfos
that changed since; the cycle then reads nothing else, so a pod assumed or a node added
meanwhile (by a binding thread or an informer) cannot change the cycle's view half-way through.
Only the scheduling thread touches it: no lock.

Not implemented: the lists of nodes with (anti-)affinity pods and the set of PVCs in use, which
only InterPodAffinity and the volume plugins read.
"""

from __future__ import annotations

from .framework import NodeInfo


class Snapshot:
    """Node name -> NodeInfo, and the same NodeInfos as a list in the cache's node order."""

    def __init__(self) -> None:
        self.node_info_map: dict[str, NodeInfo] = {}
        self.node_info_list: list[NodeInfo] = []
        # The newest NodeInfo generation copied in: later ones are what the next update copies.
        self.generation = 0

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
