"""FlakyBinder: refuses the first binding of a pod annotated ``minisched.io/flaky-bind``.

A teaching plugin, not an upstream one. It plays a binder that fails now and then (a webhook,
a storage system, a network that times out) so a scenario can show what the scheduler does
with a failed binding: Unreserve in reverse order, forget the assumed pod, re-queue it. Every
other pod, and the annotated pod's second try, it skips: the next Bind plugin, DefaultBinder,
binds them. Skip is how Bind plugins share the work (upstream: RunBindPlugins).
"""

from __future__ import annotations

import threading
from typing import Any

from kubernetes.client import V1Pod

from ..cycle_state import CycleState
from ..framework import Code, Handle, Status

NAME = "FlakyBinder"

ANNOTATION = "minisched.io/flaky-bind"


class FlakyBinder:
    """``_lock`` guards ``refused``: binding threads run concurrently."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # The UIDs of the annotated pods refused once and not yet tried again.
        self.refused: set[str] = set()

    def name(self) -> str:
        return NAME

    def bind(
        self,
        state: CycleState,
        pod: V1Pod,
        node_name: str,
    ) -> Status:
        if ANNOTATION not in (pod.metadata.annotations or {}):
            return Status(Code.SKIP)
        uid = pod.metadata.uid
        with self._lock:
            if uid in self.refused:
                self.refused.discard(uid)
                return Status(Code.SKIP)
            self.refused.add(uid)
        return Status(
            Code.ERROR, [f"{ANNOTATION}: refusing the first binding of {pod.metadata.name}"]
        )


def new(args: Any, handle: Handle) -> FlakyBinder:
    """The plugin factory (upstream style: New)."""
    return FlakyBinder()
