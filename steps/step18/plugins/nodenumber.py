"""NodeNumber: a pod prefers the node whose name ends in the same digit as its own.

A teaching plugin from the Go original (sanposhiho/mini-kube-scheduler), not an upstream one.
It is written the way upstream Score plugins are: Score gives each node a raw score and
NormalizeScore maps the scores onto 0..100 with the upstream helper
(pkg/scheduler/framework/plugins/helper: DefaultNormalizeScore). So pod8 scores 10 on node8
before normalization and 100 after it; every other node scores 0. The report shows scores
after normalization (and after the weight, 1).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubernetes.client import V1Node, V1Pod

from minisched.informer import meta_namespace_key

from ..cycle_state import CycleState, NotFoundError
from ..framework import (
    GVK,
    MAX_NODE_SCORE,
    ActionType,
    ClusterEvent,
    Code,
    Handle,
    NodeScore,
    Status,
    as_status,
)
from .helper import default_normalize_score

NAME = "NodeNumber"

# The raw score of a node whose digit matches the pod's.
MATCH_SCORE = 10

# How long Permit lets a pod wait before the wait times out, in seconds.
PERMIT_TIMEOUT = 10.0

# Where PreScore leaves the pod's digit for Score (upstream convention: extension point + name).
PRE_SCORE_STATE_KEY = "PreScore" + NAME


@dataclass(frozen=True)
class PreScoreState:
    """The pod's digit, computed once per cycle; None when its name does not end in one."""

    pod_suffix_number: int | None

    def clone(self) -> PreScoreState:
        return self  # immutable: sharing it is a copy


class NodeNumber:
    """Scores MATCH_SCORE when the last characters of the pod's and the node's names are the
    same digit, else 0. A name that does not end in a digit scores 0; it is not an error."""

    def __init__(self, handle: Handle) -> None:
        self.handle = handle

    def name(self) -> str:
        return NAME

    def events_to_register(self) -> list[ClusterEvent]:
        """A new node may be the one whose digit matches (the Go original's choice)."""
        return [
            ClusterEvent(GVK.NODE, ActionType.ADD),
        ]

    # --- PreScore -----------------------------------------------------------------------------

    def pre_score(
        self,
        state: CycleState,
        pod: V1Pod,
        nodes: list[V1Node],
    ) -> Status:
        """Parse the pod's digit once, for every node's Score.

        The state is written even when the name has no digit (as None), so Score can tell "no
        digit: score 0" from "PreScore did not run: error". The Go original wrote nothing for
        such pods, and their Score then failed. Upstream v1.23 has no Skip for PreScore (it
        came later), so writing the state is how an upstream plugin of that time does it.
        """
        data = PreScoreState(last_digit(pod.metadata.name))
        state.write(PRE_SCORE_STATE_KEY, data)
        key = meta_namespace_key(pod)
        self.handle.recorder.record(
            "prescore", pod=key, plugin=NAME, key=PRE_SCORE_STATE_KEY, data=data
        )
        return Status()

    # --- Score --------------------------------------------------------------------------------

    def score(
        self,
        state: CycleState,
        pod: V1Pod,
        node_name: str,
    ) -> tuple[int, Status]:
        try:
            data = state.read(PRE_SCORE_STATE_KEY)
        except NotFoundError as e:
            # PreScore did not run in this cycle: an error, as upstream plugins report it.
            return 0, as_status(
                Exception(f'failed to read "{PRE_SCORE_STATE_KEY}" from cycleState: {e}')
            )
        if not isinstance(data, PreScoreState):
            return 0, as_status(Exception(f"{data!r} convert to nodenumber.PreScoreState error"))
        pod_number = data.pod_suffix_number
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
        state: CycleState,
        pod: V1Pod,
        scores: list[NodeScore],
    ) -> Status:
        """The best node gets MAX_NODE_SCORE: a match scores 100, as upstream plugins do."""
        return default_normalize_score(MAX_NODE_SCORE, False, scores)

    # --- Permit -------------------------------------------------------------------------------

    def permit(
        self,
        state: CycleState,
        pod: V1Pod,
        node_name: str,
    ) -> tuple[Status, float]:
        """Hold the pod for as many seconds as the node's digit, then allow it; a node whose
        name does not end in a digit lets the pod go at once. The wait times out after
        PERMIT_TIMEOUT, longer than any digit."""
        node_number = last_digit(node_name)
        if node_number is None:
            return Status(), 0.0
        uid = pod.metadata.uid

        def allow() -> None:
            waiting_pod = self.handle.get_waiting_pod(uid)
            # None: another Permit plugin rejected the pod, so it never waited.
            if waiting_pod is not None:
                waiting_pod.allow(NAME)

        # The framework registered the pod before running Permit, so even node0's 0 s timer,
        # which may fire before this returns, finds it.
        self.handle.clock.after_func(node_number, allow)
        self.handle.recorder.record(
            "permit",
            pod=meta_namespace_key(pod),
            plugin=NAME,
            wait=node_number,
            timeout=PERMIT_TIMEOUT,
        )
        return Status(Code.WAIT), PERMIT_TIMEOUT


def new(args: Any, handle: Handle) -> NodeNumber:
    """The plugin factory (upstream style: New)."""
    return NodeNumber(handle)


def last_digit(name: str) -> int | None:
    """The last character of ``name`` as a digit, or None (only single digits count)."""
    return int(name[-1]) if name and name[-1] in "0123456789" else None
