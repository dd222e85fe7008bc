"""Pods waiting at Permit, between the scheduling cycle and the binding cycle.

A pod waits until every Permit plugin that asked it to wait allows it, or one plugin rejects
it, or a plugin's timeout fires (a timeout is a rejection).

Upstream: pkg/scheduler/framework/runtime/waiting_pods_map.go (waitingPodsMap, waitingPod)
at v1.23.
"""

from __future__ import annotations

import functools
import queue
import threading
from collections.abc import Callable

from kubernetes.client import V1Pod

from minisched.clock import Clock, Timer

from .framework import Code, Status


class WaitingPodsMap:
    """The waiting pods by UID (upstream: waitingPodsMap).

    ``_lock`` guards ``_pods``: the scheduling thread adds pods, binding threads remove them,
    and plugins look them up from timers and other threads.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pods: dict[str, WaitingPod] = {}

    def add(self, wp: WaitingPod) -> None:
        with self._lock:
            self._pods[wp.get_pod().metadata.uid] = wp

    def remove(self, uid: str) -> None:
        with self._lock:
            self._pods.pop(uid, None)

    def get(self, uid: str) -> WaitingPod | None:
        with self._lock:
            return self._pods.get(uid)

    def iterate(self, callback: Callable[[WaitingPod], None]) -> None:
        """Call ``callback`` on each waiting pod. Simplified: on a snapshot, without the lock
        (upstream holds its read lock), so a callback may add or remove pods."""
        with self._lock:
            pods = list(self._pods.values())
        for wp in pods:
            callback(wp)


class WaitingPod:
    """One pod held at Permit (upstream: waitingPod).

    ``_lock`` guards ``_pending_plugins``, ``_allowed_early`` and ``_started``.

    Differs from upstream: the framework registers the pod *before* the Permit plugins run and
    arms the timeouts with ``start()`` once they have all run, so a plugin may allow the pod
    from a timer that fires before its Permit has even returned. Such an early allow is
    remembered in ``_allowed_early`` instead of being lost.
    """

    def __init__(self, pod: V1Pod, clock: Clock) -> None:
        self._pod = pod
        self._clock = clock
        self._lock = threading.Lock()
        self._pending_plugins: dict[str, Timer] = {}
        self._allowed_early: set[str] = set()
        self._started = False
        # allow and reject never block: the signal holds one status and a second one is
        # dropped, as Go's non-blocking send on a channel with a buffer of 1.
        self._signal: queue.Queue[Status] = queue.Queue(maxsize=1)

    def start(self, plugins_max_wait_time: dict[str, float]) -> None:
        """Arm one timeout per waiting plugin (upstream: newWaitingPod).

        The lock is held while arming, so a timer that fires at once waits until this is done.
        """
        with self._lock:
            self._started = True
            if not self._signal.empty():
                return  # rejected while the Permit plugins were running
            for plugin, wait in plugins_max_wait_time.items():
                if plugin in self._allowed_early:
                    continue
                on_timeout = functools.partial(self._timeout, plugin, wait)
                self._pending_plugins[plugin] = self._clock.after_func(wait, on_timeout)
            if not self._pending_plugins:
                self._send(Status())  # every plugin allowed before the wait began

    def _timeout(self, plugin: str, wait: float) -> None:
        self.reject(
            plugin, f"rejected due to timeout after waiting {go_duration(wait)} at plugin {plugin}"
        )

    def get_pod(self) -> V1Pod:
        return self._pod

    def get_pending_plugins(self) -> list[str]:
        """The plugins that have not allowed the pod yet."""
        with self._lock:
            return list(self._pending_plugins)

    def get_deadline(self) -> float:
        """When the wait times out, on the clock: the latest pending plugin's timeout.

        Differs from upstream: waitingPod has no such getter (its timers are private). This
        one only reads them, so the web page can show how long the pod may still wait.
        """
        with self._lock:
            return max((timer.due for timer in self._pending_plugins.values()), default=0.0)

    def allow(self, plugin: str) -> None:
        """``plugin`` lets the pod go; once no plugin is pending, the pod is signalled Success
        (upstream: Allow)."""
        with self._lock:
            if not self._started:
                self._allowed_early.add(plugin)
                return
            timer = self._pending_plugins.pop(plugin, None)
            if timer is not None:
                timer.stop()
            # Only signal success once every plugin has allowed.
            if self._pending_plugins:
                return
            self._send(Status())

    def reject(self, plugin: str, msg: str) -> None:
        """``plugin`` rejects the pod: stop every timer and signal Unschedulable (upstream:
        Reject)."""
        with self._lock:
            for timer in self._pending_plugins.values():
                timer.stop()
            self._send(Status(Code.UNSCHEDULABLE, [msg], failed_plugin=plugin))

    def get_signal(self) -> Status:
        """Block until the pod is allowed or rejected (upstream: receiving from ``s``)."""
        return self._signal.get()

    def _send(self, status: Status) -> None:
        try:
            self._signal.put_nowait(status)
        except queue.Full:
            pass


def go_duration(seconds: float) -> str:
    """A duration as Go's ``%v`` prints a time.Duration: 10s, 1.5s, 15m0s, 1h0m0s, 250ms."""
    if 0 < seconds < 1:
        return f"{seconds * 1000:g}ms"
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    text = f"{secs:.9f}".rstrip("0").rstrip(".") + "s"
    if hours:
        return f"{int(hours)}h{int(minutes)}m{text}"
    if minutes:
        return f"{int(minutes)}m{text}"
    return text
