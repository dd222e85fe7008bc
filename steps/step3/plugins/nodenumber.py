"""NodeNumber: a pod prefers the node whose name ends in the same digit as its own.

A teaching plugin from the Go original (sanposhiho/mini-kube-scheduler), not an upstream one.
It is written the way upstream Score plugins are: Score gives each node a raw score and
NormalizeScore maps the scores onto 0..100 with the upstream helper
(pkg/scheduler/framework/plugins/helper: DefaultNormalizeScore). So pod8 scores 10 on node8
before normalization and 100 after it; every other node scores 0. The report shows scores
after normalization (and after the weight, 1).
"""

from __future__ import annotations

from typing import Any

from kubernetes.client import V1Pod

from ..framework import MAX_NODE_SCORE, Handle, NodeScore, Status
from .helper import default_normalize_score

NAME = "NodeNumber"

# The raw score of a node whose digit matches the pod's.
MATCH_SCORE = 10


class NodeNumber:
    """Scores MATCH_SCORE when the last characters of the pod's and the node's names are the
    same digit, else 0. A name that does not end in a digit scores 0; it is not an error."""

    def __init__(self, handle: Handle) -> None:
        self.handle = handle

    def name(self) -> str:
        return NAME

    # --- Score --------------------------------------------------------------------------------

    def score(
        self,
        pod: V1Pod,
        node_name: str,
    ) -> tuple[int, Status]:
        pod_number = last_digit(pod.metadata.name)
        if pod_number is None:
            return 0, Status()
        node_number = last_digit(node_name)
        if node_number is None:
            return 0, Status()
        return (MATCH_SCORE if pod_number == node_number else 0), Status()

    def score_extensions(self) -> NodeNumber:
        return self

    def normalize_score(
        self,
        pod: V1Pod,
        scores: list[NodeScore],
    ) -> Status:
        """The best node gets MAX_NODE_SCORE: a match scores 100, as upstream plugins do."""
        return default_normalize_score(MAX_NODE_SCORE, False, scores)


def new(args: Any, handle: Handle) -> NodeNumber:
    """The plugin factory (upstream style: New)."""
    return NodeNumber(handle)


def last_digit(name: str) -> int | None:
    """The last character of ``name`` as a digit, or None (only single digits count)."""
    return int(name[-1]) if name and name[-1] in "0123456789" else None
