"""CycleState: scratch data the plugins share during one scheduling cycle of one pod.

A plugin computes something once (in PreFilter or PreScore) and writes it under its own key;
later extension points of the same cycle read it back. Every cycle starts with a new, empty
CycleState, so nothing leaks from one pod's attempt into the next.

Upstream: pkg/scheduler/framework/cycle_state.go (CycleState, StateData, StateKey,
ErrNotFound) at v1.23. Not implemented: recordPluginMetrics.
"""

from __future__ import annotations

import threading
from typing import Protocol

# The key a plugin stores its data under; by convention it starts with the extension point
# and ends with the plugin's name, e.g. "PreScoreNodeNumber" (upstream: StateKey).
StateKey = str


class StateData(Protocol):
    """What may be stored: anything that can copy itself (upstream: StateData)."""

    def clone(self) -> StateData: ...


class NotFoundError(KeyError):
    """``read`` of a key nobody wrote (upstream: ErrNotFound, "not found")."""

    def __init__(self) -> None:
        super().__init__("not found")

    def __str__(self) -> str:
        return "not found"


class CycleState:
    """A map from StateKey to StateData (upstream: CycleState).

    ``_lock`` makes writes, deletes and clones safe to call from several threads: upstream
    plugins may read and write from the goroutines that filter and score nodes in parallel.
    ``read`` takes no lock (see there); upstream's takes its read-write mutex's read lock.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._storage: dict[StateKey, StateData] = {}

    def read(self, key: StateKey) -> StateData:
        """The data under ``key``; raises NotFoundError if there is none.

        Without the lock: one dict look-up is atomic in CPython (the GIL), and writers replace
        a value whole, so a reader sees the old value or the new one. Every Score plugin reads
        its PreScore state once per node: the lock was a twentieth of a cycle."""
        try:
            return self._storage[key]
        except KeyError:
            raise NotFoundError() from None

    def write(self, key: StateKey, value: StateData) -> None:
        with self._lock:
            self._storage[key] = value

    def delete(self, key: StateKey) -> None:
        with self._lock:
            self._storage.pop(key, None)

    def clone(self) -> CycleState:
        """A copy whose values are the values' own clones (upstream: Clone). Preemption uses
        it upstream to try "what if" without touching the real cycle's state."""
        copy = CycleState()
        with self._lock:
            copy._storage = {k: v.clone() for k, v in self._storage.items()}
        return copy
