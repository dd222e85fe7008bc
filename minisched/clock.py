"""Clock and FakeClock: every timer in a step goes through one of these.

Upstream counterpart: k8s.io/utils/clock (``clock.Clock``, ``clock.WithTicker``) and its
``testing.FakeClock``; ``time.AfterFunc`` and ``wait.Until`` from the Go standard library and
k8s.io/apimachinery/pkg/util/wait.

kube-scheduler reads time only through an injected clock, so its queue tests can say "advance
1 second" instead of sleeping. minisched does the same: backoff, permit timeouts and the flush
loops call ``now()``, ``after_func()`` and ``every()`` on the clock they were given. Tests pass a
``FakeClock`` and move it with ``advance()``; nothing in a test sleeps to wait for a timer.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable


class Timer:
    """A pending call, like the ``*time.Timer`` returned by ``time.AfterFunc``."""

    def __init__(self, clock: _TimerClock, due: float, fn: Callable[[], None], period: float):
        self._clock = clock
        self.due = due
        self.fn = fn
        self.period = period  # 0 for a one-shot timer, > 0 for every()
        self.stopped = False

    def stop(self) -> bool:
        """Cancel the timer. Returns True if it had not fired yet (as Go's Timer.Stop)."""
        return self._clock._cancel(self)


class _TimerClock:
    """The timer heap shared by Clock and FakeClock.

    ``_lock`` guards ``_heap`` and every timer's ``stopped`` flag; callbacks always run with the
    lock released, so a callback may arm or stop timers itself.
    """

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._heap: list[tuple[float, int, Timer]] = []
        self._seq = itertools.count()  # tie-breaker: timers due at once fire in arming order

    def now(self) -> float:
        raise NotImplementedError

    def after_func(self, delay: float, fn: Callable[[], None]) -> Timer:
        """Call ``fn`` once, ``delay`` seconds from now (Go: ``time.AfterFunc``)."""
        return self._arm(Timer(self, self.now() + max(delay, 0.0), fn, 0.0))

    def every(self, period: float, fn: Callable[[], None]) -> Timer:
        """Call ``fn`` every ``period`` seconds until the timer is stopped.

        Go: ``wait.Until(fn, period, stopCh)``; stopping the returned timer closes the loop.
        Unlike wait.Until the first call comes after one period, not at once.
        """
        if period <= 0:
            raise ValueError("period must be positive")
        return self._arm(Timer(self, self.now() + period, fn, period))

    def _arm(self, timer: Timer) -> Timer:
        with self._lock:
            heapq.heappush(self._heap, (timer.due, next(self._seq), timer))
            self._lock.notify_all()
        return timer

    def _cancel(self, timer: Timer) -> bool:
        with self._lock:
            was_pending = not timer.stopped
            timer.stopped = True
            self._lock.notify_all()
            return was_pending

    def _pop_due(self, now: float) -> tuple[float, Timer] | None:
        """Take the earliest live timer due by ``now``, with the time it was due for.

        A periodic timer is re-armed one period later. The caller holds the lock.
        """
        while self._heap:
            due, _, timer = self._heap[0]
            if timer.stopped:
                heapq.heappop(self._heap)
                continue
            if due > now:
                return None
            heapq.heappop(self._heap)
            if timer.period:
                timer.due = due + timer.period
                heapq.heappush(self._heap, (timer.due, next(self._seq), timer))
            else:
                timer.stopped = True
            return due, timer
        return None


class Clock(_TimerClock):
    """The real clock: monotonic time, timers fired by one daemon thread.

    Simplified: Go runs every AfterFunc callback in its own goroutine; here one thread runs them
    in order, so callbacks must be short (they are: allow a waiting pod, flush a queue).
    """

    def __init__(self) -> None:
        super().__init__()
        self._thread: threading.Thread | None = None

    def now(self) -> float:
        return time.monotonic()

    def _arm(self, timer: Timer) -> Timer:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="clock", daemon=True)
                self._thread.start()
        return super()._arm(timer)

    def _run(self) -> None:
        while True:
            with self._lock:
                popped = self._pop_due(self.now())
                if popped is None:
                    # _pop_due dropped stopped timers from the top: the top is the next one due.
                    next_due = self._heap[0][0] if self._heap else None
                    self._lock.wait(None if next_due is None else next_due - self.now())
                    continue
            popped[1].fn()


class FakeClock(_TimerClock):
    """A clock that moves only when a test calls ``advance()`` (k8s.io/utils/clock/testing).

    Timers fire inside ``advance()``, in the test's thread, in due order, each one seeing
    ``now()`` equal to its due time.
    """

    def __init__(self, start: float = 1000.0) -> None:
        super().__init__()
        self._now = start

    def now(self) -> float:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> None:
        """Move time forward by ``seconds``, firing every timer that falls due on the way."""
        with self._lock:
            end = self._now + seconds
        while True:
            with self._lock:
                popped = self._pop_due(end)
                if popped is None:
                    self._now = end
                    self._lock.notify_all()
                    return
                self._now = max(self._now, popped[0])
            popped[1].fn()

    def pending(self) -> int:
        """How many timers are armed and not stopped."""
        with self._lock:
            return self._armed()

    def wait_for_timers(self, count: int, timeout: float = 5.0) -> bool:
        """Block until at least ``count`` timers are armed: how a test knows that code running
        in another thread has reached its timer (a permit wait, say) before advancing."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while self._armed() < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._lock.wait(timeout=left)
            return True

    def _armed(self) -> int:
        return sum(1 for _, _, t in self._heap if not t.stopped)
