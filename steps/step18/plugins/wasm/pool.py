"""The pool of guest instances: which instance serves which pod's cycle.

Upstream (kube-scheduler-wasm-extension): scheduler/plugin/pool.go (guestPool).

A guest keeps state between calls: the Go SDK decodes the pod once per cycle and caches the
nodes it read, and its CycleState is a map inside the guest. So the instance that ran a pod's
PreFilter must also run its Filter and Score; and when the pod enters its binding cycle (which
runs in a thread of its own while the next pod is scheduled), that instance goes with it, and
the next scheduling cycle takes another one (from the free list, or a new one). The binding
cycle gives it back at its end (PostBind, or Unreserve on failure).

One lock guards the pool, and the scheduling guest is called under it: upstream's
DefaultPreemption calls Filter, AddPod and RemovePod from several goroutines at once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

G = TypeVar("G")


class GuestPool(Generic[G]):
    """Upstream: guestPool."""

    def __init__(self, new_guest: Callable[[], G]) -> None:
        # One instance now: a guest that cannot start fails the plugin's creation, not the
        # first cycle.
        first = new_guest()
        self.new_guest = new_guest
        self.lock = threading.Lock()
        # The pod being scheduled and its guest.
        self.scheduled_pod_uid = ""
        self.scheduled: G | None = None
        # The guests in binding cycles, by pod UID.
        self.binding: dict[str, G] = {}
        # The guests not in use.
        self.free: list[G] = [first]

    def do_with_guest(self, fn: Callable[[G], None]) -> None:
        """Run ``fn`` outside any cycle (EventsToRegister) (upstream: doWithGuest)."""
        with self.lock:
            self.scheduled_pod_uid = ""
            if self.scheduled is not None:  # prefer the last scheduled
                g, self.scheduled = self.scheduled, None
            elif self.free:
                g = self.free.pop(0)
            else:
                g = self.new_guest()
            try:
                fn(g)
            finally:
                self.free.append(g)

    def do_with_scheduling_guest(self, pod_uid: str, fn: Callable[[G], None]) -> None:
        """Run ``fn`` with the scheduling cycle's guest, under the lock (upstream:
        doWithSchedulingGuest).

        Scheduling cycles run one after another: whichever pod asks, the current scheduling
        guest serves it; a guest that caches per pod tells a new pod by its UID (the SDK
        resets its state in PreFilter, which the host always calls first). Raises when a new
        guest cannot be made.
        """
        with self.lock:
            self.scheduled_pod_uid = pod_uid
            if self.scheduled is None:
                # The previous one went to a binding cycle: take a free one, or make one.
                self.scheduled = self.free.pop(0) if self.free else self.new_guest()
            fn(self.scheduled)

    def get_for_binding(self, pod_uid: str) -> G:
        """The guest of the pod's binding cycle: the one it already has, or else the
        scheduling guest, which moves to the binding cycle so the pod need not be decoded
        again (upstream: getForBinding)."""
        with self.lock:
            g = self.binding.get(pod_uid)
            if g is not None:
                return g
            if self.scheduled is not None:
                g, self.scheduled = self.scheduled, None
                self.scheduled_pod_uid = ""
                self.binding[pod_uid] = g
                return g
            # A binding cycle always follows a scheduling cycle.
            raise RuntimeError("unexpected podUID")

    def free_from_binding(self, pod_uid: str) -> None:
        """Give the pod's binding guest back; called when the binding cycle ends, however
        (upstream: freeFromBinding)."""
        with self.lock:
            g = self.binding.pop(pod_uid, None)
            if g is not None:
                self.free.append(g)
