"""The scheduling queue: pods waiting for a scheduling attempt.

Upstream: pkg/scheduler/internal/queue/scheduling_queue.go (SchedulingQueue, PriorityQueue).
Simplified: one FIFO guarded by a condition variable, as in the Go original's first stage.
kube-scheduler's three queues (activeQ, podBackoffQ, unschedulableQ) arrive later; until
then the report names this queue "FIFO".
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from kubernetes.client import V1Pod

from minisched.informer import meta_namespace_key
from minisched.recorder import Recorder


class SchedulingQueue:
    """A FIFO of pods. ``pop`` blocks until a pod arrives or the queue is closed.

    ``_lock`` guards ``_fifo`` and ``_closed``; ``pop`` waits on it, and every change
    that can end that wait notifies it.
    """

    def __init__(self, recorder: Recorder) -> None:
        self._lock = threading.Condition()
        # Keyed by namespace/name, in arrival order: an update keeps the pod's place.
        self._fifo: OrderedDict[str, V1Pod] = OrderedDict()
        self._closed = False
        self.recorder = recorder

    def add(self, pod: V1Pod) -> None:
        """A new pod to schedule (upstream: PriorityQueue.Add)."""
        key = meta_namespace_key(pod)
        with self._lock:
            self._fifo[key] = pod
            # Recorded before the scheduling thread can pop the pod: its lines come after.
            self.recorder.record("queue", pod=key, queue="FIFO", event="PodAdd")
            self._lock.notify()

    def update(self, old_pod: V1Pod, new_pod: V1Pod) -> None:
        """A queued pod changed: keep the newest version in its place, or queue it."""
        key = meta_namespace_key(new_pod)
        with self._lock:
            if key in self._fifo:
                self._fifo[key] = new_pod
                return
        self.add(new_pod)

    def delete(self, pod: V1Pod) -> None:
        """The pod is gone (or was bound): forget it."""
        key = meta_namespace_key(pod)
        with self._lock:
            queued = self._fifo.pop(key, None)
        if queued is not None:
            # Simplified: upstream records nothing when a pod leaves the queue; the report
            # needs it, or its table would show a deleted pod as queued.
            self.recorder.record("queue", pod=key, queue="none", event="PodDelete")

    def pop(self) -> V1Pod | None:
        """Wait for the next pod; None once the queue is closed and empty (upstream: an error).

        As upstream, a closed queue still hands out the pods it holds.
        """
        with self._lock:
            while not self._fifo:
                if self._closed:
                    return None
                self._lock.wait()
            _, pod = self._fifo.popitem(last=False)
            return pod

    def close(self) -> None:
        """Wake every waiting ``pop``; from now on an empty queue's ``pop`` returns None
        (upstream: Close)."""
        with self._lock:
            self._closed = True
            self._lock.notify_all()

    def pending_pods(self) -> list[V1Pod]:
        """Every queued pod (upstream: PendingPods), for the report and the tests."""
        with self._lock:
            return list(self._fifo.values())
